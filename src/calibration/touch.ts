/**
 * Offsets from touches of the table (issue 45; decision 0068): a joint lowers the arm slowly onto the table at a low
 * torque limit and stalls there; every joint's reading is logged while it presses. Where the link rests is geometry
 * alone: the readings less the offsets, through the URDF, put it on the table's top. So the offsets (and how far the
 * top sits from the config's) are the least-squares fit of those contacts, whatever the servos' friction or gain.
 */
import type { MotorBus } from '../core/backend.ts';
import { type ServoParams, servoParamsOf } from '../config/calibration.ts';
import type { RobotConfig } from '../config/robot-config.ts';
import { type ModelSpec, degToPosition, modelSpec, positionToDeg } from '../dynamixel/registers.ts';
import { SimBackend } from '../sim/backend.ts';
import { newPressingContact, pairKey } from '../sim/contacts.ts';
import { type TableGeometry, tableGeometry } from '../sim/table-gap.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import { defaultCalibration } from './defaults.ts';
import { type Rig, SAMPLE, calibrationPose, runGains } from './run.ts';
import { TOUCHES, type TouchSpec } from './touch-poses.ts';

export { TOUCHES, type TouchSpec };

const DEG = Math.PI / 180;

/**
 * The holding joints' P during the touches: the runs' 32 for the XL-320 (the Ergo Jr's light arm; at 128 its offsets
 * came out twice as far off), 128 for the MX (the Torso's arms fold under a press at 32 and the press reads nothing).
 */
const touchP = (model: string) => (model === 'XL-320' ? 32 : 128);
/** What a run says before its touches: what the arm will do, and what the user keeps clear. */
export function touchesStartLine(count: number): string {
  return `${count} touches of the table: the arm lowered gently onto it and pressed (keep the table clear within its reach)`;
}

/** What a run says of a touch done; one whose joint never stalled on the table says so (the fit leaves it out). */
export function touchLine(which: string, plan: TouchPlan, log: TouchLog): string {
  const searched = log.searchedDeg ? `, ${log.searchedDeg.toFixed(0)} degrees past the twin's contact` : '';
  const readings = `${log.samples.length} of ${log.read} readings pressing${searched}`;
  return log.samples.length
    ? `${which}: ${plan.motor} put the ${plan.link} on the table (${readings})`
    : `${which}: ${plan.motor} did not press the ${plan.link} on the table (${readings}): left out`;
}

/** The robot's touches: none without a table in its world. */
export function touchSpecs(config: RobotConfig): readonly TouchSpec[] {
  return config.world.table ? (TOUCHES[config.name] ?? []) : [];
}

/** The pressing joint's torque limit (register value of 1023): gentle on a table and a 3D-printed arm. */
export const TOUCH_TORQUE_LIMIT = 300;
/** The pressing joint starts this far before the contact the twin predicts and is driven as far past it (degrees). */
const APPROACH_DEG = 12;
const OVERSHOOT_DEG = 12;
/** Degrees per second of the approach: slow enough that the arm meets the table without a knock. */
const RATE_DEG_S = 12;
/** Seconds to reach the touch's pose; then the press is held and the last READ_S of it read. */
const MOVE_S = 1;
const HOLD_S = 0.6;
const READ_S = 0.3;
/** A joint short of its goal by this much at the end of the press met the table (degrees). */
const STALL_DEG = 3;
/**
 * Where the robot's table lies further than the twin's (offsets of several degrees add up along an arm), the press
 * goes on at the same rate up to this far past the planned target until the joint stalls (degrees), then as far past
 * the stall as the plan pressed past its contact: the same saturated push at the torque limit.
 */
const SEARCH_DEG = 20;

export interface TouchPlan {
  readonly motor: string;
  readonly id: number;
  readonly direction: 1 | -1;
  /** Every joint's goal while it presses (raw degrees), the pressing joint's its start. */
  readonly pose: Readonly<Record<string, number>>;
  readonly start: number;
  readonly target: number;
  /** Where the twin met the table (the pressing joint's reading, raw degrees) and with which link. */
  readonly predicted: number;
  readonly link: string;
  /**
   * How far the link sank into the table on the twin (mm, negative): the mean gap at the twin's own joint angles while
   * it pressed. A press sinks the link by its push over the link's mass; the fit expects the robot's to sink as much.
   */
  readonly sinkMm: number;
}

export interface TouchLog {
  readonly motor: string;
  readonly link: string;
  /**
   * Every joint's readings (raw degrees, by name) while the pressing joint stayed STALL_DEG or more short of its goal
   * (it met the table): at the press's end, one per sample.
   */
  readonly samples: readonly Readonly<Record<string, number>>[];
  /** Samples read in all, pressing or not. */
  readonly read: number;
  /** The plan's sinkMm: the gap the fit expects at these readings (mm). */
  readonly sinkMm: number;
  /** How far past the planned target the press went to meet the table (degrees; 0 where the twin's sufficed). */
  readonly searchedDeg?: number;
  /** The touch as planned (resinkTouches runs it again on a twin with the offsets found). */
  readonly plan?: TouchPlan;
  /**
   * How far the sink moved when the twin pressed with the offsets found (mm, resinkTouches): a press whose sink turns
   * with the pose (an edge of the print landing instead of a face) says less of the offsets.
   */
  readonly sinkShiftMm?: number;
}

/** The links a joint carries (its child and everything beyond). */
export function carried(urdf: UrdfRobot, motor: string): string[] {
  const joint = urdf.joints.find((j) => j.name === motor);
  if (!joint) return [];
  const out = [joint.child];
  for (let i = 0; i < out.length; i++)
    for (const j of urdf.joints) if (j.parent === out[i]) out.push(j.child);
  return out;
}

/**
 * The touch planned on the twin (the servos' models, no offsets): the pressing joint turned from the touch's pose at
 * RATE_DEG_S until one of its links presses on the table, then the whole touch checked on the twin (touchFault).
 * Refused, with the reason, when it never meets the table within the joint's limits, something else is met first (two
 * links, or a link that was already touching), or the whole touch is no good.
 */
export async function planTouch(
  config: RobotConfig,
  urdf: UrdfRobot,
  spec: TouchSpec,
): Promise<TouchPlan | { refused: string }> {
  const motor = config.motors.find((m) => m.name === spec.motor)!;
  const pose = { ...calibrationPose(config), ...spec.pose };
  const sim = new SimBackend({ config, urdf, speed: 'manual', cameraRealism: false });
  await sim.open();
  try {
    const ids = config.motors.map((m) => m.id);
    sim.simulation.setPose(new Map(config.motors.map((m) => [m.id, pose[m.name]!])));
    await touchGains(sim.bus, config);
    await sim.bus.write('torque_limit', new Map(ids.map((id) => [id, 1023])));
    await sim.bus.write('torque_enable', new Map(ids.map((id) => [id, 1])));
    await sim.bus.write('goal_position', goalsOf(config, pose));
    await sim.advance(MOVE_S);
    const before = new Set(sim.simulation.contacts().map((c) => pairKey(c.a, c.b)));
    await sim.bus.write('torque_limit', new Map([[motor.id, TOUCH_TORQUE_LIMIT]]));
    const limit = spec.direction > 0 ? motor.angleLimit[1] : motor.angleLimit[0];
    const spec0 = modelSpec(motor.model);
    const links = new Set(carried(urdf, motor.name));
    for (let goal = pose[motor.name]!; (limit - goal) * spec.direction > 0;) {
      goal += spec.direction * RATE_DEG_S * SAMPLE;
      await sim.bus.write('goal_position', new Map([[motor.id, degToPosition(spec0, goal)]]));
      await sim.advance(SAMPLE);
      const hit = sim.simulation.contacts().find((c) => c.impulse > 0 && !before.has(pairKey(c.a, c.b)));
      if (!hit) continue;
      const link = hit.a === 'table' ? hit.b : hit.a;
      if ((hit.a !== 'table' && hit.b !== 'table') || !links.has(link))
        return { refused: `${motor.name} would bring ${hit.a} onto ${hit.b} before the table` };
      const predicted = sim.jointAngles().get(motor.name)! / DEG;
      const clamp = (v: number) => Math.min(motor.angleLimit[1], Math.max(motor.angleLimit[0], v));
      const start = clamp(predicted - spec.direction * APPROACH_DEG);
      // Not past the touch's own pose: the approach starts where the pose was clear of the table.
      const from = (start - pose[motor.name]!) * spec.direction < 0 ? pose[motor.name]! : start;
      const plan: Omit<TouchPlan, 'sinkMm'> = {
        motor: motor.name,
        id: motor.id,
        direction: spec.direction,
        pose: { ...pose, [motor.name]: from },
        start: from,
        target: clamp(predicted + spec.direction * OVERSHOOT_DEG),
        predicted,
        link,
      };
      const twin = await touchOnTwin(config, urdf, plan);
      return 'refused' in twin ? twin : { ...plan, sinkMm: twin.sinkMm };
    }
    return { refused: `${motor.name} meets nothing within its limits from that pose` };
  } finally {
    await sim.close();
  }
}

/**
 * The whole touch run on the twin from the calibration pose: how far its link sank, or why the touch is no good. Half
 * of its readings or more must find the joint held short of its goal (where the joints that hold the pose give way
 * under the press instead, the readings say nothing of a contact), and from the calibration pose to the press and back
 * nothing may be met but the table by a link the joint carries (the move to the touch's pose is a straight line in
 * the joints).
 */
async function touchOnTwin(
  config: RobotConfig,
  urdf: UrdfRobot,
  plan: Omit<TouchPlan, 'sinkMm'>,
  servoParams?: ReadonlyMap<number, ServoParams>,
  geometry?: TableGeometry,
): Promise<{ sinkMm: number } | { refused: string }> {
  const geo = geometry ?? (await tableGeometry(urdf, config.world.table!));
  const sim = new SimBackend({ config, urdf, speed: 'manual', cameraRealism: false, servoParams });
  await sim.open();
  try {
    sim.simulation.setPose(new Map(config.motors.map((m) => [m.id, calibrationPose(config)[m.name]!])));
    const before = new Set(sim.simulation.contacts().map((c) => pairKey(c.a, c.b)));
    const links = new Set(carried(urdf, plan.motor));
    let met: string | undefined;
    const wait = async (seconds: number) => {
      for (let t = 0; t < seconds - 1e-9; t += SAMPLE) {
        await sim.advance(Math.min(SAMPLE, seconds - t));
        const hit = newPressingContact(sim.simulation.contacts(), before);
        const onTable = hit && (hit.a === 'table' ? links.has(hit.b) : hit.b === 'table' && links.has(hit.a));
        if (hit && !onTable) met ??= `${plan.motor}'s touch would bring ${hit.a} onto ${hit.b}`;
      }
    };
    const gaps: number[] = [];
    const pressing = () => gaps.push(geo.gap(plan.link, sim.jointAngles()));
    const log = await runTouch(
      { bus: sim.bus, now: () => sim.clock.now(), wait },
      config,
      { ...plan, sinkMm: 0 },
      pressing,
    );
    if (met) return { refused: met };
    if (log.samples.length < log.read / 2) return { refused: `${plan.motor} would not press there` };
    return { sinkMm: (1000 * gaps.reduce((s, g) => s + g, 0)) / gaps.length };
  } finally {
    await sim.close();
  }
}

/** The run's gains with the holding joints' P of touchP: the joints that hold the pose give less under the press. */
async function touchGains(bus: MotorBus, config: RobotConfig): Promise<void> {
  await runGains(bus, config);
  const pid = config.motors.filter((m) => modelSpec(m.model).control === 'pid');
  if (pid.length) await bus.write('pid', new Map(pid.map((m) => [m.id, [0, 0, touchP(m.model)]])));
}

function goalsOf(config: RobotConfig, pose: Readonly<Record<string, number>>): Map<number, number> {
  return new Map(config.motors.map((m) => [m.id, degToPosition(modelSpec(m.model), pose[m.name]!)]));
}

/**
 * Runs a planned touch on the rig: the pose, the slow press, every joint read while it holds. `pressing` is called as
 * each reading with the joint pressing is kept (the twin's plan measures its sink there).
 */
export async function runTouch(
  rig: Rig,
  config: RobotConfig,
  plan: TouchPlan,
  pressing?: () => void,
): Promise<TouchLog> {
  const ids = config.motors.map((m) => m.id);
  const motor = config.motors.find((m) => m.id === plan.id)!;
  const spec = modelSpec(motor.model);
  const limits = motor.angleLimit;
  await touchGains(rig.bus, config);
  await rig.bus.write('torque_limit', new Map(ids.map((id) => [id, 1023])));
  await rig.bus.write('torque_enable', new Map(ids.map((id) => [id, 1])));
  await rig.bus.write('goal_position', goalsOf(config, plan.pose));
  await rig.wait(MOVE_S);
  await rig.bus.write('torque_limit', new Map([[plan.id, TOUCH_TORQUE_LIMIT]]));
  await ramp(rig, spec, plan.id, plan.start, plan.target);
  const target = await searchOn(rig, spec, plan, limits);
  await rig.wait(HOLD_S - READ_S);
  const samples: Record<string, number>[] = [];
  let read = 0;
  const sample = async () => {
    const values = await rig.bus.read(ids, 'present_position');
    const at = Object.fromEntries(
      config.motors.map((m) => [m.name, positionToDeg(modelSpec(m.model), values.get(m.id) as number)]),
    );
    read++;
    if ((target - at[plan.motor]!) * plan.direction >= STALL_DEG) {
      samples.push(at);
      pressing?.();
    }
    await rig.wait(SAMPLE);
  };
  for (let k = Math.round(READ_S / SAMPLE); k > 0 && !rig.stopped?.(); k--) await sample();
  await rig.bus.write('torque_limit', new Map([[plan.id, 1023]]));
  await rig.bus.write('goal_position', goalsOf(config, calibrationPose(config)));
  await rig.wait(MOVE_S);
  const searchedDeg = Math.abs(target - plan.target);
  return { motor: plan.motor, link: plan.link, samples, read, sinkMm: plan.sinkMm, searchedDeg, plan };
}

/**
 * Each pressed touch run again on a twin whose servos carry these offsets (degrees by motor name; the models' other
 * figures): the sink it shows there replaces the plan's, and how far it moved is kept (sinkShiftMm). Where that twin
 * would not press, the sink stays and its shift is the whole of a press's (1 mm).
 */
export async function resinkTouches(
  config: RobotConfig,
  urdf: UrdfRobot,
  logs: readonly TouchLog[],
  offsets: ReadonlyMap<string, number>,
  geometry?: TableGeometry,
): Promise<TouchLog[]> {
  const geo = geometry ?? (await tableGeometry(urdf, config.world.table!));
  const params = servoParamsOf(defaultCalibration(config, '', ''));
  for (const m of config.motors)
    params.set(m.id, { ...params.get(m.id)!, offsetDeg: offsets.get(m.name) ?? 0 });
  const out: TouchLog[] = [];
  for (const log of logs) {
    if (!log.plan || !log.samples.length) {
      out.push(log);
      continue;
    }
    const twin = await touchOnTwin(config, urdf, log.plan, params, geo);
    out.push(
      'refused' in twin
        ? { ...log, sinkShiftMm: 1 }
        : { ...log, sinkMm: twin.sinkMm, sinkShiftMm: twin.sinkMm - log.plan.sinkMm },
    );
  }
  return out;
}

/**
 * At the planned target, a joint that has not stalled has not met the table: its goal goes on at RATE_DEG_S, up to
 * SEARCH_DEG further (within its limits), until it stalls, then past the stall by the plan's press. The target the
 * press ends at (the plan's where it stalled in time).
 */
async function searchOn(
  rig: Rig,
  spec: ModelSpec,
  plan: TouchPlan,
  limits: readonly [number, number],
): Promise<number> {
  const lag = async (goal: number) =>
    (goal - positionToDeg(spec, (await rig.bus.read([plan.id], 'present_position')).get(plan.id) as number)) *
    plan.direction;
  const within = (v: number) => Math.min(limits[1], Math.max(limits[0], v));
  const end = within(plan.target + plan.direction * SEARCH_DEG);
  const step = plan.direction * RATE_DEG_S * SAMPLE;
  let goal = plan.target;
  while ((await lag(goal)) < STALL_DEG) {
    if ((end - goal) * plan.direction <= 1e-9 || rig.stopped?.()) return goal;
    goal = (goal + step - end) * plan.direction > 0 ? end : goal + step;
    await rig.bus.write('goal_position', new Map([[plan.id, degToPosition(spec, goal)]]));
    await rig.wait(SAMPLE);
  }
  if (goal === plan.target) return goal;
  // Met the table: on past the stall as far as the plan pressed past the twin's contact.
  const press = Math.max(0, (plan.target - plan.predicted) * plan.direction - STALL_DEG);
  const final = within(goal + plan.direction * press);
  await ramp(rig, spec, plan.id, goal, final);
  return final;
}

/** The joint's goal moved from `from` to `to` at RATE_DEG_S, a step each SAMPLE (raw degrees). */
async function ramp(rig: Rig, spec: ModelSpec, id: number, from: number, to: number): Promise<void> {
  const steps = Math.ceil(Math.abs(to - from) / (RATE_DEG_S * SAMPLE));
  for (let k = 1; k <= steps && !rig.stopped?.(); k++) {
    await rig.bus.write(
      'goal_position',
      new Map([[id, degToPosition(spec, from + ((to - from) * k) / steps)]]),
    );
    await rig.wait(SAMPLE);
  }
}

/**
 * Every touch of the robot planned on the twin and run on the rig, in TOUCHES' order, with a line for each; the logs,
 * or none for a robot without touches (the offsets are then left to the approaches).
 */
export async function runTouches(
  rig: Rig,
  config: RobotConfig,
  urdf: UrdfRobot,
  onProgress?: (line: string) => void,
): Promise<TouchLog[]> {
  const logs: TouchLog[] = [];
  const specs = touchSpecs(config);
  if (specs.length) onProgress?.(touchesStartLine(specs.length));
  for (const [k, spec] of specs.entries()) {
    if (rig.stopped?.()) break;
    const plan = await planTouch(config, urdf, spec);
    if ('refused' in plan) {
      onProgress?.(`touch ${k + 1}/${specs.length}: skipped, ${plan.refused}`);
      continue;
    }
    const log = await runTouch(rig, config, plan);
    onProgress?.(touchLine(`touch ${k + 1}/${specs.length}`, plan, log));
    logs.push(log);
  }
  return logs;
}
