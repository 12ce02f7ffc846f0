import { badRequest, notFound } from '../../core/errors.ts';
import { parseDuration, parseNumber, parseWait, describe } from '../../core/values.ts';
import type { Motor } from '../../robot/motor.ts';
import { checkWritable, readRegister, writeRegister } from '../../robot/motor-registers.ts';
import type { Robot } from '../../robot/robot.ts';
import { bareValue, objectBody } from '../body.ts';
import type { RouteSpec } from '../route.ts';

const GOTO_TIP = 'send {"position": 30, "duration": 1.5, "wait": false}';
const MULTI_GOTO_TIP = 'send {"motors": ["m1", "m2"], "positions": [10, -20], "duration": 2, "wait": false}';

/**
 * Starts a validated goto and answers as REST-API.md 4.2 says, after the motion when `wait`; a waited goto that a
 * newer command cut short answers `cancelled: true` (README "Honest answers").
 */
async function gotoAnswer(
  robot: Robot,
  targets: Map<Motor, number>,
  duration: number,
  wait: boolean,
  clientGone: AbortSignal | undefined,
) {
  const { targets: clamped, done } = robot.goto(targets, duration);
  const outcome = wait ? await robot.waitFor(done, clientGone) : undefined;
  const motors: Record<string, number> = {};
  for (const [m, t] of clamped) motors[m.name] = t;
  return { motors, duration, waiting: wait, ...(outcome && { cancelled: outcome.cancelled }) };
}

export function motorRoutes(robot: Robot): RouteSpec[] {
  return [
    {
      method: 'GET',
      path: '/motors/list.json',
      summary: 'all motor names',
      handler: () => ({ motors: robot.motors.map((m) => m.name) }),
    },
    {
      method: 'GET',
      path: '/motors/aliases/list.json',
      summary: 'all alias names',
      handler: () => ({ aliases: robot.aliases }),
    },
    {
      method: 'GET',
      path: '/motors/:alias/list.json',
      summary: 'motor names of an alias',
      handler: ({ params }) => ({ [params.alias!]: robot.aliasMotors(params.alias!) }),
    },
    {
      method: 'GET',
      path: '/motors/:motor/registers/list.json',
      summary: "a motor's register names",
      handler: ({ params }) => ({ registers: [...robot.motor(params.motor!).registers] }),
    },
    {
      method: 'GET',
      path: '/motors/:motor/registers/:register/value.json',
      summary: 'read a register',
      handler: ({ params }) => ({
        [params.register!]: readRegister(robot.motor(params.motor!), params.register!),
      }),
    },
    {
      method: 'POST',
      path: '/motors/:motor/registers/:register/value.json',
      summary: 'write a register (the body is the bare new value)',
      handler: ({ params, body }) => {
        const m = robot.motor(params.motor!);
        checkWritable(m, params.register!); // 404 or 403 before reading the body
        const value = bareValue(body, 'the body is the new value as JSON, for example 30 or true');
        return { [params.register!]: writeRegister(robot, m, params.register!, value) };
      },
    },
    {
      method: 'GET',
      path: '/motors/registers/:register/list.json',
      summary: 'one register of every motor that has it',
      handler: ({ params }) => {
        const reg = params.register!;
        const having = robot.motors.filter((m) => m.hasRegister(reg));
        if (!having.length)
          throw notFound(
            `no motor has a register "${reg}"`,
            "GET /motors/<motor>/registers/list.json lists a motor's registers",
          );
        return { [reg]: Object.fromEntries(having.map((m) => [m.name, readRegister(m, reg)])) };
      },
    },
    {
      method: 'POST',
      path: '/motors/:motor/goto.json',
      summary: 'move one motor to a position over a duration',
      handler: async ({ params, body, clientGone }) => {
        const m = robot.motor(params.motor!);
        const b = objectBody(body, GOTO_TIP);
        if (b.position === undefined) throw badRequest('position is missing', GOTO_TIP);
        const position = parseNumber(b.position, 'position');
        const duration = parseDuration(b.duration);
        return gotoAnswer(robot, new Map([[m, position]]), duration, parseWait(b.wait), clientGone);
      },
    },
    {
      method: 'POST',
      path: '/motors/goto.json',
      summary: 'move several motors to positions over a duration',
      handler: async ({ body, clientGone }) => {
        const b = objectBody(body, MULTI_GOTO_TIP);
        if (!Array.isArray(b.motors))
          throw badRequest(
            'motors must be an array of motor names',
            MULTI_GOTO_TIP,
            `got ${describe(b.motors)}`,
          );
        if (!Array.isArray(b.positions))
          throw badRequest(
            'positions must be an array of numbers',
            MULTI_GOTO_TIP,
            `got ${describe(b.positions)}`,
          );
        if (b.motors.length !== b.positions.length)
          throw badRequest(
            'motors and positions must have the same length',
            MULTI_GOTO_TIP,
            `${b.motors.length} motors, ${b.positions.length} positions`,
          );
        if (!b.motors.length) throw badRequest('motors is empty', MULTI_GOTO_TIP);
        const positions: unknown[] = b.positions;
        const targets = new Map<Motor, number>();
        b.motors.forEach((name, i) => {
          if (typeof name !== 'string')
            throw badRequest(`motors[${i}] must be a motor name`, MULTI_GOTO_TIP, `got ${describe(name)}`);
          const m = robot.motor(name);
          if (targets.has(m)) throw badRequest(`motor "${name}" is listed twice`, MULTI_GOTO_TIP);
          targets.set(m, parseNumber(positions[i], `positions[${i}]`));
        });
        const duration = parseDuration(b.duration);
        return gotoAnswer(robot, targets, duration, parseWait(b.wait), clientGone);
      },
    },
  ];
}
