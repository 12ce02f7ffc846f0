import { z } from 'zod';
import type { SimulationControls } from '../../sim/controls.ts';
import type { Motor } from '../../robot/motor.ts';
import { writeRegister } from '../../robot/motor-registers.ts';
import type { Robot } from '../../robot/robot.ts';
import { route, type RouteSpec } from '../route.ts';
import { duration, lenientNumber, wait } from '../schema.ts';

const HAND_TIP = 'send {"position": 30, "duration": 2, "wait": true} (user degrees, seconds of sim time)';
const POSE_TIP =
  'send {"positions": {"m1": 30, "m2": -45}, "duration": 1, "wait": true} (user degrees, sim seconds)';
const COMPLIANT_TIP =
  'send {"compliant": true} (every motor limp) or {"compliant": false} (every motor stiff)';
const RELEASE_TIP = 'send {"motors": ["m1"]}, or no body to let go of everything';

const handBody = z.object({
  position: lenientNumber.meta({ description: 'where the hand drags the joint, degrees (user frame)' }),
  duration,
  wait,
});

const positions = z
  .record(z.string(), lenientNumber, { error: 'must be an object of motor names to degrees' })
  .refine((p) => Object.keys(p).length > 0, { error: 'must name at least one motor' })
  .meta({ description: 'motor -> degrees (user frame)', examples: [{ m1: 30, m2: -45 }] });

const handPoseBody = z.object({
  positions,
  duration: duration.default(1).meta({ description: 'seconds of sim time, default 1' }),
  wait,
});

const poseBody = z.object({ positions });

const releaseBody = z.object({
  motors: z
    .array(z.string({ error: 'must be a motor name' }), { error: 'must be an array of motor names' })
    .optional()
    .meta({ description: 'motors (or aliases) to let go of; default every motor' }),
});

const compliantBody = z.object({
  compliant: z.boolean({ error: 'must be true or false' }),
});

const holding = z.array(z.string()).meta({ description: 'motors the hand still holds' });
const motorPositions = z.record(z.string(), z.number()).meta({ description: 'motor -> degrees' });

const contact = z.object({
  a: z.string().meta({ description: "a URDF link, or 'table', 'floor', 'card:<name>'" }),
  b: z.string(),
  depth: z.number().meta({ description: 'deepest penetration, metres' }),
  impulse: z.number().meta({ description: 'normal impulse of the last step, N.s' }),
  point: z.array(z.number()).meta({ description: 'a contact point, world frame, metres' }),
});

/** {motor: user degrees} -> motors (404 for an unknown name). */
function poseOf(robot: Robot, p: Readonly<Record<string, number>>): Map<Motor, number> {
  return new Map(Object.entries(p).map(([name, deg]) => [robot.motor(name), deg]));
}

/**
 * Routes that exist only when the backend is a simulation: the hand in the twin (drag, hold, place, release), reset,
 * set a pose, every motor stiff or compliant, contacts and sim status.
 */
export function simRoutes(robot: Robot, sim: SimulationControls): RouteSpec[] {
  const marks = { simOnly: true, beyondV4: true } as const;
  return [
    route({
      method: 'POST',
      path: '/sim/motors/:motor/hand.json',
      summary: 'sim only: a hand drags a joint towards a position over a duration (a stiff motor resists)',
      ...marks,
      body: handBody,
      tip: HAND_TIP,
      answer: z.object({
        motor: z.string(),
        position: z.number(),
        duration: z.number(),
        waiting: z.boolean(),
      }),
      examples: {
        body: { position: 30, duration: 2, wait: true },
        answer: { motor: 'm1', position: 30, duration: 2, waiting: true },
      },
      handler: async ({ params, body }) => {
        const m = robot.motor(params.motor);
        const done = sim.hand.drag(m.id, m.toRaw(body.position), body.duration);
        if (body.wait) await done;
        else done.catch(() => undefined);
        return { motor: m.name, position: body.position, duration: body.duration, waiting: body.wait };
      },
    }),
    route({
      method: 'POST',
      path: '/sim/hand/hold.json',
      summary:
        'sim only: the hand takes joints to a pose over a duration and keeps holding them there until released',
      ...marks,
      body: handPoseBody,
      tip: POSE_TIP,
      answer: z.object({ holding, duration: z.number(), waiting: z.boolean() }),
      examples: {
        body: { positions: { m2: 30 }, duration: 1, wait: true },
        answer: { holding: ['m2'], duration: 1, waiting: true },
      },
      handler: async ({ body }) => {
        const pose = poseOf(robot, body.positions);
        const arrived = Promise.all(
          [...pose].map(([m, p]) => sim.hand.hold(m.id, m.toRaw(p), body.duration)),
        );
        if (body.wait) await arrived;
        else arrived.catch(() => undefined);
        return { holding: names(robot, sim.hand.holding()), duration: body.duration, waiting: body.wait };
      },
    }),
    route({
      method: 'POST',
      path: '/sim/hand/place.json',
      summary: 'sim only: the hand takes joints to a pose over a duration, then lets go (a taught pose)',
      ...marks,
      body: handPoseBody,
      tip: POSE_TIP,
      answer: z.object({ motors: motorPositions, duration: z.number(), waiting: z.boolean() }),
      examples: {
        body: { positions: { m2: 30 }, duration: 1, wait: true },
        answer: { motors: { m2: 30 }, duration: 1, waiting: true },
      },
      handler: async ({ body }) => {
        const pose = poseOf(robot, body.positions);
        const done = Promise.all([...pose].map(([m, p]) => sim.hand.drag(m.id, m.toRaw(p), body.duration)));
        if (body.wait) await done;
        else done.catch(() => undefined);
        return {
          motors: Object.fromEntries([...pose].map(([m, p]) => [m.name, p])),
          duration: body.duration,
          waiting: body.wait,
        };
      },
    }),
    route({
      method: 'POST',
      path: '/sim/hand/release.json',
      summary: 'sim only: the hand lets go of the given motors ({"motors": [...]}), or of every motor',
      ...marks,
      body: releaseBody,
      tip: RELEASE_TIP,
      answer: z.object({ holding }),
      examples: { body: { motors: ['m2'] }, answer: { holding: [] } },
      handler: ({ body }) => {
        const ids = body.motors && robot.resolveMotors(body.motors).map((m) => m.id);
        sim.hand.release(ids);
        return { holding: names(robot, sim.hand.holding()) };
      },
    }),
    route({
      method: 'POST',
      path: '/sim/reset.json',
      summary:
        'sim only: the twin back to its start pose, every joint still and every motor compliant ' +
        '(limp, it then settles as at start-up); the hand lets go',
      ...marks,
      answer: z.object({ reset: z.boolean(), sim_time: z.number() }),
      handler: () => {
        for (const m of robot.motors) {
          robot.cancelMotion(m);
          writeRegister(robot, m, 'compliant', true);
        }
        sim.reset();
        return { reset: true, sim_time: sim.stats().simTime };
      },
    }),
    route({
      method: 'POST',
      path: '/sim/pose.json',
      summary: 'sim only: puts joints at a pose at once, at rest (a teleport); stiff motors hold it',
      ...marks,
      body: poseBody,
      tip: POSE_TIP,
      answer: z.object({ motors: motorPositions }),
      examples: { body: { positions: { m2: 30 } }, answer: { motors: { m2: 30 } } },
      handler: ({ body }) => {
        const pose = poseOf(robot, body.positions);
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
    }),
    route({
      method: 'POST',
      path: '/sim/motors/compliant.json',
      summary:
        'sim only: every motor compliant ({"compliant": true}) or stiff ({"compliant": false}) in one call',
      ...marks,
      body: compliantBody,
      tip: COMPLIANT_TIP,
      answer: z.object({ compliant: z.boolean(), motors: z.array(z.string()) }),
      examples: { body: { compliant: false }, answer: { compliant: false, motors: ['m1', 'm2'] } },
      handler: ({ body }) => {
        for (const m of robot.motors) writeRegister(robot, m, 'compliant', body.compliant);
        return { compliant: body.compliant, motors: robot.motors.map((m) => m.name) };
      },
    }),
    route({
      method: 'GET',
      path: '/sim/contacts.json',
      summary:
        'sim only: the contacts of the last physics step (links or table, depth m, impulse N.s, point m)',
      ...marks,
      answer: z.object({ contacts: z.array(contact) }),
      handler: () => ({ contacts: sim.contacts() }),
    }),
    route({
      method: 'GET',
      path: '/sim/status.json',
      summary:
        'sim only: sim time, physics steps (and those spent at rest, the solver not run), speed setting and real-time factor',
      ...marks,
      answer: z.object({
        sim_time: z.number(),
        steps: z.number(),
        resting_steps: z.number(),
        wall_time: z.number(),
        speed: z.union([z.number(), z.string()]),
        real_time_factor: z.number(),
      }),
      handler: () => {
        const s = sim.stats();
        return {
          sim_time: s.simTime,
          steps: s.steps,
          resting_steps: s.restingSteps,
          wall_time: s.wallTime,
          speed: sim.speed,
          real_time_factor: sim.realTimeFactor(),
        };
      },
    }),
  ];
}

function names(robot: Robot, ids: readonly number[]): string[] {
  return robot.motors.filter((m) => ids.includes(m.id)).map((m) => m.name);
}
