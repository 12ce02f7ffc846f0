import os from 'node:os';
import type { Robot } from '../../robot/robot.ts';
import {
  type ChangeCounter,
  type PrimitiveCatalogue,
  cachedBytes,
  robotJsonWriter,
} from '../robot-answer.ts';
import { z } from 'zod';
import { RawReply, route, type RouteSpec } from '../route.ts';

export type PrimitiveListing = PrimitiveCatalogue<{ readonly name: string; readonly running: boolean }>;

/** The host's first non-internal IPv4 address, 127.0.0.1 when there is none. */
export function hostIp(): string {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

export function miscRoutes(robot: Robot, primitives: PrimitiveListing, changes?: ChangeCounter): RouteSpec[] {
  const robotJson = cachedBytes(robotJsonWriter(robot, primitives, changes));
  return [
    route({
      method: 'GET',
      path: '/robot.json',
      summary: 'every motor with every register (but safe_compliant), and every primitive',
      answer: z.object({
        motors: z.array(z.record(z.string(), z.unknown())),
        primitives: z.array(
          z.object({
            primitive: z.string(),
            running: z.boolean(),
            properties: z.array(z.string()),
            methods: z.array(z.string()),
          }),
        ),
      }),
      handler: () => new RawReply('application/json; charset=utf-8', robotJson()),
    }),
    route({
      method: 'GET',
      path: '/ip.json',
      summary: "the robot's IP address (its first non-internal IPv4; 127.0.0.1 when none)",
      answer: z.object({ ip: z.string() }),
      examples: { answer: { ip: '192.168.1.42' } },
      handler: () => ({ ip: hostIp() }),
    }),
  ];
}
