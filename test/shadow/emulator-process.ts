/** The bus emulator in a process of its own, for the shadow and guard tests. */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { expect } from 'chai';
import { until } from '../helpers.ts';
import { BAND } from '../../src/shadow/comparator.ts';
import { type RobotServer, createRobotServer } from '../../src/server.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * `npm run emulator -- --console` in a process of its own, as users run it: the robot's stand-in keeps its own time
 * whatever this process (the server, its twin, the test) is busy with, as servos on their microcontrollers do.
 * Fault lines go to its console; each resolves with the emulator's answer.
 */
export class EmulatorProcess {
  #err = '';
  #seen = 0;
  /** The console line under way: sends go one at a time (send()). */
  #queue: Promise<unknown> = Promise.resolve();
  private constructor(readonly child: ChildProcessByStdio<Writable, Readable, Readable>) {
    child.stderr.setEncoding('utf8').on('data', (d: string) => (this.#err += d));
  }

  static async start(args: string[]): Promise<{ emulator: EmulatorProcess; device: string }> {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'src/emulator/main.ts'), '--console', ...args],
      { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: '' }, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    const emulator = new EmulatorProcess(child);
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const device = await until(
      'the device path the emulator prints',
      async () => {
        if (child.exitCode !== null) throw new Error(`the emulator exited: ${emulator.#err}`);
        return /^(\/\S+)\n/.exec(out)?.[1];
      },
      30000,
      50,
    );
    // Its hint line comes once it is ready; console answers come after it.
    await until(
      'the emulator ready',
      async () => (/--serial=/.test(emulator.#err) ? true : undefined),
      30000,
      50,
    );
    emulator.#seen = emulator.#err.length;
    return { emulator, device };
  }

  /**
   * Sends one console line; resolves with the emulator's answer line. One line at a time: the answers come in the
   * order of the lines, and two sends waiting at once (a fault beside keepHanding's hand) took each other's answer.
   */
  send(line: string): Promise<string> {
    const answer = this.#queue.then(() => this.#sendNow(line));
    this.#queue = answer.catch(() => {});
    return answer;
  }

  async #sendNow(line: string): Promise<string> {
    this.child.stdin.write(line + '\n');
    return until(
      `the emulator to answer ${line}`,
      async () => {
        const rest = this.#err.slice(this.#seen);
        const end = rest.indexOf('\n');
        if (end < 0) return undefined;
        this.#seen += end + 1;
        return rest.slice(0, end);
      },
      10000,
      10,
    );
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const gone = new Promise((resolve) => this.child.once('close', resolve));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(timer);
  }
}

/** Everyday gotos of the Ergo Jr, [motor, position, duration s]: shadow mode must raise no event through them. */
export const EVERYDAY_GOTOS: readonly (readonly [string, number, number])[] = [
  ['m1', 40, 1],
  ['m3', 10, 0.8],
  ['m1', -30, 1.2],
  ['m4', 45, 0.6],
  ['m5', 20, 1],
  ['m2', -30, 1],
  ['m6', 20, 0.5],
  ['m1', 0, 0.7],
  ['m4', 0, 1],
  ['m3', 35, 1],
  ['m2', -60, 1],
  ['m5', 55, 0.8],
];

/** Everyday arm moves of the Torso, [motor, position, duration s]. */
export const TORSO_ARM_GOTOS: readonly (readonly [string, number, number])[] = [
  ['r_shoulder_y', -40, 1.2],
  ['r_elbow_y', 60, 1],
  ['l_shoulder_x', 20, 1],
  ['head_z', 30, 0.8],
  ['r_elbow_y', 20, 1],
  ['r_shoulder_y', 0, 1.2],
  ['l_shoulder_x', 0, 1],
  ['head_z', 0, 0.8],
];

/** A robot's server (the Ergo Jr's unless told) on the real backend with its twin beside it, over an emulator process, listening on HTTP. */
export interface ShadowRig {
  readonly emulator: EmulatorProcess;
  readonly server: RobotServer;
  /** Warnings and errors logged (and info lines, with `infoLogs`). */
  readonly logs: string[];
  /** Every line logged, info included, with when (performance.now(), ms): the server runs in this process. */
  readonly logged: { readonly line: string; readonly at: number }[];
  call(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

export async function startShadowRig(opts: {
  /** ergo-jr unless given. */
  readonly robot?: string;
  readonly faults?: string;
  readonly guard?: boolean;
  readonly infoLogs?: boolean;
  readonly recordsDir: string;
  /** --shadow-log: the cycle log's file. */
  readonly shadowLog?: string;
  /** The emulator's --servo-params: servos that are not the twin's. */
  readonly servoParams?: string;
  /** The server's --calibration: the twin's servos. */
  readonly calibration?: string;
  /** --shadow-thread: where the twin's physics runs (default the server's thread). */
  readonly thread?: 'main' | 'worker';
  /** --shadow-physics-hz: the twin's rate (default 500 Hz, nothing timed). */
  readonly physicsHz?: number;
  /** The twin's solver iterations a step (default 4; a Pi 3B+'s Torso takes 2: src/shadow/physics-rate.ts). */
  readonly solverIterations?: number;
}): Promise<ShadowRig> {
  const robot = opts.robot ?? 'ergo-jr';
  const started = await EmulatorProcess.start([
    '--robot',
    robot,
    ...(opts.faults ? ['--faults', opts.faults] : []),
    ...(opts.servoParams ? ['--servo-params', opts.servoParams] : []),
  ]);
  const logs: string[] = [];
  const logged: { line: string; at: number }[] = [];
  const keep = (line: string) => {
    logs.push(line);
    logged.push({ line, at: performance.now() });
  };
  const server = await createRobotServer({
    backend: 'real',
    robot,
    real: { serial: started.device },
    shadow: true,
    shadowThread: opts.thread,
    shadowPhysicsHz: opts.physicsHz,
    shadowSolverIterations: opts.solverIterations,
    guard: opts.guard,
    shadowLog: opts.shadowLog,
    calibration: opts.calibration,
    recordsDir: opts.recordsDir,
    logger: {
      info: opts.infoLogs ? keep : (line) => logged.push({ line, at: performance.now() }),
      warn: keep,
      error: keep,
    },
  }).catch(async (err: unknown) => {
    await started.emulator.close();
    throw err;
  });
  await server.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = server.app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return {
    emulator: started.emulator,
    server,
    logs,
    logged,
    async call(method, p, body) {
      const res = await fetch(url + p, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    },
    async close() {
      await server.close();
      await started.emulator.close();
    },
  };
}

/** A reading as the shadow routes answer it: the user's frame, as the REST motor routes. */
export interface ReadingAnswer {
  position: number;
  speed: number;
  load: number;
}
/** An event as /shadow/events.json and /shadow/status.json answer it. */
export interface ShadowEventAnswer {
  motor: string;
  kind: string;
  since: number;
  until: number | null;
  real: ReadingAnswer | null;
  twin: ReadingAnswer;
  band: number;
}
export interface ShadowStatusAnswer {
  time: number;
  motors: {
    motor: string;
    real: ReadingAnswer | null;
    twin: ReadingAnswer | null;
    error: number | null;
    band: number;
    restBand: number;
    restSpan: [number, number] | null;
    state: string;
  }[];
  events: ShadowEventAnswer[];
}

/** A goto of one motor: [motor, position, duration s]. */
export type Goto = readonly [string, number, number];

/**
 * Runs `gotos` one after the other (each waited for), over and over, until stop(), which resolves once the goto
 * under way has ended. A goto answered other than 200 fails the stop.
 */
export function keepMoving(rig: ShadowRig, gotos: readonly Goto[]): { stop(): Promise<void> } {
  let running = true;
  const loop = (async () => {
    while (running)
      for (const [motor, position, duration] of gotos) {
        if (!running) break;
        const res = await rig.call('POST', `/motors/${motor}/goto.json`, { position, duration, wait: true });
        expect(res.status, `${motor} -> ${position}: ${JSON.stringify(res.body)}`).to.equal(200);
      }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/**
 * Sends the emulator's hand lines in turn (`hand=<id>@<deg>:<s>`, raw degrees), one every `everyMs`, until stop(),
 * which resolves once the line under way has been answered: a person moving the robot's limp joints meanwhile.
 */
export function keepHanding(
  rig: ShadowRig,
  lines: readonly string[],
  everyMs = 2000,
): { stop(): Promise<void> } {
  let running = lines.length > 0;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    for (let i = 0; running; i++) {
      const answer = await rig.emulator.send(lines[i % lines.length]!);
      expect(answer, lines[i % lines.length]).to.match(/^hand /);
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, everyMs);
      });
    }
  })();
  return {
    stop: async () => {
      running = false;
      wake?.();
      await loop;
    },
  };
}

/** The first line logged at or after `from` (ms) that starts with `prefix`, and when. */
function loggedAfter(rig: ShadowRig, from: number, prefix: string) {
  return rig.logged.find((l) => l.at >= from && l.line.startsWith(prefix));
}

/**
 * Puts a fault on (an emulator console line) while the robot runs `moving` (gotos of its other motors, over and
 * over) and, with `act`, while the motor at fault is on its way through a goto of its own; checks the motor's event: its kind, its log line, raised within 1 s of the fault (when the
 * server logged it; the fault's time is taken before its line is sent) and no event on any other motor. Takes the
 * fault off (`off`) and checks the clear within 1 s; stops the gotos and waits for every motor to agree. Prints the
 * times measured.
 */
export async function expectShadowEvent(
  rig: ShadowRig,
  opts: {
    motor: string;
    kind: string;
    /** The fault's console line, or how to make it once `act` is under way (a stop ahead of a moving joint). */
    on: string | (() => Promise<string>);
    off: string;
    moving: readonly Goto[];
    /** A goto of the motor at fault, answered (not waiting for its end) before the fault comes. */
    act?: () => Promise<unknown>;
    /** How long after `act` answered the fault comes, ms (default 250). */
    actLeadMs?: number;
    /** Hand lines moving the limp joints meanwhile (keepHanding). */
    hand?: readonly string[];
  },
): Promise<ShadowEventAnswer> {
  const { motor, kind } = opts;
  const status = async () =>
    (await rig.call('GET', '/shadow/status.json')).body as unknown as ShadowStatusAnswer;
  const fault = async (line: string) => expect(await rig.emulator.send(line), line).to.match(/^faults /);
  const t0 = (await status()).time;
  const gotos = keepMoving(
    rig,
    opts.moving.filter(([m]) => m !== motor),
  );
  const hands = keepHanding(rig, opts.hand ?? []);
  const allAgree = () => allAgreeAgain(rig);
  let faulty = false;
  let event: ShadowEventAnswer | undefined;
  try {
    // The other motors under way, and the motor at fault at rest for longer than the comparator's look back.
    await new Promise((r) => setTimeout(r, BAND.MOVED_WITHIN_S * 1000 + 100));
    // The lead counts from the goto's answer (the move under way), not its request: a loaded machine may take a while
    // to answer, and a fault before the move starts is not yet the fault under test.
    const acting = opts.act?.();
    if (acting) {
      await acting;
      await new Promise((r) => setTimeout(r, opts.actLeadMs ?? 250));
    }
    const on = typeof opts.on === 'string' ? opts.on : await opts.on();
    const sentAt = performance.now();
    faulty = true;
    await fault(on);
    // The emulator answers once the fault is in force: the time counts from there. Its console's round trip is the
    // harness's, not the comparator's (a loaded machine made it count 500 ms against the servo).
    const setAt = performance.now();
    const raised = await until(
      `an event on ${motor}`,
      async () => loggedAfter(rig, sentAt, `shadow: ${motor} `),
      3000,
      10,
    );
    expect(raised.line, raised.line).to.match(new RegExp(`^shadow: ${motor} ${kind}: `));
    const offSentAt = performance.now();
    faulty = false;
    await fault(opts.off);
    const offAt = performance.now();
    const cleared = await until(
      `${kind} on ${motor} to clear`,
      async () => loggedAfter(rig, offSentAt, `shadow: ${motor} ${kind} cleared`),
      3000,
      10,
    );
    const raisedMs = Math.round(raised.at - setAt);
    const clearedMs = Math.round(cleared.at - offAt);
    const sentMs = Math.round(setAt - sentAt);
    // What the hold window said (the server's line ends with it): how close the kind came to another.
    const window = /; (of its \d+ readings, .*)$/.exec(raised.line)?.[1];
    console.log(
      `      ${kind} on ${motor}: raised ${raisedMs} ms after the fault (in force ${sentMs} ms after it was sent), ` +
        `cleared ${clearedMs} ms after its end` +
        (window ? `; ${window}` : ''),
    );
    expect(raisedMs, 'raised within 1 s of the fault').to.be.at.most(1000);
    expect(clearedMs, 'cleared within 1 s of its end').to.be.at.most(1000);
    const events = (await rig.call('GET', `/shadow/events.json?since=${t0}`)).body
      .events as ShadowEventAnswer[];
    expect(
      events.map((e) => `${e.motor} ${e.kind}`),
      JSON.stringify(events),
    ).to.deep.equal([`${motor} ${kind}`]);
    event = events[0]!;
  } finally {
    await hands.stop();
    await gotos.stop();
    // A check that failed with the fault on takes it off and lets the robot settle (as far as it does): the next test
    // starts from a sound robot, and fails only for itself.
    if (faulty) {
      await rig.emulator.send(opts.off);
      await allAgree().catch(() => undefined);
    }
  }
  await allAgree();
  return event!;
}

/** Every motor agreeing and no event still open: the next check's window starts after this one's last event. */
async function allAgreeAgain(rig: ShadowRig): Promise<void> {
  await until('all agree again', async () => {
    const now = (await rig.call('GET', '/shadow/status.json')).body as unknown as ShadowStatusAnswer;
    const agree = now.motors.every((m) => m.state === 'agree' || m.state === 'compliant');
    return agree && now.events.length === 0 ? true : undefined;
  });
}
