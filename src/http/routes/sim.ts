import type { SimulationControls } from '../../core/backend.ts';
import { badRequest } from '../../core/errors.ts';
import { parseDuration, parseNumber, parseWait } from '../../core/values.ts';
import type { Robot } from '../../robot/robot.ts';
import { objectBody } from '../body.ts';
import type { RouteSpec } from '../route.ts';

const HAND_TIP = 'send {"position": 30, "duration": 2, "wait": true} (user degrees, seconds of sim time)';

/** Routes that exist only when the backend is a simulation (the hand in the twin, sim status). */
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
