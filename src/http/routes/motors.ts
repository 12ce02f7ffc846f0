import { gotoPath } from '../../robot/trajectory.ts';
import { z } from 'zod';
import { badRequest, notFound } from '../../core/errors.ts';
import { type Arrival, arrival, untilStill } from '../../robot/arrival.ts';
import type { GotoOutcome, StartedGoto } from '../../robot/motions.ts';
import type { Motor } from '../../robot/motor.ts';
import { readRegister, registerWriter } from '../../robot/motor-registers.ts';
import type { Robot } from '../../robot/robot.ts';
import { gotoToleranceDeg } from '../../sim/servo-band.ts';
import { bareValue } from '../body.ts';
import { defaultProfile, type MotionPolicy } from '../profile.ts';
import { route, type RouteSpec } from '../route.ts';
import { anyValue, duration, forceQuery, lenientNumber, registerValue, wait } from '../schema.ts';

const GOTO_TIP = 'send {"position": 30, "duration": 1.5, "wait": false}';
const MULTI_GOTO_TIP = 'send {"motors": ["m1", "m2"], "positions": [10, -20], "duration": 2, "wait": false}';

/** The guard's word in the goto routes' OpenAPI descriptions. */
export const GUARD_NOTE =
  'With --guard (real backend, --shadow) the move is predicted first and refused with 409 if it would hit the ' +
  'table or the robot itself; ?force=true skips the guard (logged), ?force= other than true/false is a 400.';

const gotoBody = z.object({
  position: lenientNumber.meta({
    description: 'target, degrees (user frame); clamped into the angle limits',
  }),
  duration,
  wait,
});

const multiGotoBody = z
  .object({
    motors: z
      .array(z.string({ error: 'must be a motor name' }), { error: 'must be an array of motor names' })
      .min(1, { error: 'must not be empty' })
      .meta({ description: 'motor names' }),
    positions: z
      .array(lenientNumber, { error: 'must be an array of numbers' })
      .meta({ description: 'targets, degrees, one per motor' }),
    duration,
    wait,
  })
  .refine((b) => b.motors.length === b.positions.length, {
    error: 'and motors must have the same length',
    path: ['positions'],
  });

/** The fields of a waited goto's arrival (default profile, beyond v4): docs/api.md "Honest answers". */
export const arrivalFields = {
  reached: z.boolean().optional().meta({
    description:
      'with wait, default profile: every motor within its tolerance of its target at the answer (beyond v4)',
  }),
  error: z.record(z.string(), z.number()).optional().meta({
    description: 'with wait, default profile: motor -> present position minus target, degrees (beyond v4)',
  }),
  tolerance: z.record(z.string(), z.number()).optional().meta({
    description:
      "with wait, default profile: motor -> tolerance, degrees: the servo's dead band plus one encoder count (beyond v4)",
  }),
};

/** The motors' arrival at their targets now, against their servos' tolerance. */
export const motorArrival = (targets: ReadonlyMap<Motor, number>): Arrival =>
  arrival(targets, gotoToleranceDeg);

/**
 * Waits for a started goto on behalf of a client: its end, then, when the policy reports arrival, its motors at rest
 * (at most SETTLE_MAX_S more; not after a cancel, whose motors another command drives).
 */
export function waitGoto(
  robot: Robot,
  policy: MotionPolicy,
  started: StartedGoto,
  clientGone: AbortSignal | undefined,
): Promise<GotoOutcome> {
  const ended = policy.reportArrival
    ? started.done.then(async (o) => {
        if (!o.cancelled) await untilStill(robot, [...started.targets.keys()]);
        return o;
      })
    : started.done;
  return robot.waitFor(ended, clientGone);
}

const gotoAnswer = z.object({
  motors: z.record(z.string(), z.number()).meta({ description: 'motor -> target after clamping, degrees' }),
  duration: z.number(),
  waiting: z.boolean().meta({ description: 'whether the answer came after the motion' }),
  cancelled: z.boolean().optional().meta({
    description: 'with wait only: true when a newer command took a motor over before the end (beyond v4)',
  }),
  ...arrivalFields,
});

/**
 * Starts a validated goto and answers as docs/reference/rest-api.md 4.2 says, after the motion when `wait`; a waited goto that a
 * newer command cut short answers `cancelled: true`, and with the policy's `reportArrival` whether the motors got
 * there (docs/api.md "Honest answers").
 */
function startGoto(
  robot: Robot,
  policy: MotionPolicy,
  targets: Map<Motor, number>,
  seconds: number,
  waiting: boolean,
  request: { readonly clientGone?: AbortSignal },
  force: boolean,
): GotoAnswer | Promise<GotoAnswer> {
  const go = (): GotoAnswer | Promise<GotoAnswer> => {
    const started = robot.goto(targets, seconds, { compliant: policy.compliantGoto });
    const motors: Record<string, number> = {};
    for (const [m, t] of started.targets) motors[m.name] = t;
    const answer = { motors, duration: seconds, waiting };
    // The abort signal and the end's promise are made on first read: only a waiting goto pays for them.
    if (!waiting) return answer;
    return waitGoto(robot, policy, started, request.clientGone).then((o) => ({
      ...answer,
      cancelled: o.cancelled,
      ...(policy.reportArrival && motorArrival(started.targets)),
    }));
  };
  // Without the guard a goto answers at once: no promise to settle on the way (most gotos).
  return policy.guard ? policy.guard(gotoPath(clampAll(targets), seconds), force).then(go) : go();
}

interface GotoAnswer extends Partial<Arrival> {
  motors: Record<string, number>;
  duration: number;
  waiting: boolean;
  cancelled?: boolean;
}

/** The targets clamped into their motors' limits, as the goto will take them. */
const clampAll = (targets: ReadonlyMap<Motor, number>) =>
  new Map([...targets].map(([m, to]) => [m, m.clampAngle(to)]));

export function motorRoutes(robot: Robot, policy: MotionPolicy = defaultProfile.policy): RouteSpec[] {
  const names = robot.motors.map((m) => m.name);
  return [
    route({
      method: 'GET',
      path: '/motors/list.json',
      summary: 'all motor names',
      answer: z.object({ motors: z.array(z.string()) }),
      examples: { answer: { motors: names } },
      handler: () => ({ motors: robot.motors.map((m) => m.name) }),
    }),
    route({
      method: 'GET',
      path: '/motors/aliases/list.json',
      summary: 'all alias names',
      answer: z.object({ aliases: z.array(z.string()) }),
      examples: { answer: { aliases: robot.aliases } },
      handler: () => ({ aliases: robot.aliases }),
    }),
    route({
      method: 'GET',
      path: '/motors/:alias/list.json',
      summary: 'motor names of an alias (nested aliases expanded)',
      answer: z.record(z.string(), z.array(z.string())),
      handler: ({ params }) => ({
        [params.alias]: params.alias === policy.allMotorsAlias ? [...names] : robot.aliasMotors(params.alias),
      }),
    }),
    route({
      method: 'GET',
      path: '/motors/:motor/registers/list.json',
      summary: "a motor's register names",
      answer: z.object({ registers: z.array(z.string()) }),
      handler: ({ params }) => ({ registers: [...robot.motor(params.motor).registers] }),
    }),
    route({
      method: 'GET',
      path: '/motors/:motor/registers/:register/value.json',
      summary: 'read a register',
      answer: z.record(z.string(), registerValue),
      examples: { answer: { present_position: 12.3 } },
      handler: ({ params }) => ({
        [params.register]: readRegister(robot.motor(params.motor), params.register),
      }),
    }),
    route({
      method: 'POST',
      path: '/motors/:motor/registers/:register/value.json',
      summary: 'write a register (the body is the bare new value)',
      description:
        'Writable: goal_position, goal_speed, moving_speed, torque_limit, compliant, safe_compliant, pid, ' +
        'compliance_margin, compliance_slope, led, control_mode (403 for the others). Booleans also as ' +
        '"true"/"false"/1/0, numbers also as decimal strings. goal_position and torque_limit are clamped.',
      bareBody: anyValue,
      answer: z.record(z.string(), registerValue),
      examples: { body: 30, answer: { goal_position: 30 } },
      handler: ({ params, body }) => {
        const m = robot.motor(params.motor);
        const write = registerWriter(robot, m, params.register); // 404 or 403 before reading the body
        const value = bareValue(body, 'the body is the new value as JSON, for example 30 or true');
        return { [params.register]: write(value) };
      },
    }),
    route({
      method: 'GET',
      path: '/motors/registers/:register/list.json',
      summary: 'one register of every motor that has it',
      answer: z.record(z.string(), z.record(z.string(), registerValue)),
      handler: ({ params }) => {
        const reg = params.register;
        const having = robot.motors.filter((m) => m.hasRegister(reg));
        if (!having.length)
          throw notFound(
            `no motor has a register "${reg}"`,
            "GET /motors/<motor>/registers/list.json lists a motor's registers",
          );
        return { [reg]: Object.fromEntries(having.map((m) => [m.name, readRegister(m, reg)])) };
      },
    }),
    route({
      method: 'POST',
      path: '/motors/:motor/goto.json',
      summary: 'move one motor to a position over a duration (minimum jerk)',
      description: GUARD_NOTE,
      body: gotoBody,
      tip: GOTO_TIP,
      answer: gotoAnswer,
      examples: {
        body: { position: 30, duration: 1.5, wait: true },
        answer: {
          motors: { m1: 30 },
          duration: 1.5,
          waiting: true,
          cancelled: false,
          reached: true,
          error: { m1: -1.17 },
          tolerance: { m1: 2.74 },
        },
      },
      handler: (request) => {
        const { params, body, query } = request;
        const m = robot.motor(params.motor);
        const force = forceQuery(query);
        return startGoto(
          robot,
          policy,
          new Map([[m, body.position]]),
          body.duration,
          body.wait,
          request,
          force,
        );
      },
    }),
    route({
      method: 'POST',
      path: '/motors/goto.json',
      summary: 'move several motors to positions over a duration (nothing moves if one is wrong)',
      description: GUARD_NOTE,
      body: multiGotoBody,
      tip: MULTI_GOTO_TIP,
      answer: gotoAnswer,
      examples: {
        body: { motors: ['m1', 'm2'], positions: [10, -20], duration: 2, wait: false },
        answer: { motors: { m1: 10, m2: -20 }, duration: 2, waiting: false },
      },
      handler: (request) => {
        const { body, query } = request;
        const force = forceQuery(query);
        const targets = new Map<Motor, number>();
        body.motors.forEach((name, i) => {
          const m = robot.motor(name);
          if (targets.has(m)) throw badRequest(`motor "${name}" is listed twice`, MULTI_GOTO_TIP);
          targets.set(m, body.positions[i]!);
        });
        return startGoto(robot, policy, targets, body.duration, body.wait, request, force);
      },
    }),
  ];
}
