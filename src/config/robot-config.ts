import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../core/errors.ts';
import { cameraRealismSchema } from './camera-realism.ts';
import { roomSchema } from './room.ts';
import { PACKAGE_ROOT } from '../core/entry.ts';

import { MOTOR_MODELS } from '../dynamixel/registers.ts';

export { MOTOR_MODELS, type MotorModelName } from '../dynamixel/registers.ts';

const vec3 = z.tuple([z.number(), z.number(), z.number()]);
const name = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an identifier (letters, digits, _)');

const motorSchema = z.strictObject({
  name,
  id: z.number().int().min(0).max(252),
  model: z.enum(MOTOR_MODELS),
  orientation: z.enum(['direct', 'indirect']),
  /** Degrees, user = raw * s - offset. */
  offset: z.number(),
  /** RAW frame degrees [lower, upper] (as pypot's JSON angle_limit). */
  angleLimit: z.tuple([z.number(), z.number()]).refine(([lo, hi]) => lo < hi, 'lower must be below upper'),
});

const chainSchema = z.strictObject({
  motors: z.array(name).min(1),
  /** Motors of the chain that the solver keeps where they are. */
  passive: z.array(name).default([]),
  /** URDF link that carries the end point. */
  endLink: z.string(),
  /** End point in the end link's frame, metres. */
  tip: vec3,
});

const cameraSchema = z.strictObject({
  /** URDF link the camera is fixed to. */
  link: z.string(),
  /** Pose of the camera in that link: the camera looks along its +z, image x to its +x, image y to its +y. */
  xyz: vec3,
  rpy: vec3,
  resolution: z.tuple([z.number().int().positive(), z.number().int().positive()]),
  fps: z.number().positive(),
  /** Horizontal field of view, degrees. */
  fov: z.number().positive().max(170),
  /** The lens and sensor model of the rendered camera (sim only; docs/sensors.md). */
  realism: cameraRealismSchema.default(cameraRealismSchema.parse({})),
});

/** The table (or floor) the robot stands on, in the URDF root link's frame. */
const tableSchema = z.strictObject({
  /** Centre of the top surface, metres. */
  xyz: vec3,
  /** Length (x), width (y) and thickness (z), metres. */
  size: vec3,
  /** 'table' for a tabletop, 'floor' for the ground under a stand (the name contacts report). */
  kind: z.enum(['table', 'floor']).default('table'),
});

/** A printed marker card of the sim world (docs/reference/camera.md 7): where it lies at start, out of the camera's view. */
const cardSchema = z.strictObject({
  name,
  /** Marker id encoded on the card. */
  id: z.number().int().nonnegative(),
  /** Side of the printed square including its white margin, metres. */
  size: z.number().positive(),
  /** Pose of the card's centre in the URDF root link's frame; the card's face looks along its +z. */
  xyz: vec3,
  rpy: vec3,
});

const worldSchema = z.strictObject({
  table: tableSchema.nullable().default(null),
  cards: z.array(cardSchema).default([]),
  /** The room the camera sees around the robot (src/config/room.ts); absent: the default room. */
  room: roomSchema.optional(),
  /**
   * Which links collide: every two not sharing a joint, or only those three joints apart or more, as robot tools list
   * "adjacent" pairs in an allowed-collision matrix; where links two joints apart meet is then a joint stop
   * (docs/decisions/0034-humanoid-measured-shapes.md).
   */
  selfCollision: z.enum(['beyond-one-joint', 'beyond-two-joints']).default('beyond-one-joint'),
  /**
   * Where the robot's parts stop a joint, by joint name: its lower and upper angle (URDF joint angle, degrees; null:
   * no stop on that side). Absent: a joint turns until a link meets another.
   */
  jointStops: z
    .record(
      z.string(),
      z
        .tuple([z.number().min(-180).max(180).nullable(), z.number().min(-180).max(180).nullable()])
        .refine(
          ([lo, hi]) => lo === null || hi === null || lo < hi,
          'the lower stop must be below the upper',
        ),
    )
    .default({}),
});

const startupSchema = z.strictObject({
  pid: z.tuple([z.number(), z.number(), z.number()]).optional(),
  torqueLimit: z.number().min(0).max(100).optional(),
  led: z.string().optional(),
  /** Where the twin starts and a reset puts it, limp, user degrees by motor (others at 0): it then settles. */
  pose: z.record(z.string(), z.number()).default({}),
  /** Motors whose compliant_behavior is pypot's 'safe' (Humanoid torso). */
  safeCompliant: z.array(name).default([]),
});

export const robotConfigSchema = z
  .strictObject({
    name: z.string().min(1),
    description: z.string().default(''),
    /** Path to the URDF, relative to the config file. */
    urdf: z.string().min(1),
    bus: z.strictObject({
      protocol: z.union([z.literal(1), z.literal(2)]),
      port: z.string().default('auto'),
      baudrate: z.number().int().positive().default(1_000_000),
    }),
    motors: z.array(motorSchema).min(1),
    aliases: z.record(z.string(), z.array(z.string()).min(1)).default({}),
    chains: z.record(z.string(), chainSchema).default({}),
    camera: cameraSchema.nullable().default(null),
    markerDetector: z.boolean().default(false),
    /** What surrounds the robot in the twin: the table and the marker cards (sim only). */
    world: worldSchema.default({ table: null, cards: [], selfCollision: 'beyond-one-joint', jointStops: {} }),
    startup: startupSchema.default({ safeCompliant: [], pose: {} }),
    /** How the commands of several running primitives on one register combine (docs/reference/pypot.md 4.6). */
    primitiveCombine: z.enum(['sum', 'mean']).default('mean'),
    /** Real only: run the physics twin beside the robot (shadow mode), as --shadow does. */
    shadow: z.boolean().default(false),
    /** A calibration file for the twin (docs/calibration.md), relative to the config file; --calibration wins. */
    calibration: z.string().min(1).optional(),
  })
  .superRefine((cfg, ctx) => {
    const motorNames = new Set<string>();
    cfg.motors.forEach((m, i) => {
      if (motorNames.has(m.name))
        ctx.addIssue({
          code: 'custom',
          path: ['motors', i, 'name'],
          message: `duplicate motor name "${m.name}"`,
        });
      motorNames.add(m.name);
    });
    const ids = new Set<number>();
    cfg.motors.forEach((m, i) => {
      if (ids.has(m.id))
        ctx.addIssue({ code: 'custom', path: ['motors', i, 'id'], message: `duplicate motor id ${m.id}` });
      ids.add(m.id);
    });
    for (const [alias, members] of Object.entries(cfg.aliases)) {
      if (motorNames.has(alias))
        ctx.addIssue({
          code: 'custom',
          path: ['aliases', alias],
          message: `alias "${alias}" is also a motor name`,
        });
      members.forEach((member, i) => {
        if (!motorNames.has(member) && !Object.hasOwn(cfg.aliases, member))
          ctx.addIssue({
            code: 'custom',
            path: ['aliases', alias, i],
            message: `"${member}" is neither a motor nor an alias`,
          });
      });
    }
    for (const [chain, c] of Object.entries(cfg.chains)) {
      for (const key of ['motors', 'passive'] as const) {
        c[key].forEach((m, i) => {
          if (!motorNames.has(m))
            ctx.addIssue({
              code: 'custom',
              path: ['chains', chain, key, i],
              message: `unknown motor "${m}"`,
            });
        });
      }
    }
    for (const m of Object.keys(cfg.startup.pose)) {
      if (!motorNames.has(m))
        ctx.addIssue({ code: 'custom', path: ['startup', 'pose', m], message: `unknown motor "${m}"` });
    }
    for (const m of cfg.startup.safeCompliant) {
      if (!motorNames.has(m))
        ctx.addIssue({ code: 'custom', path: ['startup', 'safeCompliant'], message: `unknown motor "${m}"` });
    }
  });

export type RobotConfig = z.infer<typeof robotConfigSchema> & {
  /** Absolute path of the config file (for resolving relative paths), or '' when built in memory. */
  readonly source: string;
  /** Absolute path of the URDF. */
  readonly urdfPath: string;
  /** Absolute path of the config's calibration file, if it names one. */
  readonly calibrationPath?: string;
};
export type MotorConfig = RobotConfig['motors'][number];
export type ChainConfig = RobotConfig['chains'][string];
export type CameraConfig = NonNullable<RobotConfig['camera']>;
export type TableConfig = NonNullable<RobotConfig['world']['table']>;
export type CardConfig = RobotConfig['world']['cards'][number];

/** Expands an alias (nested aliases allowed) to motor names, in order, without duplicates. */
export function expandAlias(
  cfg: Pick<RobotConfig, 'aliases'>,
  alias: string,
  seen: Set<string> = new Set(),
): string[] {
  const members = Object.hasOwn(cfg.aliases, alias) ? cfg.aliases[alias] : undefined;
  if (!members) return [alias];
  if (seen.has(alias)) throw new ConfigError(`aliases.${alias}`, 'aliases form a cycle');
  seen.add(alias);
  const out: string[] = [];
  for (const m of members) for (const n of expandAlias(cfg, m, seen)) if (!out.includes(n)) out.push(n);
  seen.delete(alias);
  return out;
}

export function parseRobotConfig(data: unknown, source: string): RobotConfig {
  const result = robotConfigSchema.safeParse(data);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const field = issue.path.length ? issue.path.join('.') : '(top level)';
    throw new ConfigError(field, issue.message, source);
  }
  const cfg = result.data;
  try {
    for (const alias of Object.keys(cfg.aliases)) expandAlias(cfg, alias);
  } catch (err) {
    // A cycle: name the file too, as every other config error does.
    if (err instanceof ConfigError)
      throw new ConfigError(err.field, 'aliases form a cycle', source || undefined);
    throw err;
  }
  const dir = source ? path.dirname(source) : process.cwd();
  // No prototype: `name in aliases` must not find "constructor", "toString"... (a request names an alias).
  const aliases = Object.assign(Object.create(null) as Record<string, string[]>, cfg.aliases);
  return {
    ...cfg,
    aliases,
    source,
    urdfPath: path.resolve(dir, cfg.urdf),
    calibrationPath: cfg.calibration === undefined ? undefined : path.resolve(dir, cfg.calibration),
  };
}

/** Built-in robot names map to robots/<name>.json in this repository. */
export const BUILTIN_ROBOTS = ['ergo-jr', 'torso', 'humanoid'] as const;

export function robotConfigPath(robot: string): string {
  if ((BUILTIN_ROBOTS as readonly string[]).includes(robot)) {
    return path.join(PACKAGE_ROOT, 'robots', `${robot}.json`);
  }
  return path.resolve(robot);
}

export async function loadRobotConfig(robot: string): Promise<RobotConfig> {
  const file = robotConfigPath(robot);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const looksLikeName = !/[\\/]/.test(robot) && !robot.toLowerCase().endsWith('.json');
    if (looksLikeName && (err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new ConfigError(
        '--robot',
        `unknown robot "${robot}": use ${BUILTIN_ROBOTS.join(', ')}, or the path to a robot config JSON`,
      );
    throw new ConfigError('--robot', `cannot read robot config ${file}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ConfigError('(file)', `not valid JSON: ${(err as Error).message}`, file);
  }
  return parseRobotConfig(data, file);
}
