/**
 * `npx tsx bench/bus-cost.ts [ergo-jr|torso] [seconds] [--shadow]` (issue 46): what the bus process costs per sync
 * cycle. A `--backend=real` server (dist/main.js) on the bus emulator, unconfined; the bus process's CPU time
 * (/proc/<pid>/stat utime + stime) and its cycles (/metrics) over `seconds` with the robot idle, then over as long
 * with gotos every 1.2 s; its p99 lateness and its RSS and PSS, and the server's CPU beside it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { histogramPercentile, lateness } from './pi-budget.ts';
import { startEmulatorProcess, stop } from './real.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** utime + stime of a process, in seconds, and its RSS and PSS (MB). */
export function processCpu(pid: number): { cpuS: number; rssMb: number; pssMb: number } {
  const pss =
    Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? NaN) / 1024;
  // After the command's closing bracket: utime and stime are fields 14 and 15 (12 and 13 here), RSS field 24.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ');
  return {
    cpuS: (Number(fields[11]) + Number(fields[12])) / 100,
    rssMb: (Number(fields[21]) * 4096) / 2 ** 20,
    pssMb: pss,
  };
}

/** The PIDs of a process's children (every thread's). */
function childrenOf(pid: number): number[] {
  const tasks = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8');
  return tasks.split(' ').filter(Boolean).map(Number);
}

function cycles(metrics: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith('poppy_bus_loop_lateness_seconds_count'));
  return Number(line?.split(' ')[1] ?? NaN);
}

/** `node dist/main.js <args>` on a random port, once it says it listens. */
export async function startServer(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(process.execPath, ['dist/main.js', ...args, '--port', String(port)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      if (/listening on http/.test(out)) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out.slice(-2000)}`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

const SWING: Record<string, [string, number][]> = {
  'ergo-jr': [
    ['m1', 30],
    ['m2', -40],
    ['m1', -30],
    ['m2', 0],
  ],
  torso: [
    ['l_shoulder_y', -40],
    ['head_z', 30],
    ['l_shoulder_y', 0],
    ['head_z', 0],
  ],
};

async function measure(
  url: string,
  busPid: number,
  serverPid: number,
  seconds: number,
): Promise<{
  cycles: number;
  cpuS: number;
  rssMb: number;
  pssMb: number;
  p99LateMs: number;
  serverCpuS: number;
}> {
  const m0 = await (await fetch(`${url}/metrics`)).text();
  const [c0, s0] = [processCpu(busPid), processCpu(serverPid)];
  await sleep(seconds * 1000);
  const m1 = await (await fetch(`${url}/metrics`)).text();
  const [c1, s1] = [processCpu(busPid), processCpu(serverPid)];
  return {
    cycles: cycles(m1) - cycles(m0),
    cpuS: c1.cpuS - c0.cpuS,
    rssMb: c1.rssMb,
    pssMb: c1.pssMb,
    p99LateMs: histogramPercentile(lateness(m0), lateness(m1), 99) * 1000,
    serverCpuS: s1.cpuS - s0.cpuS,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const robot = args.find((a) => a === 'ergo-jr' || a === 'torso') ?? 'ergo-jr';
  const seconds = Number(args.find((a) => /^\d+$/.test(a)) ?? 30);
  const emulator = await startEmulatorProcess(robot);
  const server = await startServer([
    '--backend=real',
    `--robot=${robot}`,
    `--serial=${emulator.device}`,
    ...(args.includes('--shadow') ? ['--shadow'] : []),
  ]);
  try {
    const busPid = childrenOf(server.child.pid!)[0]!;
    await sleep(2000);
    const idle = await measure(server.url, busPid, server.child.pid!, seconds);
    let moving = true;
    const swinging = (async () => {
      for (let i = 0; moving; i++) {
        const [m, position] = SWING[robot]![i % 4]!;
        await fetch(`${server.url}/motors/${m}/goto.json`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ position, duration: 1 }),
        });
        await sleep(1200);
      }
    })();
    const gotos = await measure(server.url, busPid, server.child.pid!, seconds);
    moving = false;
    await swinging;
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    console.log(`bus process of ${robot}, ${seconds} s each, load ${load}`);
    for (const [name, r] of [
      ['idle', idle],
      ['gotos', gotos],
    ] as const)
      console.log(
        `  ${name.padEnd(5)} ${(r.cycles / seconds).toFixed(1)} Hz, ${((r.cpuS / seconds) * 100).toFixed(1)} % of a core, ` +
          `${((r.cpuS * 1000) / r.cycles).toFixed(3)} ms CPU a cycle, p99 late <= ${r.p99LateMs} ms, RSS ${r.rssMb.toFixed(0)} MB (PSS ${r.pssMb.toFixed(0)}); ` +
          `the server ${((r.serverCpuS / seconds) * 100).toFixed(1)} %`,
      );
  } finally {
    await stop(server.child);
    await stop(emulator.child);
  }
}
