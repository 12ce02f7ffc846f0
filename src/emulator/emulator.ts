/**
 * The bus emulator: the twin's servos (src/sim, at real-time speed) behind an emulated Dynamixel bus, on one end of
 * a pseudo-terminal pair made by socat. The host (the real backend, or any Dynamixel tool) opens the other end.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import tty from 'node:tty';
import { loadRobotConfig } from '../config/robot-config.ts';
import { ConfigError } from '../core/errors.ts';
import { trySetPriority } from '../core/priority.ts';
import { modelSpec } from '../core/registers.ts';
import { SimBackend, type SimSpeed } from '../sim/backend.ts';
import { loadUrdf } from '../urdf/parse.ts';
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
   * Nice value for the socat relays (the wire): servos answer on their own microcontrollers, so the emulator's
   * processes may ask to run ahead of the host's. Applied where permitted (root, CAP_SYS_NICE); default 0: unchanged.
   */
  readonly priority?: number;
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

/** Starts `socat` with two linked raw ptys and resolves with their paths once it is ready. */
export function openPtyPair(): Promise<{ paths: [string, string]; socat: ChildProcess }> {
  return new Promise((resolve, reject) => {
    let socat: ChildProcess;
    try {
      socat = spawn('socat', ['-d', '-d', 'pty,raw,echo=0', 'pty,raw,echo=0'], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
    } catch (err) {
      reject(err as Error);
      return;
    }
    const paths: string[] = [];
    let text = '';
    const fail = (why: string) => {
      socat.kill();
      reject(new ConfigError('socat', `${why} (the bus emulator needs socat: apt-get install socat)`));
    };
    socat.on('error', (err) => fail(err.message));
    socat.on('exit', (code) => {
      if (paths.length < 2) fail(`socat exited with code ${code}: ${text.trim().split('\n').pop() ?? ''}`);
    });
    socat.stderr!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      for (const m of text.matchAll(/PTY is (\S+)/g)) if (!paths.includes(m[1]!)) paths.push(m[1]!);
      if (paths.length === 2 && /starting data transfer loop/.test(text)) {
        socat.stderr!.removeAllListeners('data');
        socat.stderr!.resume();
        resolve({ paths: [paths[0]!, paths[1]!], socat });
      }
    });
  });
}

export async function startEmulator(opts: EmulatorOptions): Promise<RunningEmulator> {
  const config = await loadRobotConfig(opts.robot);
  const urdf = await loadUrdf(config.urdfPath);
  const baud = opts.baud ?? config.bus.baudrate;
  const sim = new SimBackend({ config, urdf, speed: opts.speed ?? 1 });
  await sim.open();
  const servos = new Map(
    config.motors.map((m) => [m.id, new EmulatedServo(m.id, modelSpec(m.model), sim.bus)]),
  );
  const faults = { ...noFaults(), ...opts.faults };
  const bus = new EmulatedBus({ protocol: config.bus.protocol, baud, servos, faults, seed: opts.seed });
  const ports: { socat: ChildProcess; port: tty.ReadStream }[] = [];
  /** One more pty on the bus; resolves with the path the host opens. */
  const addPort = async (): Promise<string> => {
    const { paths, socat } = await openPtyPair();
    if (opts.priority && socat.pid !== undefined) trySetPriority(socat.pid, opts.priority);
    // Node's own tty stream, read and written on the event loop's thread (socat made the pty raw): serialport would
    // hand each reply to libuv's thread pool, a wake-up more per transaction (back-to-back cycles 53 -> 65 % of the
    // bus limit for the Ergo Jr). `writable`: one handle both ways.
    const fd = fs.openSync(paths[0], fs.constants.O_RDWR | fs.constants.O_NOCTTY | fs.constants.O_NONBLOCK);
    const port = new tty.ReadStream(fd, { writable: true } as ConstructorParameters<
      typeof tty.ReadStream
    >[1]);
    ports.push({ socat, port });
    const receive = bus.connect((bytes) => {
      if (!port.destroyed) port.write(Buffer.from(bytes));
    });
    port.on('data', (chunk: Buffer) => receive(chunk));
    port.on('error', () => {});
    return paths[1];
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
        for (const { port, socat } of ports) {
          if (!port.closed)
            await new Promise<void>((resolve) => port.once('close', () => resolve()).destroy());
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
