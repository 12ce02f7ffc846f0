/**
 * The bus emulator: the twin's servos (src/sim, at real-time speed) behind an emulated Dynamixel bus, on a
 * pseudo-terminal made by socat, which relays its bytes to and from this process. The host (the real backend, or any
 * Dynamixel tool) opens the pty.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { SerialPort } from 'serialport';
import { loadRobotConfig } from '../config/robot-config.ts';
import { ConfigError } from '../core/errors.ts';
import { type Scheduling, raiseScheduling } from '../core/priority.ts';
import { modelSpec } from '../dynamixel/registers.ts';
import { SimBackend, type SimSpeed } from '../sim/backend.ts';
import { loadUrdf } from '../urdf/parse.ts';
import type { PhysicalFaults } from '../sim/physical-faults.ts';
import { EmulatedBus, type Faults, noFaults } from './bus.ts';
import { EmulatedServo } from './servo.ts';

export interface EmulatorOptions {
  /** Built-in robot name or path to a robot config. */
  readonly robot: string;
  readonly baud?: number;
  readonly faults?: Partial<Faults>;
  readonly seed?: number;
  /** Sim speed behind the servos (default 1: real time, as servos are). */
  readonly speed?: SimSpeed;
  /**
   * Scheduling of the socat relays (the wire): servos answer on their own microcontrollers, so the emulator's
   * processes may ask to run ahead of the host's. Applied where permitted (root, CAP_SYS_NICE); default: unchanged.
   */
  readonly scheduling?: Scheduling;
}

export interface RunningEmulator {
  /** The pseudo-terminal the host opens. */
  readonly path: string;
  readonly bus: EmulatedBus;
  readonly sim: SimBackend;
  /** Opens another pty on the same servos (a second host). */
  addPort(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Starts `socat` with one raw pty, relayed to and from socat's stdin and stdout (pipes to this process), and resolves
 * with the pty's path once it is ready. One pty, not a linked pair: each pty hop passes through the kernel's tty
 * work queue, a wake-up more per direction of every transaction.
 */
export function openPty(): Promise<{
  path: string;
  socat: ChildProcessByStdio<Writable, Readable, Readable>;
}> {
  return new Promise((resolve, reject) => {
    let socat: ChildProcessByStdio<Writable, Readable, Readable>;
    try {
      socat = spawn('socat', ['-d', '-d', 'pty,raw,echo=0', 'stdio'], { stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (err) {
      reject(err as Error);
      return;
    }
    let path: string | undefined;
    let text = '';
    let ready = false;
    const fail = (why: string) => {
      socat.kill();
      reject(new ConfigError('socat', `${why} (the bus emulator needs socat: apt-get install socat)`));
    };
    socat.on('error', (err) => fail(err.message));
    socat.on('exit', (code) => {
      if (!ready) fail(`socat exited with code ${code}: ${text.trim().split('\n').pop() ?? ''}`);
    });
    socat.stderr.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      path ??= /PTY is (\S+)/.exec(text)?.[1];
      if (path && /starting data transfer loop/.test(text)) {
        ready = true;
        socat.stderr.removeAllListeners('data');
        socat.stderr.resume();
        resolve({ path, socat });
      }
    });
  });
}

/** The robot's servos on an emulated bus, the twin behind them, no port: the in-memory binding's side (tests). */
export async function emulateBus(
  opts: Omit<EmulatorOptions, 'scheduling'>,
): Promise<{ bus: EmulatedBus; sim: SimBackend; baud: number; close(): Promise<void> }> {
  const config = await loadRobotConfig(opts.robot);
  const urdf = await loadUrdf(config.urdfPath);
  const baud = opts.baud ?? config.bus.baudrate;
  // Servos' state moves continuously: the physics wakes every millisecond and takes one step at a time, so that a
  // transaction never waits behind a batch of steps (Torso back to back: 65-66 % of the bus limit with 10 ms batches,
  // 69-73 % with these).
  // The physical faults (block, weak, push) act on the servos' physics; the console may swap the maps at any time.
  const faults = { ...noFaults(), ...opts.faults };
  const sim = new SimBackend({
    config,
    urdf,
    speed: opts.speed ?? 1,
    wakeMs: 1,
    physicalFaults: (): PhysicalFaults => bus.faults,
  });
  await sim.open();
  const servos = new Map(
    config.motors.map((m) => [m.id, new EmulatedServo(m.id, modelSpec(m.model), sim.bus, baud)]),
  );
  const bus = new EmulatedBus({ protocol: config.bus.protocol, baud, servos, faults, seed: opts.seed });
  return {
    bus,
    sim,
    baud,
    async close() {
      bus.close();
      await sim.close();
    },
  };
}

export async function startEmulator(opts: EmulatorOptions): Promise<RunningEmulator> {
  const { bus, sim, baud } = await emulateBus(opts);
  const ports: {
    socat: ChildProcessByStdio<Writable, Readable, Readable>;
    watch?: Awaited<ReturnType<typeof SerialPort.binding.open>>;
  }[] = [];
  /** One more pty on the bus; resolves with the path the host opens. */
  const addPort = async (): Promise<string> => {
    const { path, socat } = await openPty();
    if (opts.scheduling && socat.pid !== undefined) raiseScheduling(socat.pid, opts.scheduling);
    // A descriptor of our own on the pty, opened before the host's, to read the rate the host sets on it (its
    // termios): servos at another rate do not hear it. Never read from (the host's replies stay the host's).
    const watch = await SerialPort.binding.open({ path, baudRate: baud, lock: false }).catch(() => undefined);
    ports.push({ socat, watch });
    const receive = bus.connect(
      (bytes) => {
        if (socat.stdin.writable) socat.stdin.write(bytes);
      },
      watch && (async () => (await watch.getBaudRate()).baudRate),
    );
    socat.stdout.on('data', (chunk: Buffer) => receive(chunk));
    socat.stdin.on('error', () => {});
    return path;
  };
  const path = await addPort();
  sim.start();
  if (sim.simulation.speed !== 'manual') {
    // Ready once the physics has warmed up (its first steps compile the hot paths and stall the event loop).
    await new Promise<void>((resolve) => {
      const off = sim.simulation.onStep((t) => {
        if (t >= 0.2) {
          off();
          resolve();
        }
      });
    });
  }
  let closing: Promise<void> | undefined;
  return {
    path,
    bus,
    sim,
    addPort,
    close() {
      closing ??= (async () => {
        bus.close();
        for (const { socat, watch } of ports) {
          await watch?.close().catch(() => {});
          const exited = new Promise<void>((resolve) => {
            if (socat.exitCode !== null || socat.signalCode !== null) resolve();
            else socat.once('exit', () => resolve());
          });
          socat.kill();
          await exited;
        }
        await sim.close();
      })();
      return closing;
    },
  };
}
