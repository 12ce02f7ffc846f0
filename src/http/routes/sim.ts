import { z } from 'zod';
import type { SimulationControls } from '../../core/backend.ts';
import type { Robot } from '../../robot/robot.ts';
import { route, type RouteSpec } from '../route.ts';
import { duration, lenientNumber, wait } from '../schema.ts';

const HAND_TIP = 'send {"position": 30, "duration": 2, "wait": true} (user degrees, seconds of sim time)';

const handBody = z.object({
  position: lenientNumber.meta({ description: 'where the hand drags the joint, degrees (user frame)' }),
  duration,
  wait,
});

/** Routes that exist only when the backend is a simulation (the hand in the twin, sim status). */
export function simRoutes(robot: Robot, sim: SimulationControls): RouteSpec[] {
  return [
    route({
      method: 'POST',
      path: '/sim/motors/:motor/hand.json',
      summary: 'sim only: a hand drags a joint towards a position over a duration (a stiff motor resists)',
      simOnly: true,
      beyondV4: true,
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
      method: 'GET',
      path: '/sim/status.json',
      summary: 'sim only: sim time, physics steps, speed setting and real-time factor',
      simOnly: true,
      beyondV4: true,
      answer: z.object({
        sim_time: z.number(),
        steps: z.number(),
        wall_time: z.number(),
        speed: z.union([z.number(), z.string()]),
        real_time_factor: z.number(),
      }),
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
    }),
  ];
}
