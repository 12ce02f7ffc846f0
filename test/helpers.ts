import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { ServerOptions } from '../src/server.ts';
import { openTwin, type Twin } from '../src/scenario/twin.ts';

export type TestServer = Twin;

/** A sim server whose time moves only when the test advances it. */
export function simServer(robot: string, opts: Partial<ServerOptions> = {}): Promise<TestServer> {
  return openTwin(robot, opts);
}

/** Sends a request and advances sim time until it answers (for `wait` requests). */
export function untilAnswered(
  server: TestServer,
  request: Promise<LightMyRequestResponse>,
  maxSeconds = 30,
  step = 0.05,
): Promise<LightMyRequestResponse> {
  return server.untilAnswered(request, maxSeconds, step);
}

export function json(res: LightMyRequestResponse): Record<string, unknown> {
  return res.json() as Record<string, unknown>;
}

export async function value(server: TestServer, motor: string, reg: string): Promise<unknown> {
  const res = await server.get(`/motors/${motor}/registers/${reg}/value.json`);
  if (res.statusCode !== 200) throw new Error(`${reg} of ${motor}: ${res.statusCode} ${res.body}`);
  return json(res)[reg];
}

export async function setValue(
  server: TestServer,
  motor: string,
  reg: string,
  v: unknown,
): Promise<LightMyRequestResponse> {
  return server.post(`/motors/${motor}/registers/${reg}/value.json`, v);
}

export type { FastifyInstance };

/**
 * Puts the sim robot upright and stiff at `pose` (default every motor at 0) and lets it settle. Since the twin has a
 * table and servos as weak as the real ones, a robot left limp lies on the table: a joint driven while the others
 * are limp drags them along the table, as the real robot would. Tests of a motor's own motion start from here.
 */
export async function standStill(
  server: TestServer,
  pose?: Readonly<Record<string, number>>,
  settleSeconds = 2,
): Promise<void> {
  const positions = pose ?? Object.fromEntries(server.robot.motors.map((m) => [m.name, 0]));
  for (const res of [
    await server.post('/sim/motors/compliant.json', { compliant: false }),
    await server.post('/sim/pose.json', { positions }),
  ])
    if (res.statusCode !== 200) throw new Error(`standStill: ${res.statusCode} ${res.body}`);
  await server.advance(settleSeconds);
}

/** Polls `probe` in real time until it gives a value, or fails naming `what` after `ms` (hardware-like tests). */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms = 8000,
  pollMs = 20,
): Promise<T> {
  const end = performance.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
