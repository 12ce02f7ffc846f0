/**
 * Crash safety of saved moves: the real server process records and saves moves over HTTP and is killed with SIGKILL
 * at random moments while saves are in flight, then restarted on the same records directory. Every move whose save
 * was answered must be intact (the same move, not a truncated or older one) and no partial file may be listed.
 *
 * CRASH_CYCLES (default 50) kill-and-restart cycles run on CRASH_LANES (default 2) independent servers at once;
 * CRASH_SPEED (default 1) is the servers' --speed.
 *
 * The server is the build of these sources (dist/main.js, what `npm start` runs), as scripts/build.js leaves it: its
 * start takes about a third of the CPU of a start through tsx, and the test starts it 50 times. It runs from a copy
 * taken under the build's lock, so that a rebuild by another test file (which empties dist/) cannot pull the files
 * from under a start.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { DIST, buildIfStale, withLock } from '../../scripts/build.js';
import { type Move, parseMoveFile } from '../../src/records/move.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CYCLES = Number(process.env.CRASH_CYCLES ?? 50);
const LANES = Number(process.env.CRASH_LANES ?? 2);
/**
 * Sim speed of the server processes. Saving does not depend on it; 'max' makes every start about 1 s slower (its
 * physics loop competes with the start-up I/O), which would double the test's time, so real time is the default.
 */
const SPEED = process.env.CRASH_SPEED ?? '1';
const NAMES = ['wave', 'nod', 'reach', 'point', 'spin', 'rest'];
/** Successive saves of one name cycle through these motor sets, so a file shows which save wrote it. */
const MOTOR_SETS = [['m1', 'm2'], ['m3'], ['m4', 'm5', 'm6']];
const verbose = process.env.RECORDS_VERBOSE === '1';

interface Saved {
  readonly version: number;
  readonly move: Move;
}

interface LaneState {
  readonly dir: string;
  /** Per name: the last save that was answered (as read from disk right after the answer). */
  readonly answered: Map<string, Saved>;
  /** Per name: the version of the next save. */
  readonly versions: Map<string, number>;
  /** Per name: the version of a save sent and not answered when the server died. */
  readonly inFlight: Map<string, number>;
  saves: number;
  killedInFlight: number;
  checked: number;
  startMs: number;
  verifyMs: number;
}

interface Server {
  readonly child: ChildProcess;
  readonly base: string;
  readonly exited: Promise<void>;
}

/**
 * A copy of the build: <copy>/dist/ beside links to the rest of the checkout, since the built server finds its
 * package (robots/, urdf/, the web view's files) one folder above its bundle (src/core/entry.ts). Under the
 * repository's tmp/ (git-ignored), so that the packages the bundle leaves to Node resolve from its node_modules.
 */
async function copyOfBuild(): Promise<string> {
  await buildIfStale();
  await fs.mkdir(path.join(ROOT, 'tmp'), { recursive: true });
  const copy = await fs.mkdtemp(path.join(ROOT, 'tmp', 'crash-server-'));
  await withLock(() => fs.cp(DIST, path.join(copy, 'dist'), { recursive: true }));
  for (const entry of await fs.readdir(ROOT))
    if (!['dist', 'dist.lock', 'tmp', '.git'].includes(entry))
      await fs.symlink(path.join(ROOT, entry), path.join(copy, entry));
  return copy;
}

/** The copy of the build the servers run from (copyOfBuild). */
let built: string | undefined;

async function startServer(dir: string): Promise<Server> {
  const child = spawn(
    process.execPath,
    [
      path.join(built!, 'dist', 'main.js'),
      '--robot=ergo-jr',
      '--port=0',
      `--records-dir=${dir}`,
      `--speed=${SPEED}`,
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start in 30 s: ${out}${err}`));
    }, 30000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+?)\/ /.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`server exited before listening: ${out}${err}`));
    });
  });
  return { child, base, exited };
}

async function kill(server: Server): Promise<void> {
  server.child.kill('SIGKILL');
  await server.exited;
}

const post = (base: string, url: string, body?: unknown) =>
  fetch(base + url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body ?? {}),
  });

/** Records and saves one name over and over until the server dies. */
async function worker(server: Server, lane: LaneState, name: string, alive: () => boolean): Promise<void> {
  while (alive()) {
    const version = lane.versions.get(name) ?? 0;
    try {
      const rec = await post(server.base, `/records/${name}/record.json`, {
        motors: MOTOR_SETS[version % MOTOR_SETS.length],
      });
      if (rec.status !== 200) throw new Error(`record.json: ${rec.status} ${await rec.text()}`);
      await new Promise((r) => setTimeout(r, Math.random() * 30));
      lane.inFlight.set(name, version);
      lane.versions.set(name, version + 1);
      const res = await post(server.base, `/records/${name}/save.json`);
      if (res.status !== 200) throw new Error(`save.json: ${res.status} ${await res.text()}`);
      // Answered: that is the move the disk must keep. Nothing else writes this name until the next save.
      lane.inFlight.delete(name);
      const text = await fs.readFile(path.join(lane.dir, `${name}.record`), 'utf8');
      lane.answered.set(name, { version, move: parseMoveFile(text, name) });
      lane.saves++;
    } catch (err) {
      if (alive()) throw err;
      return; // the server was killed under this request
    }
  }
}

/** After a restart: every answered save intact, every file a whole move, the list exactly the valid files. */
async function verify(server: Server, lane: LaneState): Promise<void> {
  const entries = (await fs.readdir(lane.dir)).sort();
  expect(
    entries.filter((f) => !f.endsWith('.record')),
    'temporary files left behind',
  ).to.deep.equal([]);
  const onDisk = new Map<string, Move>();
  for (const file of entries) {
    const text = await fs.readFile(path.join(lane.dir, file), 'utf8');
    onDisk.set(file.slice(0, -'.record'.length), parseMoveFile(text, file)); // throws on a partial file
  }
  const list = (await (await fetch(`${server.base}/records/list.json`)).json()) as { moves: string[] };
  expect(list.moves).to.deep.equal([...onDisk.keys()].sort());
  for (const name of NAMES) {
    const saved = lane.answered.get(name);
    const pending = lane.inFlight.get(name);
    const move = onDisk.get(name);
    if (!saved) {
      if (move) {
        // Only a save in flight at the kill can have written it.
        expect(pending, `${name} was never saved`).to.not.equal(undefined);
        expect(move.motors).to.deep.equal([...MOTOR_SETS[pending! % MOTOR_SETS.length]!].sort());
        lane.answered.set(name, { version: pending!, move });
      }
      continue;
    }
    expect(move, `${name}: answered save lost`).to.not.equal(undefined);
    if (pending !== undefined && !sameMove(move!, saved.move)) {
      // The save in flight at the kill made it to disk: it must be that save, whole.
      expect(move!.motors, `${name}: neither the answered save nor the one in flight`).to.deep.equal(
        [...MOTOR_SETS[pending % MOTOR_SETS.length]!].sort(),
      );
      lane.answered.set(name, { version: pending, move: move! });
    } else {
      expect(sameMove(move!, saved.move), `${name}: answered save changed`).to.equal(true);
    }
    const value = (await (await fetch(`${server.base}/records/${name}/value.json`)).json()) as {
      length: number;
    };
    expect(value.length).to.equal(move!.frames.length);
    lane.checked++;
  }
  lane.inFlight.clear();
}

function sameMove(a: Move, b: Move): boolean {
  return JSON.stringify(serial(a)) === JSON.stringify(serial(b));
}

function serial(m: Move) {
  return {
    f: m.framerate,
    m: m.motors,
    x: m.frames.map((f) => [f.t, ...m.motors.map((k) => f.positions.get(k))]),
  };
}

async function runLane(lane: LaneState, cycles: number): Promise<void> {
  let server = await startServer(lane.dir);
  try {
    for (let cycle = 0; cycle < cycles; cycle++) {
      let alive = true;
      let failure: unknown;
      const workers = NAMES.map((n) =>
        worker(server, lane, n, () => alive).catch((err) => (failure ??= err)),
      );
      // Let saves pile up, then kill at a random moment.
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 400));
      alive = false;
      lane.killedInFlight += lane.inFlight.size;
      await kill(server);
      await Promise.all(workers);
      if (failure) throw failure;
      const t0 = performance.now();
      server = await startServer(lane.dir);
      const t1 = performance.now();
      await verify(server, lane);
      lane.startMs += t1 - t0;
      lane.verifyMs += performance.now() - t1;
    }
  } finally {
    await kill(server);
  }
}

describe('records: crash safety (SIGKILL while saving, real server process)', function () {
  this.timeout(300000);
  const lanes: LaneState[] = [];
  let root: string | undefined;
  before(async () => {
    built = await copyOfBuild();
  });
  after(async () => {
    if (root) await fs.rm(root, { recursive: true, force: true });
    if (built) await fs.rm(built, { recursive: true, force: true });
  });

  it(`keeps every answered save intact over ${CYCLES} kill-and-restart cycles`, async () => {
    const started = performance.now();
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'poppy-crash-'));
    for (let i = 0; i < LANES; i++) {
      lanes.push({
        dir: path.join(root, `lane${i}`),
        answered: new Map(),
        versions: new Map(),
        inFlight: new Map(),
        saves: 0,
        killedInFlight: 0,
        checked: 0,
        startMs: 0,
        verifyMs: 0,
      });
    }
    const per = lanes.map((_, i) => Math.floor(CYCLES / LANES) + (i < CYCLES % LANES ? 1 : 0));
    await Promise.all(lanes.map((lane, i) => runLane(lane, per[i]!)));
    const saves = lanes.reduce((a, l) => a + l.saves, 0);
    const inFlight = lanes.reduce((a, l) => a + l.killedInFlight, 0);
    const checked = lanes.reduce((a, l) => a + l.checked, 0);
    if (verbose)
      console.log(
        `      ${CYCLES} kills, ${saves} answered saves, ${inFlight} saves in flight at a kill, ` +
          `${checked} move checks after restarts, ${((performance.now() - started) / 1000).toFixed(1)} s ` +
          `(restarts ${(lanes.reduce((a, l) => a + l.startMs, 0) / CYCLES).toFixed(0)} ms, ` +
          `checks ${(lanes.reduce((a, l) => a + l.verifyMs, 0) / CYCLES).toFixed(0)} ms on average)`,
      );
    expect(saves).to.be.greaterThan(CYCLES);
    expect(inFlight, 'the kills should hit saves in flight').to.be.greaterThan(CYCLES / 2);
  });
});
