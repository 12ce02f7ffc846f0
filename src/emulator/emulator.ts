/**
 * The bus emulator: the twin's servos (src/sim, at real-time speed) behind an emulated Dynamixel bus, on a
 * pseudo-terminal whose master this process holds (src/emulator/pty.ts). The host (the real backend, or any Dynamixel
 * tool) opens the pty.
 */
import { SerialPort } from 'serialport';
import { loadRobotConfig } from '../config/robot-config.ts';
import { type Calibration, loadCalibration, parseCalibration, servoParamsOf } from '../config/calibration.ts';
import { type Scheduling, raiseScheduling } from '../core/priority.ts';
import { modelSpec } from '../dynamixel/registers.ts';
import { SimBackend, type SimSpeed } from '../sim/backend.ts';
import { loadUrdf } from '../urdf/parse.ts';
import type { PhysicalFaults } from '../sim/physical-faults.ts';
import { EmulatedBus, type Faults, noFaults } from './bus.ts';
import { EmulatedServo } from './servo.ts';
import { type PtyWire, openPty } from './pty.ts';

export interface EmulatorOptions {
  /** Built-in robot name or path to a robot config. */
  readonly robot: string;
  readonly baud?: number;
  readonly faults?: Partial<Faults>;
  readonly seed?: number;
  /** Sim speed behind the servos (default 1: real time, as servos are). */
  readonly speed?: SimSpeed;
  /**
   * Scheduling of a socat relay (the wire, where node-pty's binary is missing): servos answer on their own
   * microcontrollers, so the emulator's processes may ask to run ahead of the host's. Applied where permitted (root, CAP_SYS_NICE); default: unchanged.
   */
  readonly scheduling?: Scheduling;
  /** Who holds the pty's master (default 'native', falling back to socat when node-pty's binary is missing). */
  readonly wire?: PtyWire['kind'];
  /**
   * Servos that are not the twin: their own offset, friction, armature and gain, from a calibration file (path) or
   * object (docs/calibration.md); absent: the twin's models.
   */
  readonly servoParams?: string | Calibration;
}

export interface RunningEmulator {
  /** The pseudo-terminal the host opens. */
  readonly path: string;
  readonly bus: EmulatedBus;
  readonly sim: SimBackend;
  /** Who holds the pty's master: this process ('native'), or a socat relay where node-pty's binary is missing. */
  readonly wire: PtyWire['kind'];
  /** Opens another pty on the same servos (a second host). */
  addPort(): Promise<string>;
  close(): Promise<void>;
}

/** The robot's servos on an emulated bus, the twin behind them, no port: the in-memory binding's side (tests). */
export async function emulateBus(
  opts: Omit<EmulatorOptions, 'scheduling'>,
): Promise<{ bus: EmulatedBus; sim: SimBackend; baud: number; close(): Promise<void> }> {
  const config = await loadRobotConfig(opts.robot);
  const urdf = await loadUrdf(config.urdfPath);
  const baud = opts.baud ?? config.bus.baudrate;
  const params =
    opts.servoParams === undefined
      ? undefined
      : typeof opts.servoParams === 'string'
        ? await loadCalibration(opts.servoParams, config)
        : parseCalibration(opts.servoParams, config, '(servo params)');
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
    servoParams: params && servoParamsOf(params),
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
    wire: PtyWire;
    watch?: Awaited<ReturnType<typeof SerialPort.binding.open>>;
  }[] = [];
  /** One more pty on the bus; resolves with the path the host opens. */
  const addPort = async (): Promise<string> => {
    const wire = await openPty(opts.wire);
    const path = wire.path;
    if (opts.scheduling && wire.relayPid !== undefined) raiseScheduling(wire.relayPid, opts.scheduling);
    // A descriptor of our own on the pty, opened before the host's, to read the rate the host sets on it (its
    // termios): servos at another rate do not hear it. Never read from (the host's replies stay the host's).
    const watch = await SerialPort.binding.open({ path, baudRate: baud, lock: false }).catch(() => undefined);
    ports.push({ wire, watch });
    const receive = bus.connect(
      (bytes) => wire.write(bytes),
      watch && (async () => (await watch.getBaudRate()).baudRate),
    );
    wire.onData((chunk) => receive(chunk));
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
    wire: ports[0]!.wire.kind,
    bus,
    sim,
    addPort,
    close() {
      closing ??= (async () => {
        bus.close();
        for (const { wire, watch } of ports) {
          await watch?.close().catch(() => {});
          await wire.close();
        }
        await sim.close();
      })();
      return closing;
    },
  };
}
