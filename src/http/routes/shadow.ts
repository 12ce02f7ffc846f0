/** Shadow mode's routes (docs/shadow.md): the twin's comparison with the real robot. */
import { z } from 'zod';
import { badRequest, notFound } from '../../core/errors.ts';
import { route, type RouteSpec } from '../route.ts';
import type { ShadowTwin } from '../../shadow/twin.ts';

const reading = z
  .object({
    position: z.number().meta({ description: "degrees, the user's frame (as /motors/<m>/...)" }),
    speed: z.number().meta({ description: 'degrees per second' }),
    load: z.number().meta({ description: '% of the torque available, signed' }),
  })
  .nullable();
const kind = z.enum(['blocked', 'pushed', 'weak', 'offset', 'offline']);
const event = z.object({
  motor: z.string(),
  kind,
  since: z.number().meta({ description: 'when the divergence began, seconds since the server started' }),
  until: z.number().nullable().meta({ description: 'when it cleared; null while active' }),
  real: reading,
  twin: reading,
  band: z.number().meta({ description: 'the position band (degrees) when it was raised' }),
});
const statusAnswer = z.object({
  time: z.number().meta({ description: 'seconds since the server started' }),
  motors: z.array(
    z.object({
      motor: z.string(),
      real: reading,
      twin: reading,
      error: z.number().nullable().meta({ description: 'real - twin position, degrees' }),
      band: z.number().meta({ description: 'the position band now: dead band + lag behind a moving goal' }),
      deadBand: z.number().meta({
        description: "the band's dead band, degrees: 3, or from the loaded calibration's fit residual",
      }),
      restBand: z.number().meta({
        description:
          "how far from its goal the servo's gearbox may hold a still joint with no load, degrees (its model with the calibration's friction and gain, at its P gain now)",
      }),
      restSpan: z.tuple([z.number(), z.number()]).nullable().meta({
        description:
          "where the twin's gearbox can hold the joint still now, degrees (low, high): about the point where its P loop bears the weight of the links, and about the goal too with an I term; two still joints both within it agree however far apart. null: no goal",
      }),
      state: z.enum(['agree', 'diverging', 'compliant', 'paused', 'touching', ...kind.options]).meta({
        description:
          'paused: a calibration run drives the servos, nothing is judged (POST /calibration/run.json); touching: beyond the band where a contact holds the push (the twin alone, the robot where the twin links come within 10 mm of it, or both): no event',
      }),
    }),
  ),
  events: z.array(event).meta({ description: 'the active events' }),
});

const TIP_OFF =
  'start the server with --backend=real --shadow (or "shadow": true in the robot config) to run the twin beside the robot';
const TIP_SIM = 'shadow mode runs a twin beside a real robot; on --backend=sim the robot is the twin';

/** `shadow` undefined: the routes answer 404 with a tip saying why (`backend` tells which tip). */
export function shadowRoutes(shadow: ShadowTwin | undefined, backend: 'sim' | 'real'): RouteSpec[] {
  const need = (): ShadowTwin => {
    if (shadow) return shadow;
    throw notFound('shadow mode is off', backend === 'sim' ? TIP_SIM : TIP_OFF);
  };
  return [
    route({
      method: 'GET',
      path: '/shadow/status.json',
      summary: 'shadow mode: per motor the real and twin readings, their difference, the band and the state',
      beyondV4: true,
      answer: statusAnswer,
      handler: () => need().status(),
    }),
    route({
      method: 'GET',
      path: '/shadow/events.json',
      summary:
        'shadow mode: divergence events raised or cleared after ?since=<seconds> (bounded, newest last)',
      beyondV4: true,
      answer: z.object({ time: z.number(), events: z.array(event) }),
      handler: ({ query }) => {
        const twin = need();
        let since = -Infinity;
        if (query.since !== undefined) {
          since = Number(query.since);
          if (query.since.trim() === '' || !Number.isFinite(since))
            throw badRequest(
              `since=${query.since} is not a number`,
              'give the time (seconds, as in "time" of an earlier answer) after which events are wanted',
            );
        }
        return { time: twin.status().time, events: twin.comparator.events(since) };
      },
    }),
  ];
}
