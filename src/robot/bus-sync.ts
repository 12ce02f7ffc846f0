/**
 * The robot's side of the bus: reads motor state and commands into user units (Motor.state, Motor.commands) and
 * writes changed commands back as raw register values, through the conversions of src/dynamixel/registers.ts.
 */
import type { MotorBus } from '../core/backend.ts';
import { RobotError } from '../core/errors.ts';
import { type AngleFrame, orientRaw, rawToUser } from '../core/frames.ts';
import type { Logger } from '../core/logger.ts';
import {
  type BusRegister,
  type ModelSpec,
  type RawValue,
  type SlowRegister,
  LED_COLOURS,
  SLOW_REGISTERS,
  slowRegistersDue,
  currentToAmps,
  degSToSpeed,
  degToPosition,
  gainsToRawPid,
  loadToPercent,
  percentToTorqueLimit,
  positionToDeg,
  rawPidToGains,
  speedToDegS,
  torqueLimitToPercent,
  voltageToVolts,
} from '../dynamixel/registers.ts';
import type { Motor } from './motor.ts';

/**
 * A motor's position (or goal), speed and load registers in the user's frame, as REST answers them: degrees with the
 * orientation and offset applied, degrees per second and % of torque oriented (docs/reference/robots.md 0).
 */
export const userFrame = {
  position: (m: UserFrameMotor, counts: number) => round2(rawToUser(m.frame, positionToDeg(m.spec, counts))),
  speed: (m: UserFrameMotor, v: number) => round2(orientRaw(m.frame, speedToDegS(m.spec, v))),
  load: (m: UserFrameMotor, v: number) => orientRaw(m.frame, loadToPercent(v)) + 0,
};
export interface UserFrameMotor {
  readonly frame: AngleFrame;
  readonly spec: ModelSpec;
}

export class BusSync {
  readonly #bus: MotorBus;
  readonly #motors: readonly Motor[];
  /** Control loop rate, Hz: paces the slow registers. */
  readonly #rate: number;
  readonly #logger: Logger;

  constructor(bus: MotorBus, motors: readonly Motor[], rate: number, logger: Logger) {
    this.#bus = bus;
    this.#motors = motors;
    this.#rate = rate;
    this.#logger = logger;
  }

  async #busRead(reg: BusRegister, motors: readonly Motor[]): Promise<Map<number, RawValue> | undefined> {
    if (!motors.length) return undefined;
    try {
      const values = await this.#bus.read(
        motors.map((m) => m.id),
        reg,
      );
      // A bus may leave out a motor that stopped answering (the real one does) while the others carry on.
      for (const m of motors) {
        if (values.has(m.id)) m.fault = undefined;
        else if (!m.fault) {
          m.fault = `no reply to ${reg}`;
          this.#logger.warn(`motor ${m.name}: no reply to ${reg}`);
        }
      }
      return values;
    } catch (err) {
      const msg = (err as Error).message;
      for (const m of motors) {
        if (m.fault !== msg) this.#logger.warn(`motor ${m.name}: reading ${reg} failed: ${msg}`);
        m.fault = msg;
      }
      return undefined;
    }
  }

  /** Present position, speed and load every cycle; the slow registers when `ticks` makes them due (5 Hz). */
  async readState(ticks: number): Promise<void> {
    const all = this.#motors;
    const pos = await this.#busRead('present_position', all);
    const speed = await this.#busRead('present_speed', all);
    const load = await this.#busRead('present_load', all);
    for (const m of all) {
      const p = pos?.get(m.id);
      if (typeof p === 'number') m.state.presentPosition = userFrame.position(m, p);
      const s = speed?.get(m.id);
      if (typeof s === 'number') m.state.presentSpeed = userFrame.speed(m, s);
      const l = load?.get(m.id);
      if (typeof l === 'number') m.state.presentLoad = userFrame.load(m, l);
    }
    // Slow registers at 5 Hz, as pypot's slower sync loops do (the first values were read at start, readInitial).
    const due = slowRegistersDue(ticks, this.#rate);
    if (due.length) await this.#readSlow(due);
  }

  async #readSlow(which: readonly SlowRegister[]): Promise<void> {
    const read = (reg: SlowRegister, motors: readonly Motor[]) =>
      which.includes(reg) ? this.#busRead(reg, motors) : Promise.resolve(undefined);
    const volt = await read('present_voltage', this.#motors);
    const temp = await read('present_temperature', this.#motors);
    const withCurrent = this.#motors.filter((m) => m.hasRegister('present_current'));
    const current = await read('present_current', withCurrent);
    for (const m of this.#motors) {
      const v = volt?.get(m.id);
      if (typeof v === 'number') m.state.presentVoltage = voltageToVolts(v);
      const t = temp?.get(m.id);
      if (typeof t === 'number') m.state.presentTemperature = t;
      const c = current?.get(m.id);
      if (typeof c === 'number') m.state.presentCurrent = currentToAmps(c);
    }
  }

  /** Every register the robot keeps, at start: the state, and the commands as the motors hold them. */
  async readInitial(ticks: number): Promise<void> {
    await this.readState(ticks);
    await this.#readSlow(SLOW_REGISTERS);
    const read = async (reg: BusRegister, motors: readonly Motor[]) =>
      (await this.#busRead(reg, motors)) ?? new Map<number, RawValue>();
    const torque = await read('torque_enable', this.#motors);
    const goal = await read('goal_position', this.#motors);
    const speed = await read('moving_speed', this.#motors);
    const limit = await read('torque_limit', this.#motors);
    const pidMotors = this.#motors.filter((m) => m.spec.control === 'pid');
    const pid = await read('pid', pidMotors);
    const axMotors = this.#motors.filter((m) => m.spec.control === 'compliance');
    const margin = await read('compliance_margin', axMotors);
    const slope = await read('compliance_slope', axMotors);
    const ledMotors = this.#motors.filter((m) => m.hasRegister('led'));
    const led = await read('led', ledMotors);
    for (const m of this.#motors) {
      const c = m.commands;
      const te = torque.get(m.id);
      c.compliant = te === undefined ? true : te === 0;
      const g = goal.get(m.id);
      c.goalPosition = typeof g === 'number' ? userFrame.position(m, g) : m.state.presentPosition;
      if (c.compliant) c.goalPosition = m.state.presentPosition;
      const s = speed.get(m.id);
      if (typeof s === 'number') c.movingSpeed = Math.abs(speedToDegS(m.spec, s));
      const l = limit.get(m.id);
      if (typeof l === 'number') c.torqueLimit = torqueLimitToPercent(l);
      const p = pid.get(m.id);
      if (Array.isArray(p)) c.pid = rawPidToGains(p);
      const mg = margin.get(m.id);
      if (Array.isArray(mg)) c.complianceMargin = [mg[0]!, mg[1]!];
      const sl = slope.get(m.id);
      if (Array.isArray(sl)) c.complianceSlope = [sl[0]!, sl[1]!];
      const ld = led.get(m.id);
      if (typeof ld === 'number') c.led = LED_COLOURS[ld] ?? 'off';
      m.dirty.clear();
    }
  }

  /** Writes the commands changed since the last write (Motor.dirty), one bus write per register. */
  async writeCommands(): Promise<void> {
    const groups = new Map<BusRegister, Map<number, RawValue>>();
    const put = (reg: BusRegister, id: number, v: RawValue) => {
      let g = groups.get(reg);
      if (!g) groups.set(reg, (g = new Map()));
      g.set(id, v);
    };
    for (const m of this.#motors) {
      if (!m.dirty.size) continue;
      const c = m.commands;
      for (const name of m.dirty) {
        switch (name) {
          case 'compliant':
            put('torque_enable', m.id, c.compliant && !m.safeHold ? 0 : 1);
            break;
          case 'goalPosition':
            if (c.compliant && !m.safeHold) break; // a compliant motor keeps its goal but gets no position writes
            put('goal_position', m.id, degToPosition(m.spec, m.toRaw(c.goalPosition)));
            break;
          case 'movingSpeed':
            // Joint mode takes a magnitude; the sign of pypot's oriented speed is not sent (docs/reference/robots.md 9.2).
            put('moving_speed', m.id, degSToSpeed(m.spec, Math.abs(c.movingSpeed)));
            break;
          case 'torqueLimit':
            put('torque_limit', m.id, percentToTorqueLimit(c.torqueLimit));
            break;
          case 'pid':
            put('pid', m.id, gainsToRawPid(c.pid));
            break;
          case 'complianceMargin':
            put('compliance_margin', m.id, c.complianceMargin);
            break;
          case 'complianceSlope':
            put('compliance_slope', m.id, c.complianceSlope);
            break;
          case 'led':
            put('led', m.id, LED_COLOURS.indexOf(c.led));
            break;
          case 'controlMode':
            put('control_mode', m.id, c.controlMode);
            break;
        }
      }
      m.dirty.clear();
    }
    // Torque enable last: a motor made stiff gets its goal first, so it holds where it is.
    const order: BusRegister[] = [...groups.keys()].sort(
      (a, b) => Number(a === 'torque_enable') - Number(b === 'torque_enable'),
    );
    for (const reg of order) {
      try {
        await this.#bus.write(reg, groups.get(reg)!);
      } catch (err) {
        const msg = err instanceof RobotError ? err.message : String(err);
        const names = [...groups.get(reg)!.keys()].map(
          (id) => this.#motors.find((m) => m.id === id)?.name ?? id,
        );
        this.#logger.warn(`motors ${names.join(', ')}: writing ${reg} failed: ${msg}`);
      }
    }
  }
}

function round2(x: number): number {
  return Math.round(x * 100) / 100 + 0;
}
