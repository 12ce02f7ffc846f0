/** The orchestrator's probes (not in REST API 4.0.0): alive, and ready to answer with everything loaded. */
import { z } from 'zod';
import { RobotError } from '../../core/errors.ts';
import type { Readiness } from '../readiness.ts';
import { route, type RouteSpec } from '../route.ts';

export const HEALTH_PATH = '/healthz';
export const READY_PATH = '/readyz';

/** 503 while a part of the server is still loading: what, and when to come back. */
export function notReady(readiness: Readiness): RobotError {
  return new RobotError(
    'unavailable',
    `the server is starting: waiting for ${readiness.waitingFor.join(', ')}`,
    'retry in a moment: GET /readyz answers 200 once the server is ready',
    'every route but /healthz answers 503 until then, so that no client sees a robot without its custom primitives',
  );
}

export function healthRoutes(readiness: Readiness): RouteSpec[] {
  return [
    route({
      method: 'GET',
      path: HEALTH_PATH,
      summary: 'alive: the process answers (a liveness probe); 200 as soon as it listens',
      beyondV4: true,
      answer: z.object({ status: z.literal('alive') }),
      handler: () => ({ status: 'alive' }),
    }),
    route({
      method: 'GET',
      path: READY_PATH,
      summary: 'ready: the robot started and its custom primitives loaded (a readiness probe); 503 before',
      description:
        'Until the server is ready this answers 503 with what it waits for, as does every route but /healthz.',
      beyondV4: true,
      answer: z.object({ status: z.literal('ready') }),
      // The app's gate answers the 503 (with Retry-After) while not ready; this check stands for apps without it.
      handler: () => {
        if (!readiness.ready) throw notReady(readiness);
        return { status: 'ready' };
      },
    }),
  ];
}
