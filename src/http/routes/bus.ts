/** Routes of the real bus only: per-motor error counts (README "Running on a real robot"). */
import { z } from 'zod';
import { route, type RouteSpec } from '../route.ts';
import type { RealBackend } from '../../real/backend.ts';

const count = z.number().int().nonnegative();

const healthAnswer = z.object({
  port: z.string().meta({ description: 'the serial device' }),
  baud: z.number(),
  protocol: z.union([z.literal(1), z.literal(2)]).meta({ description: 'Dynamixel protocol 1.0 or 2.0' }),
  transactions: count.meta({ description: 'bus transactions since start' }),
  motors: z.array(
    z.object({
      name: z.string(),
      id: z.number().int(),
      model: z.string(),
      online: z
        .boolean()
        .meta({ description: 'answered its last transaction (false: its routes answer 503)' }),
      timeouts: count.meta({ description: 'replies that did not come in time (each one, retried or not)' }),
      corrupt: count.meta({
        description: 'replies with a bad checksum or length (each one, retried or not)',
      }),
      status_errors: count.meta({
        description: 'replies carrying servo error bits (overload, overheating...)',
      }),
      failed_reads: count.meta({ description: 'reads that failed after their retry' }),
      last_error: z.string().nullable(),
    }),
  ),
});

export function busRoutes(backend: RealBackend): RouteSpec[] {
  return [
    route({
      method: 'GET',
      path: '/bus/health.json',
      summary:
        'real bus: per-motor error counts (timeouts, corrupt replies, servo error bits) and who answers',
      beyondV4: true,
      answer: healthAnswer,
      handler: () => ({
        port: backend.port.path,
        baud: backend.port.baud,
        protocol: backend.port.protocol,
        transactions: backend.stats.transactions,
        motors: [...backend.health.values()].map((h) => ({
          name: h.name,
          id: h.id,
          model: h.model,
          online: h.online,
          timeouts: h.timeouts,
          corrupt: h.corrupt,
          status_errors: h.statusErrors,
          failed_reads: h.failedReads,
          last_error: h.lastError,
        })),
      }),
    }),
  ];
}
