/**
 * A route as the domain sees it: one call into the domain per handler, inputs already parsed at the edge.
 * Routes declare their body and answer as zod schemas (src/http/schema.ts): the app validates the body with it
 * before the handler runs, hands the handler the typed result, and documents both in the OpenAPI document.
 * The schema fields are optional, so a route written without them still works (its handler reads the raw Body)
 * and is still served and documented.
 */
import type { ServerResponse } from 'node:http';
import type { z } from 'zod';
import type { Body } from './body.ts';

export interface RouteRequest {
  readonly params: Readonly<Record<string, string>>;
  readonly query: Readonly<Record<string, string>>;
  readonly body: Body;
  /** Aborts when the client goes away before the answer is sent (a `wait` then stops waiting). */
  readonly clientGone?: AbortSignal;
  /** The request's headers (lower-case names). */
  readonly headers?: Readonly<Record<string, string | string[] | undefined>>;
}

/** A request as fastify hands it to a route's handler: its parts, and an abort signal made only when asked for. */
export class IncomingRequest implements RouteRequest {
  #gone: AbortController | undefined;
  constructor(
    readonly params: Readonly<Record<string, string>>,
    readonly query: Readonly<Record<string, string>>,
    readonly body: Body,
    readonly response: ServerResponse,
  ) {}

  get headers(): Readonly<Record<string, string | string[] | undefined>> {
    return this.response.req.headers;
  }

  get clientGone(): AbortSignal {
    if (!this.#gone) {
      const gone = (this.#gone = new AbortController());
      const response = this.response;
      response.once('close', () => {
        if (!response.writableFinished) gone.abort();
      });
    }
    return this.#gone.signal;
  }
}

/** Counts one route's answers: method, status, milliseconds from arrival, URL. */
export type RouteAnswerCounter = (method: string, status: number, elapsedMs: number, url: string) => void;

/** Who counts the answers (the metrics). */
export interface AnswerCounter {
  /** Made once per route, when it is added: a request costs no lookup of its route. */
  forRoute(path: string): RouteAnswerCounter;
  unmatched: RouteAnswerCounter;
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
  /** One line for the index page and the OpenAPI summary. */
  readonly summary: string;
  readonly handler: (req: RouteRequest) => unknown;
  /** A GET that carries a body (docs/reference/rest-api.md 4.6 rpy.json); fastify does not parse GET bodies itself. */
  readonly getWithBody?: boolean;
  /**
   * The body, an object of fields after the lenient reading (no body = {}, form fields, JSON object); when set,
   * the handler receives the parsed value as `body`.
   */
  readonly body?: z.ZodType;
  /**
   * A body that is one bare value (register and property writes), documented only: its type depends on the
   * register or property, so the handler reads it (`bareValue`) after the lookups that may answer 404 or 403.
   */
  readonly bareBody?: z.ZodType;
  /** The tip of a 400 when the body does not fit `body`. */
  readonly tip?: string;
  /** The success answer. */
  readonly answer?: z.ZodType;
  /** The success status, when not 200 (202: accepted, it goes on in the background). */
  readonly status?: 200 | 202;
  /** The content type of an answer that is not JSON (a RawReply: the index page, PNG frames, the view's files). */
  readonly produces?: string;
  /** Examples for the OpenAPI document. */
  readonly examples?: { readonly body?: unknown; readonly answer?: unknown };
  /** Longer text for the OpenAPI document. */
  readonly description?: string;
  /** A GET that changes the robot (primitive start, stop...): counted as a change like a POST. */
  readonly action?: boolean;
  /** Only on the sim backend. */
  readonly simOnly?: boolean;
  /** Not in REST API 4.0.0: this server's addition. */
  readonly beyondV4?: boolean;
}

/** `'/motors/:motor/registers/:register/value.json'` -> `'motor' | 'register'`; `'/sensors/code/:code.json'` -> `'code'`. */
export type ParamNames<P extends string> = P extends `${string}:${infer N}/${infer Rest}`
  ? N | ParamNames<`/${Rest}`>
  : P extends `${string}:${infer N}`
    ? N extends `${infer Name}.${string}`
      ? Name
      : N
    : never;

export interface TypedRouteRequest<P extends string, B> {
  readonly params: Readonly<Record<ParamNames<P>, string>>;
  readonly query: Readonly<Record<string, string>>;
  readonly body: B;
  /** Aborts when the client goes away before the answer is sent (a `wait` then stops waiting). */
  readonly clientGone?: AbortSignal;
}

export type TypedRoute<P extends string, S extends z.ZodType | undefined> = Omit<
  RouteSpec,
  'path' | 'handler' | 'body'
> & {
  readonly path: P;
  readonly body?: S;
  readonly handler: (req: TypedRouteRequest<P, S extends z.ZodType ? z.output<S> : Body>) => unknown;
};

/** A route with typed params (from its path) and a typed body (from its schema). */
export function route<P extends string, S extends z.ZodType | undefined = undefined>(
  spec: TypedRoute<P, S>,
): RouteSpec {
  // The app passes the schema's output as `body` when `body` is set, the raw Body otherwise.
  return spec as unknown as RouteSpec;
}

/** `/motors/:motor/goto.json` -> `/motors/<motor>/goto.json`, as the API documents show it. */
export function displayPath(path: string): string {
  return path.replace(/:([A-Za-z_]+)/g, '<$1>');
}

/** `GET /motors/:motor/registers/list.json`: how profiles and the docs name a route. */
export const routeKey = (r: Pick<RouteSpec, 'method' | 'path'>): string => `${r.method} ${r.path}`;
