import type { SimulationControls } from '../../core/backend.ts';
import { badRequest } from '../../core/errors.ts';
import { parseDuration, parseNumber, parseWait } from '../../core/values.ts';
import type { Robot } from '../../robot/robot.ts';
import type { Motor } from '../../robot/motor.ts';
import { writeRegister } from '../../robot/motor-registers.ts';
import { objectBody } from '../body.ts';
import type { RouteSpec } from '../route.ts';

const HAND_TIP = 'send {"position": 30, "duration": 2, "wait": true} (user degrees, seconds of sim time)';
const POSE_TIP =
  'send {"positions": {"m1": 30, "m2": -45}, "duration": 1, "wait": true} (user degrees, sim seconds)';
const COMPLIANT_TIP =
  'send {"compliant": true} (every motor limp) or {"compliant": false} (every motor stiff)';

/** {"positions": {motor: user degrees}} -> motors and positions; unknown motors and bad numbers are refused. */
function parsePose(robot: Robot, b: Record<string, unknown>): Map<Motor, number> {
  const raw = b.positions;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw) || Object.keys(raw).length === 0)
    throw badRequest('positions must be an object of motor names to degrees', POSE_TIP);
  const out = new Map<Motor, number>();
  for (const [name, value] of Object.entries(raw as Record<string, unknown>))
    out.set(robot.motor(name), parseNumber(value, `positions.${name}`));
  return out;
}

/**
 * Routes that exist only when the backend is a simulation: the hand in the twin (drag, hold, place, release), reset,
 * set a pose, every motor stiff or compliant, contacts and sim status.
 */
export function simRoutes(robot: Robot, sim: SimulationControls): RouteSpec[] {
  return [
    {
      method: 'POST',
      path: '/sim/motors/:motor/hand.json',
      summary: 'sim only: a hand drags a joint towards a position over a duration (a stiff motor resists)',
      handler: async ({ params, body }) => {
        const m = robot.motor(params.motor!);
        const b = objectBody(body, HAND_TIP);
        if (b.position === undefined) throw badRequest('position is missing', HAND_TIP);
        const position = parseNumber(b.position, 'position');
        const duration = parseDuration(b.duration);
        const wait = parseWait(b.wait);
        const done = sim.hand.drag(m.id, m.toRaw(position), duration);
        if (wait) await done;
        else done.catch(() => undefined);
        return { motor: m.name, position, duration, waiting: wait };
      },
    },
    {
      method: 'POST',
      path: '/sim/hand/hold.json',
      summary:
        'sim only: the hand takes joints to a pose over a duration and keeps holding them there until released',
      handler: async ({ body }) => {
        const b = objectBody(body, POSE_TIP);
        const pose = parsePose(robot, b);
        const duration = b.duration === undefined ? 1 : parseDuration(b.duration);
        const wait = parseWait(b.wait);
        const arrived = Promise.all([...pose].map(([m, p]) => sim.hand.hold(m.id, m.toRaw(p), duration)));
        if (wait) await arrived;
        else arrived.catch(() => undefined);
        return { holding: names(robot, sim.hand.holding()), duration, waiting: wait };
      },
    },
    {
      method: 'POST',
      path: '/sim/hand/place.json',
      summary: 'sim only: the hand takes joints to a pose over a duration, then lets go (a taught pose)',
      handler: async ({ body }) => {
        const b = objectBody(body, POSE_TIP);
        const pose = parsePose(robot, b);
        const duration = b.duration === undefined ? 1 : parseDuration(b.duration);
        const wait = parseWait(b.wait);
        const done = Promise.all([...pose].map(([m, p]) => sim.hand.drag(m.id, m.toRaw(p), duration)));
        if (wait) await done;
        else done.catch(() => undefined);
        return {
          motors: Object.fromEntries([...pose].map(([m, p]) => [m.name, p])),
          duration,
          waiting: wait,
        };
      },
    },
    {
      method: 'POST',
      path: '/sim/hand/release.json',
      summary: 'sim only: the hand lets go of the given motors ({"motors": [...]}), or of every motor',
      handler: ({ body }) => {
        const b = objectBody(body, 'send {"motors": ["m1"]} or no body to let go of everything');
        let ids: number[] | undefined;
        if (b.motors !== undefined) {
          if (!Array.isArray(b.motors))
            throw badRequest('motors must be an array of motor names', '{"motors": ["m1"]}');
          ids = robot.resolveMotors(b.motors.map(String)).map((m) => m.id);
        }
        sim.hand.release(ids);
        return { holding: names(robot, sim.hand.holding()) };
      },
    },
    {
      method: 'POST',
      path: '/sim/reset.json',
      summary: 'sim only: the twin back to its start pose, at rest, every motor compliant; the hand lets go',
      handler: () => {
        for (const m of robot.motors) {
          robot.cancelMotion(m);
          writeRegister(robot, m, 'compliant', true);
        }
        sim.reset();
        return { reset: true, sim_time: sim.stats().simTime };
      },
    },
    {
      method: 'POST',
      path: '/sim/pose.json',
      summary: 'sim only: puts joints at a pose at once, at rest (a teleport); stiff motors hold it',
      handler: ({ body }) => {
        const pose = parsePose(robot, objectBody(body, POSE_TIP));
        const rawDeg = new Map<number, number>();
        for (const [m, p] of pose) {
          robot.cancelMotion(m);
          rawDeg.set(m.id, m.toRaw(m.clampAngle(p)));
        }
        sim.setPose(rawDeg);
        // A stiff motor's goal moves with it, or it would pull the joint back where it was.
        for (const [m, p] of pose) if (!m.commands.compliant) writeRegister(robot, m, 'goal_position', p);
        return { motors: Object.fromEntries([...pose].map(([m, p]) => [m.name, m.clampAngle(p)])) };
      },
    },
    {
      method: 'POST',
      path: '/sim/motors/compliant.json',
      summary:
        'sim only: every motor compliant ({"compliant": true}) or stiff ({"compliant": false}) in one call',
      handler: ({ body }) => {
        const b = objectBody(body, COMPLIANT_TIP);
        if (typeof b.compliant !== 'boolean')
          throw badRequest('compliant must be true or false', COMPLIANT_TIP);
        for (const m of robot.motors) writeRegister(robot, m, 'compliant', b.compliant);
        return { compliant: b.compliant, motors: robot.motors.map((m) => m.name) };
      },
    },
    {
      method: 'GET',
      path: '/sim/contacts.json',
      summary:
        'sim only: the contacts of the last physics step (links or table, depth m, impulse N.s, point m)',
      handler: () => ({ contacts: sim.contacts() }),
    },
    {
      method: 'GET',
      path: '/sim/status.json',
      summary: 'sim only: sim time, physics steps, speed setting and real-time factor',
      handler: () => {
        const s = sim.stats();
        return {
          sim_time: s.simTime,
          steps: s.steps,
          wall_time: s.wallTime,
          speed: sim.speed,
          real_time_factor: sim.realTimeFactor(),
        };
      },
    },
  ];
}

function names(robot: Robot, ids: readonly number[]): string[] {
  return robot.motors.filter((m) => ids.includes(m.id)).map((m) => m.name);
}
