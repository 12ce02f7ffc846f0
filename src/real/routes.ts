/** Routes of the real bus only: per-motor error counts (README "Running on a real robot"). */
import type { RouteSpec } from '../http/route.ts';
import type { RealBackend } from './backend.ts';

export function busRoutes(backend: RealBackend): RouteSpec[] {
  return [
    {
      method: 'GET',
      path: '/bus/health.json',
      summary:
        'real bus: per-motor error counts (timeouts, corrupt replies, servo error bits) and who answers',
      handler: () => ({
        port: backend.link.opts.path,
        baud: backend.link.opts.baud,
        protocol: backend.link.protocol,
        transactions: backend.link.stats.transactions,
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
    },
  ];
}
