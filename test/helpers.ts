import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { createRobotServer, type RobotServer, type ServerOptions } from '../src/server.ts';

export type TestServer = RobotServer & {
  /** Advances sim time (manual speed). */
  advance(seconds: number): Promise<void>;
  get(url: string): Promise<LightMyRequestResponse>;
  post(url: string, body?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
};

/** A sim server whose time moves only when the test advances it. */
export async function simServer(robot: string, opts: Partial<ServerOptions> = {}): Promise<TestServer> {
  const server = await createRobotServer({ backend: 'sim', robot, speed: 'manual', ...opts });
  const sim = server.backend.simulation!;
  return Object.assign(server, {
    advance: (s: number) => sim.advance(s),
    get: (url: string) => server.app.inject({ method: 'GET', url }),
    post: (url: string, body?: unknown, headers: Record<string, string> = {}) =>
      server.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json', ...headers },
        payload: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      }),
  });
}

/** Sends a request and advances sim time until it answers (for `wait` requests). */
export async function untilAnswered(
  server: TestServer,
  request: Promise<LightMyRequestResponse>,
  maxSeconds = 30,
  step = 0.05,
): Promise<LightMyRequestResponse> {
  let answer: LightMyRequestResponse | undefined;
  void request.then((r) => (answer = r));
  for (let t = 0; t < maxSeconds && !answer; t += step) await server.advance(step);
  await new Promise((r) => setImmediate(r));
  if (!answer) throw new Error(`no answer within ${maxSeconds} s of sim time`);
  return answer;
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
