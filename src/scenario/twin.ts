/**
 * The twin for scenario scripts and tests: a sim server whose time moves only when the script says, with the same
 * REST API the real robot answers. A script checks a move or an IK target here before it is deployed.
 */
import type { LightMyRequestResponse } from 'fastify';
import { createRobotServer, type RobotServer, type ServerOptions } from '../server.ts';

export interface Twin extends RobotServer {
  /** Moves sim time forward (physics, control loop, primitives), firing timers in order. */
  advance(seconds: number): Promise<void>;
  get(url: string): Promise<LightMyRequestResponse>;
  post(url: string, body?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  /** Sends a request and advances sim time (through `advance`) until it is answered (`wait: true` requests). */
  untilAnswered(
    request: Promise<LightMyRequestResponse>,
    maxSeconds?: number,
    step?: number,
  ): Promise<LightMyRequestResponse>;
}

export async function openTwin(robot: string, opts: Partial<ServerOptions> = {}): Promise<Twin> {
  const server = await createRobotServer({ backend: 'sim', robot, speed: 'manual', ...opts });
  const sim = server.simulation;
  if (!sim) throw new Error('the twin needs the sim backend');
  // Custom primitives in worker threads load in the background; a script expects them listed once it has the twin
  // (and the app answers 503 until then).
  await server.readiness.whenReady();
  const twin: Twin = Object.assign(server, {
    advance: (s: number) => sim.advance(s),
    get: (url: string) => server.app.inject({ method: 'GET', url }),
    post: (url: string, body?: unknown, headers: Record<string, string> = {}) =>
      server.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json', ...headers },
        payload: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      }),
    untilAnswered: async (request: Promise<LightMyRequestResponse>, maxSeconds = 30, step = 0.05) => {
      let answer: LightMyRequestResponse | undefined;
      void request.then((r) => (answer = r));
      for (let t = 0; t < maxSeconds && !answer; t += step) await twin.advance(step);
      await new Promise((r) => setImmediate(r));
      if (!answer) throw new Error(`no answer within ${maxSeconds} s of sim time`);
      return answer;
    },
  });
  return twin;
}
