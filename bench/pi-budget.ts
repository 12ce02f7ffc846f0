/**
 * `npm run bench -- pi-budget [ergo-jr|torso ...] [share ...] [camera] [calibrated]` (issue 46): a `--backend=real --shadow`
 * server on the bus emulator, every process of it (the server, the bus process, the twin on the server's thread,
 * ffmpeg with the camera) confined to the CPU share of one Raspberry Pi core by a cgroup's CPU quota (where no cgroup
 * is writable, or with BENCH_PI_FALLBACK=1: taskset and a SIGSTOP/SIGCONT duty cycle, bench/duty-cycle.ts); the emulator
 * (the servos) and the load (a 30 Hz web view on /stream/state, REST reads at a fixed rate) run outside it.
 * Prints the bus loop's rate and p99 lateness (GET /metrics), the twin's real-time factor (its clock over the wall's),
 * REST p99, and the RSS of each process of the group. `camera`: the Ergo Jr with `--camera=lavfi:testsrc` too, frames
 * pulled, for its memory (item 4). `calibrated`: calibrated shadow mode (calibratedRig). How the shares are chosen:
 * piShares() below and bench/README.md.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  rmSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DutyCycleThrottle, processTree } from './duty-cycle.ts';
import { startEmulatorProcess, stop } from './real.ts';
import { openViewers } from './ui.ts';
import { drawTrueParams } from '../src/calibration/truth.ts';
import { saveCalibration } from '../src/config/calibration.ts';
import { loadRobotConfig } from '../src/config/robot-config.ts';
import { serverNodeFlags } from '../src/core/memory.ts';
import { TWIN_PROBE_THREAD_NAME, TWIN_THREAD_NAME } from '../src/shadow/twin-engine.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Published single-thread figures, one tool on both boards: sysbench 1.0.20 `cpu` (primes to 10000), 64-bit
 * Raspberry Pi OS, events per second (leoncode.co.uk/articles/raspberry-pi-benchmarks): the Pi 3B+ 687, the Pi 4 1478.
 * sysbench's prime loop is mostly integer division, which flatters the Cortex cores against an x86 one (this
 * machine scores 1974 under load: a Pi 4 would be 0.75 of it, which no JavaScript or WebAssembly run bears out), so
 * it gives the ratio of the two Pis only. The Pi 4 against this machine is the issue's "a fifth" (Geekbench 5
 * single-core: a Pi 4 at 1.5 GHz scores about 250, a server core of this class about 1000-1200).
 */
export const PI_SYSBENCH = { pi3bPlus: 687, pi4: 1478 } as const;
/** The Pi 3B+'s RAM, the smallest board the budget is for (issue 46: "Memory for 1 GB"). */
const PI_RAM_BYTES = 2 ** 30;
export const PI4_OF_THIS_CORE = 0.2;

/** The CPU shares of one core that stand for one Pi 4 core and one Pi 3B+ core here. */
export function piShares(
  pi4OfThis = PI4_OF_THIS_CORE,
  sysbench: { pi3bPlus: number; pi4: number } = PI_SYSBENCH,
): { pi4: number; pi3bPlus: number } {
  return {
    pi4: pi4OfThis,
    pi3bPlus: Math.round(((pi4OfThis * sysbench.pi3bPlus) / sysbench.pi4) * 1000) / 1000,
  };
}

/** Where the CPU controller is: cgroup v2 (cpu.max in a unified hierarchy) or v1 (cpu.cfs_quota_us). */
export function cpuController(root = '/sys/fs/cgroup'): { version: 1 | 2; dir: string } | undefined {
  if (existsSync(path.join(root, 'cgroup.controllers'))) {
    const controllers = readFileSync(path.join(root, 'cgroup.controllers'), 'utf8');
    if (/\bcpu\b/.test(controllers)) return { version: 2, dir: root };
  }
  if (existsSync(path.join(root, 'cpu', 'cpu.cfs_quota_us')))
    return { version: 1, dir: path.join(root, 'cpu') };
  return undefined;
}

/**
 * The quota and period (us) for `share` of a core, and the real-time runtime (v1): the share is split in two halves,
 * the CFS quota and the real-time runtime the bus process's SCHED_FIFO draws on (it used about half of the group's
 * CPU when measured), so the group never gets more than `share` in all. Each half is the kernel's smallest quota
 * (1 ms), the period as short as that allows: a group that spent its quota waits out the rest of its period, and a
 * Pi core never stops for 80 ms as the kernel's default 100 ms period would stop it (a cycle is 20 ms at 50 Hz).
 * Stalls of up to period - quota remain (9 ms at 0.2, 20.5 ms at 0.093): the emulation's grain, not a Pi's.
 */
export function quotaFor(
  share: number,
  periodUs?: number,
  rtFraction = 0.5,
): { quotaUs: number; rtUs: number; periodUs: number } {
  if (!(share > 0 && share <= 1)) throw new Error(`a share of one core is in (0, 1]: ${share}`);
  if (!(rtFraction > 0 && rtFraction <= 0.5))
    throw new Error(`the real-time part is in (0, 0.5]: ${rtFraction}`);
  // The real-time part, the smaller, is at the 1 ms floor; the CFS quota the rest of the share.
  const period = periodUs ?? Math.min(1_000_000, Math.round(1000 / (share * rtFraction)));
  const rtUs = Math.max(1000, Math.round(share * period * rtFraction));
  return { quotaUs: Math.max(1000, Math.round(share * period) - rtUs), rtUs, periodUs: period };
}

/**
 * BENCH_PI_RT_FRACTION: the real-time part of the share (default a half). The bus process's own CPU fell to about a
 * quarter of the group's at 0.2 (decisions/0060), and a v1 group's CFS quota cannot use the real-time runtime left.
 */
const RT_FRACTION = Number(process.env.BENCH_PI_RT_FRACTION ?? 0.5);

/**
 * Makes (or reuses) the group `name` under the controller and caps it at `share` of one core. On v1 its cpu.shares
 * is raised too (v2: cpu.weight): a Pi's core is the robot's own, and other work on this machine must not take from
 * the group what its quota allows. Returns the group's folder (its cgroup.procs takes a PID).
 */
export function confine(
  ctl: { version: 1 | 2; dir: string },
  name: string,
  share: number,
  periodUs?: number,
): string {
  const dir = path.join(ctl.dir, name);
  mkdirSync(dir, { recursive: true });
  const { quotaUs, rtUs, periodUs: period } = quotaFor(share, periodUs, RT_FRACTION);
  if (ctl.version === 2) {
    // v2 has no real-time runtime per group: the whole share is the quota.
    writeFileSync(path.join(dir, 'cpu.max'), `${quotaUs + rtUs} ${period}`);
    writeFileSync(path.join(dir, 'cpu.weight'), '10000');
  } else {
    writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(period));
    writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(quotaUs));
    writeFileSync(path.join(dir, 'cpu.shares'), '262144');
    // The bus process asks for SCHED_FIFO, which the service grants (deploy/systemd); a v1 group without real-time
    // time refuses it, and it runs at nice -10 behind every real-time process on this machine (other sessions' bus
    // processes among them). Half the share is real-time time (quotaFor): the CPU the group used is printed.
    const rt = path.join(dir, 'cpu.rt_runtime_us');
    if (existsSync(rt)) {
      writeFileSync(path.join(dir, 'cpu.rt_period_us'), String(period));
      writeFileSync(rt, String(rtUs));
    }
  }
  return dir;
}

/**
 * The emulator's real-time time per second (us). The Torso's emulator takes 25-35 % of a core in bursts: at 300 ms a
 * second it ran out, stalled until the next second, and its servos answered 20-60 ms late (596 reply timeouts in 40 s
 * at a Pi 4's share, the bus loop's late cycles); at 650 ms none. What is left of the machine's 950 ms goes to the
 * groups under test (the bus process's real-time share).
 */
const EMULATOR_RT_US = 650_000;

/**
 * Moves this process into a group of its own with the same high weight and no quota: the emulator (the servos), the
 * web view and the REST client it starts stand for hardware and other machines, which the other sessions' load on
 * this machine must not make late either. Returns the group's folder.
 */
function outsideGroup(ctl: { version: 1 | 2; dir: string }): string {
  const dir = path.join(ctl.dir, `poppy-pi-rig-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  if (ctl.version === 2) writeFileSync(path.join(dir, 'cpu.weight'), '10000');
  else {
    writeFileSync(path.join(dir, 'cpu.shares'), '262144');
    // Real-time time for the emulator, which runs at SCHED_FIFO 30 (servos answer on time whatever the computer does).
    if (existsSync(path.join(dir, 'cpu.rt_runtime_us')))
      writeFileSync(path.join(dir, 'cpu.rt_runtime_us'), String(EMULATOR_RT_US));
  }
  writeFileSync(path.join(dir, 'cgroup.procs'), String(process.pid));
  return dir;
}

/** Prometheus text: the value of a series (its name with labels, as printed). */
function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  return line ? Number(line.slice(name.length + 1)) : NaN;
}

/** The lateness histogram's cumulative buckets (upper bound s -> count), and its count. */
export function lateness(text: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const m of text.matchAll(/^poppy_bus_loop_lateness_seconds_bucket\{[^}]*le="([^"]+)"[^}]*\} (\S+)$/gm))
    out.set(m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2]));
  return out;
}

/** The cycles between two scrapes in each lateness bucket (not cumulative), the empty ones left out. */
export function lateCounts(a: Map<number, number>, b: Map<number, number>): string {
  let below = 0;
  let bound = 0;
  const out: string[] = [];
  for (const le of [...b.keys()].sort((x, y) => x - y)) {
    const upTo = (b.get(le) ?? 0) - (a.get(le) ?? 0);
    if (upTo > below)
      out.push(`${le === Infinity ? `> ${bound * 1000} ms` : `<= ${le * 1000} ms`}: ${upTo - below}`);
    below = upTo;
    bound = le;
  }
  return out.join(', ');
}

/** The upper bound of the bucket that holds the p-th percentile of the cycles between two scrapes. */
export function histogramPercentile(a: Map<number, number>, b: Map<number, number>, p: number): number {
  const bounds = [...b.keys()].sort((x, y) => x - y);
  const total = (b.get(Infinity) ?? 0) - (a.get(Infinity) ?? 0);
  for (const le of bounds) if ((b.get(le) ?? 0) - (a.get(le) ?? 0) >= (p / 100) * total) return le;
  return Infinity;
}

/** The CPU time (s) thread `tid` of `pid` has used. */
function threadCpuS(pid: number, tid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** RSS and PSS (MB) of each process in the group, with its command line shortened. */
function groupRss(pids: readonly number[]): { pid: number; what: string; rssMb: number; pssMb: number }[] {
  const out = [];
  for (const pid of pids) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
      // PSS: the pages shared between processes (the node binary) counted once over them all.
      const rollup = existsSync(`/proc/${pid}/smaps_rollup`)
        ? readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8')
        : '';
      const pss = Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? NaN) / 1024;
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      const what = cmd[0]?.endsWith('ffmpeg')
        ? 'ffmpeg'
        : cmd[0]?.endsWith('gst-launch-1.0')
          ? 'gst-launch-1.0'
          : cmd.some((c) => c.includes('bus'))
            ? `bus process (${path.basename(cmd.at(-1) ?? '')})`
            : cmd.includes('dist/main.js')
              ? 'server (+ twin)'
              : cmd.slice(0, 2).join(' ');
      out.push({ pid, what, rssMb: rss, pssMb: pss });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * The group's resident memory with each physical page counted once (MB): the node binary's pages, which the server
 * and the bus process both map (38 MB of the bus process's 61 MB RSS), are in the board's RAM once, and a summed RSS
 * counts them twice. From /proc/<pid>/pagemap's frame numbers (root only: undefined without them).
 */
export function residentOnce(pids: readonly number[]): number | undefined {
  const frames = new Set<number>();
  const entry = Buffer.alloc(8 * 4096);
  for (const pid of pids) {
    let fd: number | undefined;
    try {
      const smaps = readFileSync(`/proc/${pid}/smaps`, 'utf8');
      fd = openSync(`/proc/${pid}/pagemap`, 'r');
      for (const m of smaps.matchAll(
        /^([0-9a-f]+)-([0-9a-f]+) [^\n]*\n(?:(?!Rss:)[^\n]*\n)*Rss:\s+(\d+)/gm,
      )) {
        if (m[3] === '0') continue;
        const end = parseInt(m[2]!, 16) / 4096;
        for (let page = parseInt(m[1]!, 16) / 4096; page < end; page += 4096) {
          const n = Math.min(4096, end - page);
          const got = readSync(fd, entry, 0, n * 8, page * 8) / 8;
          for (let i = 0; i < got; i++) {
            const hi = entry.readUInt32LE(i * 8 + 4);
            if (!(hi & 0x80000000)) continue; // not present
            const pfn = (hi & 0x7fffff) * 2 ** 32 + entry.readUInt32LE(i * 8);
            if (pfn === 0) return undefined; // frame numbers hidden (not root)
            frames.add(pfn);
          }
        }
      }
    } catch {
      // gone meanwhile, or no pagemap here
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }
  return frames.size ? (frames.size * 4096) / 2 ** 20 : undefined;
}

/** Throttled periods of the group so far, and the CPU time (s) its processes have used (/proc/<pid>/stat). */
function groupCpu(confined: Confinement): { throttled: number; usageS: number; perPid: Map<number, number> } {
  const throttled = confined.throttled();
  let ticks = 0;
  const perPid = new Map<number, number>();
  for (const pid of confined.pids()) {
    try {
      // After the command's closing bracket: state is field 3, utime and stime fields 14 and 15.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
        .replace(/^.*\) /s, '')
        .split(' ');
      const own = Number(fields[11]) + Number(fields[12]);
      perPid.set(Number(pid), own / 100);
      ticks += own;
    } catch {
      // gone meanwhile
    }
  }
  return { throttled, usageS: ticks / 100, perPid };
}

export interface BudgetRow {
  readonly robot: string;
  readonly share: number;
  readonly periodUs: number;
  /** How the share was imposed: a cgroup, or taskset and the duty cycle. */
  readonly how: string;
  readonly camera: boolean;
  /** Calibrated shadow mode (the `calibrated` argument): the fit's figures and bands in the twin. */
  readonly calibrated: boolean;
  readonly startS: number;
  readonly loopHz: number;
  readonly p99LateMs: number;
  /** The cycles between the scrapes per lateness bucket ("<= 2 ms: 700, <= 5 ms: 40, ..."). */
  readonly lateCounts: string;
  /** Bus transactions and motor replies timed out between the scrapes: a late emulator shows as timeouts. */
  readonly busTransactions: number;
  readonly busTimeouts: number;
  readonly twinRtf: number;
  readonly reanchored: number;
  readonly restP99Ms: number;
  readonly restRps: number;
  readonly viewerHz: number;
  readonly cpuShareUsed: number;
  readonly throttledShare: number;
  /** The hypervisor's steal over the window, share of this machine's CPU time: its other guests' (/proc/stat). */
  readonly stealShare: number;
  /** The twin's worker thread's CPU, share of a core (when it runs apart). */
  readonly twinThreadShare?: number;
  readonly rss: { pid: number; what: string; rssMb: number; pssMb: number; cpuShare: number }[];
  /** The group's resident memory, each page once (residentOnce). */
  readonly residentMb: number | undefined;
  readonly physicsLine: string;
  /** The server's line saying the twin's physics rate (src/shadow/physics-rate.ts). */
  readonly twinLine: string;
  /** The server's line saying its memory settings (src/core/memory.ts). */
  readonly memoryLine: string;
}

/** Seconds of CPU time the hypervisor has stolen from this machine since boot, all CPUs (/proc/stat's eighth field). */
function hostStealS(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  return Number(cpu[8] ?? 0) / 100;
}

/** Where the server runs confined: a cgroup, or where none is writable the duty cycle (bench/duty-cycle.ts). */
interface Confinement {
  /** Said in the report. */
  readonly how: string;
  readonly periodUs: number;
  /** Shell words before the server's command: they put it (and what it starts) in the confinement. */
  readonly prefix: string;
  /** Called with the server's PID once it runs. */
  started(pid: number): void;
  /** The twin's worker thread (TID) once moved apart, if it is (BENCH_PI_TWIN_THREAD=worker with APART). */
  twinThread?(): Promise<number | undefined>;
  pids(): number[];
  throttled(): number;
  close(): Promise<void>;
}

/**
 * BENCH_PI_APART=1 (v1): the bus process on a core of its own, as a Pi's four cores run it beside the server: once
 * it has started (with the real-time time it asks for), it moves to a second group whose real-time runtime and CFS
 * quota are each the whole share, and the server's group gets the whole share as its CFS quota.
 */
const APART = process.env.BENCH_PI_APART === '1';
/**
 * BENCH_PI_TWIN_THREAD=worker: the server with `--shadow-thread=worker` (what `auto` picks on a Pi's four cores); with
 * APART (v1) the twin's thread, found by its name, moves to a third group at the whole share: a Pi core of its own.
 */
const TWIN_THREAD = process.env.BENCH_PI_TWIN_THREAD === 'worker' ? 'worker' : 'main';
/**
 * With the twin's thread apart, the server's other threads (V8's GC and compiler workers, libuv's pool: 1.3 % of a
 * core beside the server thread's 5.5 % unconfined) move to a fourth group at the whole share, the Pi's fourth core,
 * where its kernel would run them; BENCH_PI_HELPERS=server leaves them in the server's group.
 */
const HELPERS_APART = process.env.BENCH_PI_HELPERS !== 'server';

/**
 * The period (us) of a group that has a whole share to itself (APART): the kernel's smallest quota (1 ms) over the
 * share, the finest grain a quota allows (10.75 ms at 0.093; a throttled group waits out the rest of it).
 */
const apartPeriodUs = (share: number): number => Math.round(1000 / share);

/** Group `dir` (made if missing) capped at `share` of a core at that grain, with the high weight (APART, v1). */
function wholeShareGroup(dir: string, share: number): string {
  mkdirSync(dir, { recursive: true });
  const period = apartPeriodUs(share);
  writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(period));
  writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(Math.max(1000, Math.round(share * period))));
  writeFileSync(path.join(dir, 'cpu.shares'), '262144');
  return dir;
}

/** The TIDs of server `pid`'s threads named `name` (none once it has gone). */
function threadsNamed(pid: number, name: string): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`)
      .filter((tid) => {
        try {
          return readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim() === name;
        } catch {
          return false;
        }
      })
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * Moves the twin's thread of server `pid` to a group of its own at `share` (APART, v1: `tasks` takes a TID), and the
 * start's step probe (a short-lived worker, TWIN_PROBE_THREAD_NAME) there too while it runs: on a Pi it times a step on
 * the core the twin will have, and the rate it chooses comes from that (src/shadow/physics-rate.ts). No `tid` when no
 * twin thread shows within 60 s.
 */
async function twinApart(
  ctl: { version: 1 | 2; dir: string },
  pid: number,
  share: number,
): Promise<{ dirs: string[]; tid?: number }> {
  const dir = wholeShareGroup(path.join(ctl.dir, `poppy-pi-twin-${process.pid}`), share);
  const moved = new Set<number>();
  const move = (tid: number) => {
    if (moved.has(tid)) return;
    try {
      writeFileSync(path.join(dir, 'tasks'), String(tid));
      moved.add(tid);
    } catch {
      // ended meanwhile
    }
  };
  let tid: number | undefined;
  for (let i = 0; i < 1200 && tid === undefined; i++) {
    threadsNamed(pid, TWIN_PROBE_THREAD_NAME).forEach(move);
    tid = threadsNamed(pid, TWIN_THREAD_NAME)[0];
    if (tid === undefined) await sleep(50);
  }
  if (tid === undefined) return { dirs: [dir] };
  move(tid);
  if (!HELPERS_APART) return { dirs: [dir], tid };
  // The server's other threads (V8's platform workers: its parallel GC and compilers; libuv's pool) on a fourth.
  const helpers = wholeShareGroup(path.join(ctl.dir, `poppy-pi-helpers-${process.pid}`), share);
  for (const other of readdirSync(`/proc/${pid}/task`).map(Number))
    if (other !== pid && other !== tid) writeFileSync(path.join(helpers, 'tasks'), String(other));
  return { dirs: [dir, helpers], tid };
}

/** The group's PIDs (cgroup.procs). */
const groupPids = (group: string): number[] =>
  readFileSync(path.join(group, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);

/** Moves the bus process out of `group` into a group of its own at `share` (APART): resolves once moved. */
async function busApart(
  ctl: { version: 1 | 2; dir: string },
  group: string,
  share: number,
): Promise<string | undefined> {
  for (let i = 0; i < 600; i++) {
    const bus = groupPids(group).find((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('bus-process');
      } catch {
        return false;
      }
    });
    if (bus !== undefined) {
      const dir = wholeShareGroup(path.join(ctl.dir, `poppy-pi-bus-${process.pid}`), share);
      // BENCH_PI_BUS_RT_PERIOD_US: a finer real-time grain (no 1 ms floor there); 2000 did not shorten the tail.
      const rtPeriod = Number(process.env.BENCH_PI_BUS_RT_PERIOD_US ?? apartPeriodUs(share));
      writeFileSync(path.join(dir, 'cpu.rt_period_us'), String(rtPeriod));
      writeFileSync(path.join(dir, 'cpu.rt_runtime_us'), String(Math.round(share * rtPeriod)));
      writeFileSync(path.join(dir, 'cgroup.procs'), String(bus));
      // The server's group, now without real-time time, at the same grain: its period was the split share's.
      wholeShareGroup(group, share);
      return dir;
    }
    await sleep(100);
  }
  return undefined;
}

function cgroupConfinement(
  ctl: { version: 1 | 2; dir: string },
  share: number,
  periodUs?: number,
): Confinement {
  const group = confine(ctl, `poppy-pi-budget-${process.pid}`, share, periodUs);
  const rig = outsideGroup(ctl);
  let apart: Promise<string | undefined> | undefined;
  const groups = async () => [group, ...((await apart) ? [(await apart)!] : [])];
  let busGroup: string | undefined;
  let twin: Promise<{ dirs: string[]; tid?: number }> | undefined;
  return {
    how:
      APART && ctl.version === 1
        ? `cgroup v1, the bus process apart at the same share` +
          (TWIN_THREAD === 'worker'
            ? `, the twin thread apart too${HELPERS_APART ? ", and the server's other threads" : ''}`
            : '')
        : `cgroup v${ctl.version}`,
    periodUs:
      APART && ctl.version === 1 ? apartPeriodUs(share) : quotaFor(share, periodUs, RT_FRACTION).periodUs,
    // The shell puts itself in the group, then becomes the server: every process it starts is in the group too.
    prefix: `echo $$ > '${group}/cgroup.procs' && exec`,
    started: (pid) => {
      if (!APART || ctl.version !== 1) return;
      apart = busApart(ctl, group, share);
      void apart.then((dir) => (busGroup = dir));
      if (TWIN_THREAD === 'worker') twin = twinApart(ctl, pid, share);
    },
    twinThread: async () => (await twin)?.tid,
    pids: () => [...groupPids(group), ...(busGroup ? groupPids(busGroup) : [])],
    throttled: () =>
      Number(/nr_throttled (\d+)/.exec(readFileSync(path.join(group, 'cpu.stat'), 'utf8'))?.[1] ?? NaN),
    async close() {
      // The groups go once their processes have (ffmpeg may outlive the server by a moment); this one leaves its own.
      writeFileSync(path.join(ctl.dir, 'cgroup.procs'), String(process.pid));
      const twinGroups = (await twin)?.dirs ?? [];
      for (const dir of [...(await groups()), ...twinGroups, rig])
        for (let i = 0; i < 50; i++) {
          try {
            rmdirSync(dir);
            break;
          } catch {
            await sleep(100);
          }
        }
    },
  };
}

/** The server on the last CPU (taskset), stopped and continued to run `share` of each period. */
function dutyCycleConfinement(share: number, periodUs?: number): Confinement {
  const period = quotaFor(share, periodUs, RT_FRACTION).periodUs;
  const cpu = os.cpus().length - 1;
  let server: number | undefined;
  let throttle: DutyCycleThrottle | undefined;
  const pids = () => (server === undefined ? [] : processTree(server));
  return {
    how: `taskset -c ${cpu} + SIGSTOP/SIGCONT`,
    periodUs: period,
    prefix: `exec taskset -c ${cpu}`,
    started(pid) {
      server = pid;
      throttle = new DutyCycleThrottle({
        share,
        periodMs: period / 1000,
        pids,
        signal: (p, sig) => process.kill(p, sig),
        sleep,
        now: () => performance.now(),
      });
    },
    pids,
    throttled: () => throttle?.stopped ?? 0,
    close: async () => throttle?.stop(),
  };
}

async function startConfinedServer(
  confined: Confinement,
  args: string[],
): Promise<{ child: ChildProcess; url: string; line: string; twinLine: string; memoryLine: string }> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  // Node's flags as the service's unit has them on a 1 GB Pi (src/core/memory.ts), the server told it is small.
  const cmd = [
    process.execPath,
    ...serverNodeFlags(PI_RAM_BYTES),
    'dist/main.js',
    ...args,
    '--memory=small',
    '--port',
    String(port),
  ]
    .map((a) => `'${a}'`)
    .join(' ');
  const child = spawn('sh', ['-c', `${confined.prefix} ${cmd}`], {
    cwd: ROOT,
    // As the service's unit sets it (deploy/systemd/poppy-twin.service); BENCH_PI_ARENAS tries another count.
    env: { ...process.env, MALLOC_ARENA_MAX: process.env.BENCH_PI_ARENAS ?? '2' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  confined.started(child.pid!);
  let out = '';
  const line = await new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /[^\n]*listening on http:\/\/[^\n]*/.exec(out);
      if (m) resolve(m[0]);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out.slice(-2000)}`)));
    setTimeout(() => reject(new Error(`no answer in 180 s: ${out.slice(-2000)}`)), 180_000).unref();
  });
  // A server that ends during the run says why: the figures after it would be of nothing.
  child.once('exit', (code, signal) => {
    if (!stopping.has(child))
      console.error(`server exited (${signal ?? code}) during the run: ${out.slice(-3000)}`);
  });
  // Its thread and its rate, each a line of the start's.
  const twinLine =
    [...out.matchAll(/shadow twin: physics[^"\n]*/g)].map((m) => m[0]).join('\n      ') ||
    'no shadow twin line';
  const memoryLine = /memory: [^"\n]*/.exec(out)?.[0] ?? 'no memory line';
  return { child, url: `http://127.0.0.1:${port}`, line, twinLine, memoryLine };
}

/** The servers the bench itself stops (their exit is not news). */
const stopping = new WeakSet<ChildProcess>();

async function get(url: string): Promise<string> {
  const res = await fetch(url);
  return res.text();
}

async function post(url: string, body: unknown): Promise<void> {
  await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** autocannon in its own process at `rate` requests/s over 2 connections: p99 (ms) and the rate served. */
async function restLoad(url: string, seconds: number, rate: number): Promise<{ p99: number; rps: number }> {
  const child = spawn(
    process.execPath,
    [
      path.join(ROOT, 'node_modules/autocannon/autocannon.js'),
      '-c',
      '2',
      '-d',
      String(seconds),
      '-R',
      String(rate),
      '--json',
      url,
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await once(child, 'exit');
  const r = JSON.parse(out) as { latency: { p99: number }; requests: { average: number }; errors: number };
  return { p99: r.latency.p99, rps: r.requests.average };
}

const MOTORS: Record<string, { all: string[]; swing: [string, number, number][] }> = {
  'ergo-jr': {
    all: ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'],
    swing: [
      ['m1', 30, 1],
      ['m2', -40, 1],
      ['m1', -30, 1],
      ['m2', 0, 1],
    ],
  },
  torso: {
    all: [],
    swing: [
      ['l_shoulder_y', -40, 1],
      ['head_z', 30, 1],
      ['l_shoulder_y', 0, 1],
      ['head_z', 0, 1],
    ],
  },
};

/**
 * Calibrated shadow mode: the emulator's servos drawn with seed 2 (src/calibration/truth.ts) and the server loading
 * the fit of those servos that the shadow tests use, so the twin runs the fitted figures and the bands from its fit.
 */
const CALIBRATION_SEED = 2;
const calibrationFixture = (robot: string) =>
  path.join(ROOT, `test/shadow/fixtures/${robot}-seed-${CALIBRATION_SEED}.calibration.json`);

async function calibratedRig(robot: string): Promise<{ emulator: string[]; server: string[]; dir?: string }> {
  const config = await loadRobotConfig(robot);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pi-budget-'));
  const truth = path.join(dir, 'servos.json');
  await saveCalibration(truth, drawTrueParams(config, CALIBRATION_SEED));
  return { emulator: ['--servo-params', truth], server: [`--calibration=${calibrationFixture(robot)}`], dir };
}

export async function runBudget(
  robot: string,
  share: number,
  seconds: number,
  camera: boolean,
  periodUs?: number,
  calibrated = false,
): Promise<BudgetRow> {
  const ctl = process.env.BENCH_PI_FALLBACK ? undefined : cpuController();
  let confined: Confinement;
  try {
    if (!ctl) throw new Error('no cgroup CPU controller');
    confined = cgroupConfinement(ctl, share, periodUs);
  } catch (err) {
    // Not writable (no root, a container) or absent: the duty cycle instead, said in the report.
    console.log(`      no cgroup to confine to (${(err as Error).message}): taskset + SIGSTOP/SIGCONT`);
    confined = dutyCycleConfinement(share, periodUs);
  }
  const rig: Awaited<ReturnType<typeof calibratedRig>> = calibrated
    ? await calibratedRig(robot)
    : { emulator: [], server: [] };
  const emulator = await startEmulatorProcess(robot, rig.emulator);
  // As the servos: ahead of the server's processes and of other sessions' real-time ones (best effort).
  spawnSync('chrt', ['-f', '-p', '30', String(emulator.child.pid)], { stdio: 'ignore' });
  const started = performance.now();
  let server: Awaited<ReturnType<typeof startConfinedServer>> | undefined;
  try {
    server = await startConfinedServer(confined, [
      '--backend=real',
      '--shadow',
      `--robot=${robot}`,
      `--serial=${emulator.device}`,
      ...rig.server,
      // BENCH_PI_CAMERA: another capture (`gst:videotestsrc is-live=true`, GStreamer's) than ffmpeg's test source.
      ...(camera ? [`--camera=${process.env.BENCH_PI_CAMERA ?? 'lavfi:testsrc'}`] : []),
      // BENCH_PI_TWIN_HZ: the twin at a set rate instead of the one chosen at start (--shadow-physics-hz).
      ...(process.env.BENCH_PI_TWIN_HZ ? [`--shadow-physics-hz=${process.env.BENCH_PI_TWIN_HZ}`] : []),
      `--shadow-thread=${TWIN_THREAD}`,
      // BENCH_PI_PHYSICS: the engine's code (--physics=lean|fast) instead of the one chosen at start.
      ...(process.env.BENCH_PI_PHYSICS ? [`--physics=${process.env.BENCH_PI_PHYSICS}`] : []),
    ]);
    const twinTid = await confined.twinThread?.();
    const twinCpu = () => (twinTid === undefined ? 0 : threadCpuS(server!.child.pid!, twinTid));
    const startS = (performance.now() - started) / 1000;
    const { url } = server;
    const motors = MOTORS[robot]!;
    const all = motors.all.length
      ? motors.all
      : (JSON.parse(await get(`${url}/motors/list.json`)) as { motors: string[] }).motors;
    for (const m of all) await post(`${url}/motors/${m}/registers/compliant/value.json`, false);
    // BENCH_PI_WARM_S: run this long before measuring, so that the figures are the steady state's and not the
    // compilers' warm-up (a Pi's server runs for hours; at a tenth of a core V8's tiers take tens of seconds).
    await sleep(2000);
    const warmS = Number(process.env.BENCH_PI_WARM_S ?? 0);
    // One viewer at 30 Hz on /stream/state in its own process.
    const viewer = await openViewers(url, 1, 30);
    let moving = true;
    const gotoFailures: string[] = [];
    const swinging = (async () => {
      for (let i = 0; moving; i++) {
        const [m, position, duration] = motors.swing[i % motors.swing.length]!;
        // A goto the server drops is reported at the end, not the bench's end (its groups would stay behind).
        await post(`${url}/motors/${m}/goto.json`, { position, duration }).catch((err: Error) => {
          gotoFailures.push(`${m}: ${err.message} (${String((err.cause as Error | undefined)?.message)})`);
        });
        await sleep(duration * 1000 + 200);
      }
    })();
    let frames = 0;
    const pulling = camera
      ? (async () => {
          while (moving) {
            const res = await fetch(`${url}/sensors/camera/frame.png`);
            await res.arrayBuffer();
            if (res.ok) frames++;
            await sleep(500);
          }
        })()
      : Promise.resolve();
    const restUrl = `${url}/motors/${all[0]!}/registers/present_position/value.json`;
    if (warmS > 0) {
      viewer.start();
      await restLoad(restUrl, warmS, 20);
    }
    const m0 = await get(`${url}/metrics`);
    const cpu0 = groupCpu(confined);
    const steal0 = hostStealS();
    const twin0 = twinCpu();
    const w0 = performance.now();
    viewer.start();
    const rest = await restLoad(restUrl, seconds, 20);
    const m1 = await get(`${url}/metrics`);
    const cpu1 = groupCpu(confined);
    const steal1 = hostStealS();
    const twin1 = twinCpu();
    const wall = (performance.now() - w0) / 1000;
    const [viewerFrames = 0] = await viewer.stop();
    const residentMb = residentOnce(confined.pids());
    const rss = groupRss(confined.pids()).map((p) => ({
      ...p,
      cpuShare: ((cpu1.perPid.get(p.pid) ?? 0) - (cpu0.perPid.get(p.pid) ?? 0)) / wall,
    }));
    moving = false;
    await swinging;
    await pulling;
    if (camera) console.log(`      camera frames pulled: ${frames}`);
    if (gotoFailures.length)
      console.log(`      gotos failed: ${gotoFailures.length}, the first ${gotoFailures[0]}`);
    // A counter's growth between the scrapes.
    const delta = (name: string) => metric(m1, name) - metric(m0, name);
    const cycles = delta('poppy_bus_loop_lateness_seconds_count');
    return {
      robot,
      share,
      periodUs: confined.periodUs,
      how: confined.how,
      camera,
      calibrated,
      startS,
      loopHz: cycles / wall,
      p99LateMs: histogramPercentile(lateness(m0), lateness(m1), 99) * 1000,
      lateCounts: lateCounts(lateness(m0), lateness(m1)),
      busTransactions: delta('poppy_bus_transactions_total'),
      busTimeouts: delta('poppy_bus_timeouts_total'),
      twinRtf: delta('poppy_shadow_twin_seconds') / wall,
      reanchored: delta('poppy_shadow_reanchored_total'),
      restP99Ms: rest.p99,
      restRps: rest.rps,
      viewerHz: viewerFrames / wall,
      cpuShareUsed: (cpu1.usageS - cpu0.usageS) / wall,
      twinThreadShare: twinTid === undefined ? undefined : (twin1 - twin0) / wall,
      throttledShare: (cpu1.throttled - cpu0.throttled) / ((wall * 1e6) / confined.periodUs),
      stealShare: (steal1 - steal0) / (wall * os.cpus().length),
      rss,
      residentMb,
      physicsLine: server.line.replace(/^.*"msg":"/, '').replace(/".*$/, ''),
      twinLine: server.twinLine,
      memoryLine: server.memoryLine,
    };
  } finally {
    if (server) {
      stopping.add(server.child);
      await stop(server.child);
    }
    await stop(emulator.child);
    if (rig.dir) rmSync(rig.dir, { recursive: true, force: true });
    await confined.close();
  }
}

export function printBudget(r: BudgetRow): void {
  const rssSum = r.rss.reduce((s, p) => s + p.rssMb, 0);
  const pssSum = r.rss.reduce((s, p) => s + p.pssMb, 0);
  const ok = (b: boolean) => (b ? 'ok  ' : 'MISS');
  console.log(
    `\n  ${r.robot}${r.camera ? ' + camera' : ''}, --shadow${r.calibrated ? ' --calibration' : ''}, ${(r.share * 100).toFixed(1)} % of one core (${r.how})`,
  );
  console.log(`      ${r.physicsLine}`);
  console.log(`      ${r.twinLine}`);
  console.log(`      ${r.memoryLine}`);
  console.log(`      start to first answer ${r.startS.toFixed(1)} s`);
  console.log(
    `      bus loop ${r.loopHz.toFixed(1)} Hz (${(r.loopHz / 50).toFixed(3)}x 50)  ${ok(r.loopHz >= 49.5)}`,
  );
  console.log(
    `      bus loop p99 lateness <= ${r.p99LateMs.toFixed(1)} ms (bucket bound; goal 5 ms)  ${ok(r.p99LateMs <= 5)}`,
  );
  console.log(`      bus loop cycles by lateness: ${r.lateCounts}`);
  console.log(`      bus transactions ${r.busTransactions}, replies timed out ${r.busTimeouts}`);
  console.log(
    `      twin RTF ${r.twinRtf.toFixed(3)} (goal 0.98), re-anchored ${r.reanchored}x  ${ok(r.twinRtf >= 0.98)}`,
  );
  console.log(
    `      REST p99 ${r.restP99Ms.toFixed(0)} ms at ${r.restRps.toFixed(1)} req/s (goal 50 ms)  ${ok(r.restP99Ms <= 50)}`,
  );
  console.log(`      web view ${r.viewerHz.toFixed(1)} frames/s of 30`);
  console.log(
    `      group CPU ${(r.cpuShareUsed * 100).toFixed(1)} % of a core; throttled in ${(r.throttledShare * 100).toFixed(0)} % of the periods`,
  );
  console.log(
    `      host steal ${(r.stealShare * 100).toFixed(1)} % of this machine's CPU time (the hypervisor's other guests)`,
  );
  if (r.twinThreadShare !== undefined)
    console.log(
      `      the twin's thread ${(r.twinThreadShare * 100).toFixed(1)} % of a core (in the server's CPU)`,
    );
  console.log(
    `      RSS ${rssSum.toFixed(0)} MB (PSS ${pssSum.toFixed(0)} MB; each page once ${r.residentMb?.toFixed(0) ?? '?'} MB): ${r.rss.map((p) => `${p.what} ${p.rssMb.toFixed(0)} MB (CPU ${(p.cpuShare * 100).toFixed(1)} %)`).join(', ')}`,
  );
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv.includes('pi-budget')) {
  const args = process.argv.slice(2);
  const robots = args.filter((a) => ['ergo-jr', 'torso'].includes(a));
  const shares = args.filter((a) => /^0?\.\d+$|^1$/.test(a)).map(Number);
  const seconds = Number(process.env.BENCH_PI_SECONDS ?? 20);
  const periodUs = process.env.BENCH_PI_PERIOD_US ? Number(process.env.BENCH_PI_PERIOD_US) : undefined;
  const s = piShares();
  console.log(
    `Pi budget: a Pi 4 core = ${s.pi4} of this machine's, a Pi 3B+ core = ${s.pi3bPlus} (sysbench ${PI_SYSBENCH.pi3bPlus}/${PI_SYSBENCH.pi4} of the Pi 4's); load ${readFileSync('/proc/loadavg', 'utf8').trim()}`,
  );
  // `camera` alone: the camera's run only. (A second run in one process may be refused its real-time runtime while
  // the kernel still counts the first run's group: run each in its own process when it says EINVAL.)
  if (robots.length || !args.includes('camera'))
    for (const robot of robots.length ? robots : ['ergo-jr', 'torso'])
      for (const share of shares.length ? shares : [s.pi3bPlus, s.pi4])
        printBudget(await runBudget(robot, share, seconds, false, periodUs, args.includes('calibrated')));
  if (args.includes('camera'))
    printBudget(
      await runBudget('ergo-jr', Number(process.env.BENCH_PI_CAMERA_SHARE ?? 0.5), seconds, true, periodUs),
    );
  const groups = existsSync('/sys/fs/cgroup/cpu') ? readdirSync('/sys/fs/cgroup/cpu') : [];
  for (const g of groups.filter((d) => d.startsWith(`poppy-pi-budget-${process.pid}`)))
    console.error(`left behind: ${g}`);
  process.exit(0);
}
