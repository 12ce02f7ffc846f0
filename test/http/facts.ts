/**
 * The robots as docs/reference/robots.md 1.1, 2.1, 3.1 and docs/reference/contract.md 2 describe them, written out by hand so
 * that the tests check the server against the documents, not against the server's own tables.
 */

export type RobotName = 'ergo-jr' | 'torso' | 'humanoid';
export type Model = 'XL-320' | 'MX-28' | 'MX-64' | 'AX-12';

export interface MotorFact {
  readonly name: string;
  readonly id: number;
  readonly model: Model;
  /** User-frame limits as pypot reports them (lower > upper for indirect motors). */
  readonly lower: number;
  readonly upper: number;
}

export interface RobotFact {
  readonly name: RobotName;
  readonly motors: readonly MotorFact[];
  /** Alias names in file order, and their expansion to motor names. */
  readonly aliases: Readonly<Record<string, readonly string[]>>;
  /** Two motors turning about (nearly) vertical axes: gravity does not pull them, so they hold where they are. */
  readonly pair: readonly [string, string];
  /** A motor with a non-trivial user frame (indirect and/or offset), for clamping tests. */
  readonly framed: string;
  /**
   * How close (degrees) a stiff motor of `pair` ends a goto to its target, at the answer of a `wait`. The measured
   * servo models (docs/reference/servo-models.md 3, M6) give the XL-320 gearbox a static friction of 0.0163 N.m against a P slope of
   * 0.38 N.m/rad at Kp 32: with P alone it stops anywhere within 2.4 degrees of the goal; the I term pypot sets on
   * the Ergo Jr (pid 4, 2, 0) winds up during the move and grinds the rest in over seconds. Measured on the twin at
   * the answer of 1 s gotos of 15 to 60 degrees on m1 and m4: up to 2.6 degrees, 3.4 under --speed max. The MX
   * gearboxes' dead band is 0.2 to 0.34 degree.
   */
  readonly gotoTolerance: number;
}

const m = (name: string, id: number, model: Model, lower: number, upper: number): MotorFact => ({
  name,
  id,
  model,
  lower,
  upper,
});

export const ERGO_JR: RobotFact = {
  name: 'ergo-jr',
  motors: [
    m('m1', 1, 'XL-320', -150, 150),
    m('m2', 2, 'XL-320', 90, -125),
    m('m3', 3, 'XL-320', 90, -90),
    m('m4', 4, 'XL-320', -150, 150),
    m('m5', 5, 'XL-320', 90, -90),
    m('m6', 6, 'XL-320', 110, -90),
  ],
  aliases: { base: ['m1', 'm2', 'm3'], tip: ['m4', 'm5', 'm6'] },
  pair: ['m1', 'm4'],
  framed: 'm2',
  gotoTolerance: 5,
};

const L_ARM = ['l_shoulder_y', 'l_shoulder_x', 'l_arm_z', 'l_elbow_y'];
const R_ARM = ['r_shoulder_y', 'r_shoulder_x', 'r_arm_z', 'r_elbow_y'];

export const TORSO: RobotFact = {
  name: 'torso',
  motors: [
    m('abs_z', 33, 'MX-28', -80, 80),
    m('bust_y', 34, 'MX-28', 46, -23),
    m('bust_x', 35, 'MX-28', 40, -40),
    m('head_z', 36, 'AX-12', -100, 100),
    m('head_y', 37, 'AX-12', 25, -25),
    m('l_shoulder_y', 41, 'MX-28', -210, 65),
    m('l_shoulder_x', 42, 'MX-28', 195, -20),
    m('l_arm_z', 43, 'MX-28', 90, -90),
    m('l_elbow_y', 44, 'MX-28', -50, 90),
    m('r_shoulder_y', 51, 'MX-28', 65, -210),
    m('r_shoulder_x', 52, 'MX-28', 20, -195),
    m('r_arm_z', 53, 'MX-28', 90, -90),
    m('r_elbow_y', 54, 'MX-28', 90, -57),
  ],
  aliases: {
    head: ['head_z', 'head_y'],
    r_arm: R_ARM,
    torso: ['abs_z', 'bust_y', 'bust_x'],
    l_arm: L_ARM,
    arms: [...L_ARM, ...R_ARM],
  },
  pair: ['head_z', 'abs_z'],
  framed: 'head_y',
  gotoTolerance: 1,
};

const L_LEG = ['l_hip_x', 'l_hip_z', 'l_hip_y', 'l_knee_y', 'l_ankle_y'];
const R_LEG = ['r_hip_x', 'r_hip_z', 'r_hip_y', 'r_knee_y', 'r_ankle_y'];

export const HUMANOID: RobotFact = {
  name: 'humanoid',
  motors: [
    m('abs_y', 31, 'MX-64', 50, -12),
    m('abs_x', 32, 'MX-64', 45, -45),
    m('abs_z', 33, 'MX-28', -90, 90),
    m('bust_y', 34, 'MX-28', 67, -27),
    m('bust_x', 35, 'MX-28', 40, -40),
    m('head_z', 36, 'AX-12', -90, 90),
    m('head_y', 37, 'AX-12', 25, -26),
    m('l_shoulder_y', 41, 'MX-28', -210, 65),
    m('l_shoulder_x', 42, 'MX-28', 195, -20),
    m('l_arm_z', 43, 'MX-28', 105, -105),
    m('l_elbow_y', 44, 'MX-28', -148, 1),
    m('r_shoulder_y', 51, 'MX-28', 65, -210),
    m('r_shoulder_x', 52, 'MX-28', 20, -195),
    m('r_arm_z', 53, 'MX-28', 105, -105),
    m('r_elbow_y', 54, 'MX-28', 1, -148),
    m('l_hip_x', 11, 'MX-28', -30, 28.5),
    m('l_hip_z', 12, 'MX-28', 25, -90),
    m('l_hip_y', 13, 'MX-64', -106, 82),
    m('l_knee_y', 14, 'MX-28', -3.5, 134),
    m('l_ankle_y', 15, 'MX-28', -45, 45),
    m('r_hip_x', 21, 'MX-28', -28.5, 30),
    m('r_hip_z', 22, 'MX-28', 90, -25),
    m('r_hip_y', 23, 'MX-64', 85, -105),
    m('r_knee_y', 24, 'MX-28', 134, -3.5),
    m('r_ankle_y', 25, 'MX-28', 45, -45),
  ],
  aliases: {
    r_leg: ['r_hip_x', 'r_hip_z', 'r_hip_y', 'r_knee_y', 'r_ankle_y'],
    l_leg_sagitall: ['l_hip_y', 'l_knee_y', 'l_ankle_y'],
    l_leg: L_LEG,
    head: ['head_z', 'head_y'],
    r_arm: R_ARM,
    legs: [...L_LEG, ...R_LEG],
    torso: ['abs_y', 'abs_x', 'abs_z', 'bust_y', 'bust_x'],
    r_leg_sagitall: ['r_hip_y', 'r_knee_y', 'r_ankle_y'],
    l_arm: L_ARM,
    arms: [...L_ARM, ...R_ARM],
  },
  pair: ['head_z', 'abs_z'],
  framed: 'head_y',
  gotoTolerance: 1,
};

export const ROBOTS: readonly RobotFact[] = [ERGO_JR, TORSO, HUMANOID];

/** docs/reference/contract.md 2: the `registers` list, common part then per model. */
export const COMMON_REGISTERS = [
  'registers',
  'goal_speed',
  'compliant',
  'safe_compliant',
  'angle_limit',
  'id',
  'name',
  'model',
  'present_position',
  'goal_position',
  'present_speed',
  'moving_speed',
  'present_load',
  'torque_limit',
  'lower_limit',
  'upper_limit',
  'present_voltage',
  'present_temperature',
];

export const MODEL_EXTRAS: Readonly<Record<Model, readonly string[]>> = {
  'AX-12': ['compliance_margin', 'compliance_slope'],
  'MX-28': ['pid'],
  'MX-64': ['pid', 'present_current'],
  'XL-320': ['pid', 'led', 'control_mode'],
};

export function registersOf(model: Model): string[] {
  return [...COMMON_REGISTERS, ...MODEL_EXTRAS[model]];
}

/** docs/reference/contract.md 2: writable registers; everything else is read-only (403). */
export const WRITABLE = [
  'goal_position',
  'goal_speed',
  'moving_speed',
  'torque_limit',
  'compliant',
  'safe_compliant',
  'pid',
  'compliance_margin',
  'compliance_slope',
  'led',
  'control_mode',
];

export const LED_COLOURS = ['off', 'red', 'green', 'yellow', 'blue', 'pink', 'cyan', 'white'];

/** Largest moving_speed in deg/s (docs/reference/dynamixel.md 8.5: 1023 units x 6 x rpm per unit). */
export const MAX_SPEED: Readonly<Record<Model, number>> = {
  'XL-320': 681.32,
  'AX-12': 681.32,
  'MX-28': 699.73,
  'MX-64': 699.73,
};

/** goal_speed turns towards +-this (docs/reference/pypot.md 4.2). */
export const GOAL_SPEED_TRAVEL: Readonly<Record<Model, number>> = {
  'XL-320': 150,
  'AX-12': 150,
  'MX-28': 180,
  'MX-64': 180,
};

export const NOMINAL_VOLTS: Readonly<Record<Model, number>> = {
  'XL-320': 7.4,
  'AX-12': 12,
  'MX-28': 12,
  'MX-64': 12,
};

/**
 * A waited goto's tolerance per model at the robots' P gain 32, degrees (docs/api.md "Honest answers"): the dead
 * band of docs/twin.md plus one encoder count (300 / 1023 or 360 / 4095 degrees), to 2 decimals.
 */
export const GOTO_TOLERANCE: Readonly<Record<Model, number>> = {
  'XL-320': 2.74,
  'AX-12': 0.5,
  'MX-28': 0.29,
  'MX-64': 0.42,
};

/** Seconds a waited goto may answer after its duration, its motors coming to rest (docs/api.md). */
export const SETTLE_MAX_S = 0.5;

export const minAngle = (f: MotorFact) => Math.min(f.lower, f.upper);
export const maxAngle = (f: MotorFact) => Math.max(f.lower, f.upper);

/** The first motor of each model on a robot. */
export function onePerModel(robot: RobotFact): MotorFact[] {
  const seen = new Map<Model, MotorFact>();
  for (const f of robot.motors) if (!seen.has(f.model)) seen.set(f.model, f);
  return [...seen.values()];
}

export function fact(robot: RobotFact, motor: string): MotorFact {
  const f = robot.motors.find((x) => x.name === motor);
  if (!f) throw new Error(`no motor ${motor} in the facts of ${robot.name}`);
  return f;
}

/** Checks an error answer is docs/reference/contract.md 1's JSON body of three strings. */
export function isErrorBody(body: unknown): boolean {
  if (!body || typeof body !== 'object') return false;
  const b = body as Record<string, unknown>;
  return (
    Object.keys(b).sort().join(',') === 'details,error,tip' &&
    typeof b.error === 'string' &&
    b.error.length > 0 &&
    typeof b.tip === 'string' &&
    typeof b.details === 'string'
  );
}
