/**
 * The answers of the web view's JSON routes as zod schemas, for the OpenAPI document (src/http/openapi.ts) and the
 * test that checks live answers against it. They describe src/ui/protocol.ts; nested URDF and config parts are
 * described loosely (objects with their main keys), since the view reads them as the URDF gives them.
 */
import { z } from 'zod';

const numbers = z.array(z.number());
const names = z.array(z.string());
const pose = z.looseObject({ xyz: numbers, rpy: numbers });

const table = z
  .looseObject({ xyz: numbers, size: numbers, kind: z.string() })
  .nullable()
  .meta({ description: 'centre of the top surface and size (x, y, thickness), metres; null: no table' });

export const robotDescriptionAnswer = z.object({
  type: z.literal('hello'),
  robot: z.string(),
  name: z.string().nullable().meta({ description: "a classroom twin's name; null for a robot served alone" }),
  backend: z.enum(['sim', 'real']),
  motors: z.array(
    z.object({
      name: z.string(),
      id: z.number().int(),
      model: z.string(),
      lowerLimit: z.number().meta({ description: 'user degrees (lower > upper for indirect motors)' }),
      upperLimit: z.number(),
      joint: z.string().meta({ description: 'the URDF joint the motor drives' }),
      frame: z
        .object({ orientation: z.enum(['direct', 'indirect']), offset: z.number() })
        .meta({ description: 'the joint (rad) is (user + offset) degrees, times -1 when indirect' }),
    }),
  ),
  chains: names.meta({ description: 'IK chains' }),
  camera: z.object({ resolution: numbers.length(2) }).nullable(),
  table,
  features: z.object({ cameraFrame: z.boolean(), cards: z.boolean() }),
  maxRate: z.number().meta({ description: 'highest stream rate a viewer may ask for, Hz' }),
});

export const sceneAnswer = z.object({
  urdf: z.object({
    name: z.string(),
    root: z.string().meta({ description: 'the root link' }),
    links: z
      .array(z.looseObject({ name: z.string() }))
      .meta({ description: 'URDF links with their visuals' }),
    joints: z
      .array(z.looseObject({ name: z.string(), type: z.string(), parent: z.string(), child: z.string() }))
      .meta({ description: 'URDF joints: origin, axis, limits' }),
  }),
  table,
  cards: z
    .array(
      z.looseObject({
        name: z.string(),
        id: z.number().int(),
        size: z.number(),
        xyz: numbers,
        rpy: numbers,
        home: pose,
      }),
    )
    .meta({ description: 'the marker cards at their resting places' }),
  camera: z
    .looseObject({})
    .nullable()
    .meta({ description: "the robot config's camera (link, resolution, fov)" }),
});

const perMotor = (what: string, item: z.ZodType) =>
  z.array(item).meta({ description: `${what}, in the order of /ui/robot.json motors` });

export const stateAnswer = z.object({
  type: z.literal('state'),
  seq: z.number().int(),
  time: z.number().meta({ description: 'robot clock, seconds (sim time on the twin)' }),
  tick: z.number().int().meta({ description: 'control-loop ticks so far' }),
  present: perMotor('present positions, user degrees', z.number()),
  goal: perMotor('goal positions, user degrees', z.number()),
  joint: perMotor('URDF joint angles, radians', z.number()),
  compliant: perMotor('compliance', z.boolean()),
  speed: perMotor('present speeds, user degrees/s', z.number()),
  load: perMotor('present loads, %', z.number()),
  temperature: perMotor('temperatures, degrees Celsius', z.number()),
  moving: perMotor('a goto is in progress', z.boolean()),
  primitives: z.object({ running: names, paused: names }),
  records: z.object({ recording: names, playing: names }),
  markers: z
    .array(
      z.object({
        id: z.number().int(),
        name: z.string().optional(),
        corners: z.array(numbers.length(2)).length(4),
        centre: numbers.length(2),
      }),
    )
    .nullable()
    .meta({ description: 'markers the camera sees (pixels); null when the robot has no detector' }),
  shadow: z
    .object({
      twin: perMotor("the twin's positions, user degrees (the view's ghost)", z.number().nullable()),
      error: perMotor('real - twin position, degrees; null without both', z.number().nullable()),
      state: perMotor('agree, diverging, compliant, or the kind of the active event', z.string()),
      events: z.array(z.object({ motor: z.string(), kind: z.string(), since: z.number() })),
    })
    .nullable()
    .meta({ description: 'shadow mode (real backend, --shadow): the twin beside the robot; null otherwise' }),
});
