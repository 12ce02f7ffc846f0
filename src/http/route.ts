/** A route as the domain sees it: one call into the domain per handler, inputs already parsed at the edge. */
import type { Body } from './body.ts';

export interface RouteRequest {
  readonly params: Readonly<Record<string, string>>;
  readonly query: Readonly<Record<string, string>>;
  readonly body: Body;
  /** Aborts when the client goes away before the answer is sent (a `wait` then stops waiting). */
  readonly clientGone?: AbortSignal;
}

/** A non-JSON answer (the HTML index, PNG frames). */
export class RawReply {
  constructor(
    readonly contentType: string,
    readonly payload: string | Buffer,
  ) {}
}

export interface RouteSpec {
  readonly method: 'GET' | 'POST';
  /** Fastify path syntax (`:name` placeholders). */
  readonly path: string;
  /** One line for the index page. */
  readonly summary: string;
  readonly handler: (req: RouteRequest) => unknown;
  /** A GET that carries a body (REST-API.md 4.6 rpy.json); fastify does not parse GET bodies itself. */
  readonly getWithBody?: boolean;
}

/** `/motors/:motor/goto.json` -> `/motors/<motor>/goto.json`, as the API documents show it. */
export function displayPath(path: string): string {
  return path.replace(/:([A-Za-z_]+)/g, '<$1>');
}
