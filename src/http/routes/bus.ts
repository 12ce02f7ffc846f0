/** Routes of the real bus only: per-motor error counts (docs/real-robot.md). */
import { z } from 'zod';
import { hardwareError, notFound } from '../../core/errors.ts';
import { route, type RouteSpec } from '../route.ts';
import type { RealBackend } from '../../real/backend.ts';

const count = z.number().int().nonnegative();

const healthAnswer = z.object({
  port: z.string().meta({ description: 'the serial device' }),
  baud: z.number(),
  protocol: z.union([z.literal(1), z.literal(2)]).meta({ description: 'Dynamixel protocol 1.0 or 2.0' }),
  transactions: count.meta({ description: 'bus transactions since start' }),
  read_mode: z.enum(['sync', 'bulk', 'single']).meta({
    description:
      "how the loop reads the motors: one sync read (2.0) or bulk read (1.0) a cycle, or single reads when the adapter or the servos' firmware leaves it unanswered at start-up",
  }),
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
      errors: z.array(z.string()).meta({
        description:
          'what its latest status packet reports of its state: overload, overheating, input_voltage, angle_limit, hardware_alert (empty: none)',
      }),
      read: z
        .enum(['sync', 'bulk', 'single'])
        .meta({ description: 'in the sync read, the bulk read, or read on its own' }),
    }),
  ),
});

const rebootAnswer = z.object({
  motor: z.string(),
  id: z.number().int(),
  rebooted: z.literal(true).meta({ description: 'it answered again and was configured as before' }),
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
        read_mode: backend.readMode,
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
          errors: h.conditions,
          read: h.read,
        })),
      }),
    }),
    route({
      method: 'POST',
      path: '/bus/motors/:motor/reboot.json',
      summary:
        'real bus, protocol 2.0: reboots a servo (a hardware alert cleared), then configures it as before (angle limits, return delay, torque and goal)',
      beyondV4: true,
      answer: rebootAnswer,
      handler: async ({ params }) => {
        const h = [...backend.health.values()].find((m) => m.name === params.motor);
        if (!h) throw notFound(`no motor named ${params.motor}`, 'GET /motors/list.json lists them');
        if (!(await backend.reboot(h.id)))
          throw hardwareError(
            `motor ${h.name} (id ${h.id}) did not answer after its reboot`,
            'check its power and cable; GET /bus/health.json',
          );
        return { motor: h.name, id: h.id, rebooted: true };
      },
    }),
  ];
}
