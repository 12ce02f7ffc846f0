/**
 * The plain lane: a request to one of the app's own routes that needs nothing of fastify (a GET without a body or
 * query, a POST of a JSON body of known length) is answered here, straight from node's request and response; every
 * other request goes on to fastify. Both give the same answers: the same body reading (body.ts), schema check
 * (the route's compiled validator), profile, error bodies (errors.ts) and headers, counted in the same metrics;
 * test/http/lane.test.ts sends one set of requests both ways and compares every status, header and byte.
 * Why: fastify's per-request machinery (its request and reply objects, hook runners, content-type parser and
 * serializer) was more than the register read's own work (docs/decisions/0053-plain-lane.md).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../core/logger.ts';
import { NO_BODY, objectBody, parseBody, type Body } from './body.ts';
import { errorBody, logFailure } from './errors.ts';
import { bodyValidatorCompiler, type Validator } from './plain-check.ts';
import type { Profile } from './profile.ts';
import type { ChangeCounter } from './robot-answer.ts';
import { RawReply, type RouteRequest, type RouteSpec } from './route.ts';

/** Counts one route's answers: method, status, milliseconds and URL. */
export type RouteAnswerCounter = (method: string, status: number, elapsedMs: number, url: string) => void;

/** Who counts the answers (the metrics): a counter per route pattern, made once when the lane is built. */
export interface AnswerCounter {
  forRoute(path: string): RouteAnswerCounter;
}

export interface LaneOptions {
  readonly profile: Profile;
  readonly bodyLimit: number;
  readonly logger: Logger;
  /** The headers every answer carries given the request's Origin, when origins are listed; else no-store and any
   * origin allowed. */
  readonly commonHeaders?: (origin: string | undefined) => Record<string, string>;
  /** False while the server is not ready or is closing: fastify then answers with its 503. */
  readonly open: () => boolean;
  readonly changes?: ChangeCounter;
  readonly counter?: AnswerCounter;
  /** Log every request at debug level, as the app's onResponse hook does. */
  readonly requestLog?: boolean;
}

/** Answers the request and says true, or says false and leaves it untouched for fastify. */
export type Lane = (req: IncomingMessage, res: ServerResponse) => boolean;

/** A lane that takes nothing (before the routes are known, or for an app that answers through fastify alone). */
export const NO_LANE: Lane = () => false;

/** A parameter the lane reads as fastify's router does: no escapes, no dots, nothing it could read otherwise. */
const PLAIN_PARAM = /^[A-Za-z0-9_-]+$/;
const JSON_TYPE = 'application/json';
const EMPTY_QUERY: Readonly<Record<string, string>> = Object.freeze({});

/** Builds the lane for `routes` (those it cannot serve exactly as fastify does are left out). */
export function plainLane(routes: readonly RouteSpec[], opts: LaneOptions): Lane {
  const table = new RouteTable<LaneRoute>();
  for (const route of routes) {
    if (route.getWithBody || (route.method === 'GET' && route.body)) continue;
    const pattern = patternOf(route.path);
    if (pattern) table.add(route.method, pattern, laneRoute(route, opts));
  }
  const { bodyLimit } = opts;
  return (req, res) => {
    const method = req.method;
    if ((method !== 'GET' && method !== 'POST') || !opts.open()) return false;
    const url = req.url!;
    if (url.includes('?') || url.includes('%')) return false;
    const found = table.find(method, url);
    if (!found) return false;
    const headers = req.headers;
    const length = headers['content-length'];
    if (headers['transfer-encoding'] !== undefined) return false;
    const arrived = performance.now();
    if (method === 'GET') {
      if (length !== undefined && length !== '0') return false;
      found.route.run(req, res, found.params, NO_BODY, arrived);
      return true;
    }
    const type = headers['content-type'];
    if (length === undefined || !(Number(length) <= bodyLimit)) return false;
    if (type === undefined || !type.startsWith(JSON_TYPE)) return false;
    // Bytes decoded once at the end (as fastify's parseAs 'string' gives them), not through a StringDecoder per chunk.
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => {}); // a client gone mid-body: nothing to answer
    req.on('end', () => {
      let body: Body;
      try {
        const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        body = parseBody(bytes.toString('utf8'), type);
      } catch (err) {
        found.route.fail(req, res, err, undefined, arrived);
        return;
      }
      found.route.run(req, res, found.params, body, arrived);
    });
    return true;
  };
}

interface LaneRoute {
  run(
    req: IncomingMessage,
    res: ServerResponse,
    params: Readonly<Record<string, string>>,
    body: Body,
    arrived: number,
  ): void;
  /** Answers an error raised before the handler ran (the body's reading or its check). */
  fail(req: IncomingMessage, res: ServerResponse, err: unknown, input: unknown, arrived: number): void;
}

/** One route as the lane runs it: the steps of app.ts's addRoute, in its order, without fastify's objects. */
function laneRoute(route: RouteSpec, opts: LaneOptions): LaneRoute {
  const { profile, logger, commonHeaders } = opts;
  const count = opts.counter?.forRoute(route.path);
  const changing = opts.changes && (route.method !== 'GET' || route.action) ? opts.changes : undefined;
  const readsBody = route.method === 'POST';
  const tip = route.tip ?? 'GET / lists every endpoint; GET /openapi.json describes each body';
  const schema = route.body ?? route.bareBody;
  // The very validator fastify compiles for the route (app.ts sets it as the app's validator compiler).
  const validate =
    readsBody && schema
      ? (bodyValidatorCompiler({
          schema,
          method: route.method,
          url: route.path,
          httpPart: 'body',
        }) as Validator)
      : undefined;
  const debug = opts.requestLog ? logger.debug : undefined;

  function send(
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    type: string | undefined,
    payload: string | Buffer | undefined,
    arrived: number,
  ): void {
    const length =
      payload === undefined
        ? '0'
        : String(typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length);
    // One object literal per answer, and the request's headers not read unless origins are listed: spreading a
    // shared object and reading req.headers (which node builds on first read) made the lane slower than fastify.
    const headers: Record<string, string> = commonHeaders
      ? commonHeaders(req.headers.origin)
      : { 'cache-control': 'no-store', 'access-control-allow-origin': '*' };
    if (type !== undefined && payload !== undefined) headers['content-type'] = type;
    if (status !== 204 && status !== 304) headers['content-length'] = length;
    res.writeHead(status, headers);
    res.end(payload);
    const elapsed = performance.now() - arrived;
    count?.(req.method!, status, elapsed, req.url!);
    debug?.(`${req.method} ${req.url} ${status} ${elapsed.toFixed(1)} ms`);
  }

  /** An answer that cannot be sent as it is (a value JSON cannot write) is a 500, logged, as fastify makes it; the
   * server goes on. */
  function answer(req: IncomingMessage, res: ServerResponse, result: unknown, arrived: number): void {
    try {
      answerOrThrow(req, res, result, arrived);
    } catch (err) {
      if (res.headersSent) return void res.destroy();
      try {
        fail(req, res, err, undefined, arrived);
      } catch {
        res.destroy();
      }
    }
  }

  function answerOrThrow(req: IncomingMessage, res: ServerResponse, result: unknown, arrived: number): void {
    changing?.bump();
    if (result instanceof RawReply) return send(req, res, 200, result.contentType, result.payload, arrived);
    const status = profile.status(route);
    if (status === 204) return send(req, res, 204, undefined, undefined, arrived);
    const value = profile.answer(route, result);
    if (typeof value === 'string') return send(req, res, status, 'text/plain; charset=utf-8', value, arrived);
    send(req, res, status, profile.jsonType, JSON.stringify(value), arrived);
  }

  function fail(
    req: IncomingMessage,
    res: ServerResponse,
    err: unknown,
    input: unknown,
    arrived: number,
  ): void {
    const { status, body } = errorBody(err, { body: input, tip: route.tip });
    logFailure(logger, err, status, req.method!, req.url!);
    send(req, res, status, profile.jsonType, JSON.stringify(body), arrived);
  }

  function recovered(
    err: unknown,
    params: Readonly<Record<string, string>>,
  ): { answer: unknown } | undefined {
    changing?.bump();
    return profile.failure(route, err, params);
  }

  return {
    fail,
    run(req, res, params, raw, arrived) {
      let input: unknown = raw;
      try {
        if (readsBody && route.body) input = profile.input(route, objectBody(raw, tip));
        if (validate) {
          const checked = validate(input);
          if (checked.error) return fail(req, res, { validation: checked.error }, input, arrived);
          input = checked.value;
        }
      } catch (err) {
        return fail(req, res, err, input, arrived);
      }
      changing?.bump();
      let result: unknown;
      try {
        result = route.handler(new IncomingRequest(params, EMPTY_QUERY, input as Body, res));
      } catch (err) {
        const saved = recovered(err, params);
        return saved ? answer(req, res, saved.answer, arrived) : fail(req, res, err, input, arrived);
      }
      if (result instanceof Promise)
        result.then(
          (value) => answer(req, res, value, arrived),
          (err: unknown) => {
            const saved = recovered(err, params);
            if (saved) answer(req, res, saved.answer, arrived);
            else fail(req, res, err, input, arrived);
          },
        );
      else answer(req, res, result, arrived);
    },
  };
}

/** A route's request; `clientGone` is made on first use only (a closure or getter per request costs throughput). */
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

/** One segment of a path: a word, or a parameter with an optional static tail (`:code.json`). */
type Segment = { readonly word: string } | { readonly param: string; readonly tail: string };

/** The segments of a fastify path, or undefined for what the lane leaves to fastify's router (`*`, regexps). */
export function patternOf(path: string): Segment[] | undefined {
  const segments: Segment[] = [];
  for (const part of path.split('/').slice(1)) {
    if (part.includes('*') || part.includes('(')) return undefined;
    if (!part.startsWith(':')) {
      if (part.includes(':')) return undefined;
      segments.push({ word: part });
      continue;
    }
    const dot = part.indexOf('.');
    segments.push(
      dot < 0 ? { param: part.slice(1), tail: '' } : { param: part.slice(1, dot), tail: part.slice(dot) },
    );
  }
  return segments;
}

/** A route found for a URL, with its parameters (frozen: one match answers every request to that URL). */
interface Match<T> {
  readonly route: T;
  readonly params: Readonly<Record<string, string>>;
}

/**
 * URLs whose match the table keeps per method, all forgotten when full: a client asks the same few again and again,
 * and every route of the Humanoid's 25 motors fits. A kept match hands the handler the same parameter strings each
 * time, so the domain's Map lookups and keyed reads find them in their caches: a register read cost 3.4 us less CPU
 * under load, a goto 2.6 us (docs/decisions/0054-plain-body-check.md).
 */
export const MATCHES_KEPT = 4096;
/** Longer URLs are matched each time, never kept: the kept matches stay within a few megabytes whatever clients send. */
export const KEPT_URL_MAX = 256;

interface Node<T> {
  readonly words: Map<string, Node<T>>;
  /** Parameter children, each with its tail; tried after the words, longest tail first. */
  readonly params: { readonly name: string; readonly tail: string; readonly node: Node<T> }[];
  value: T | undefined;
}

const newNode = <T>(): Node<T> => ({ words: new Map(), params: [], value: undefined });

/** Routes by method and path: a word before a parameter at each segment, as fastify's router prefers. */
export class RouteTable<T> {
  /** Per method: its tree, and the matches of the URLs asked lately (found ones only: an unknown URL keeps nothing). */
  readonly #methods = new Map<string, { readonly root: Node<T>; readonly matches: Map<string, Match<T>> }>();

  add(method: string, segments: readonly Segment[], value: T): void {
    let tree = this.#methods.get(method);
    if (!tree) this.#methods.set(method, (tree = { root: newNode<T>(), matches: new Map() }));
    let node: Node<T> = tree.root;
    for (const s of segments) {
      if ('word' in s) {
        let next: Node<T> | undefined = node.words.get(s.word);
        if (!next) node.words.set(s.word, (next = newNode<T>()));
        node = next;
        continue;
      }
      let child: Node<T>['params'][number] | undefined = node.params.find(
        (p) => p.tail === s.tail && p.name === s.param,
      );
      if (!child) {
        child = { name: s.param, tail: s.tail, node: newNode<T>() };
        node.params.push(child);
        node.params.sort((a, b) => b.tail.length - a.tail.length);
      }
      node = child.node;
    }
    node.value = value;
  }

  find(method: string, url: string): Match<T> | undefined {
    const tree = this.#methods.get(method);
    if (!tree) return undefined;
    const { root, matches } = tree;
    const known = matches.get(url);
    if (known) return known;
    const match = matchOf(root, url);
    if (match && url.length <= KEPT_URL_MAX) {
      if (matches.size >= MATCHES_KEPT) matches.clear();
      matches.set(url, match);
    }
    return match;
  }
}

function matchOf<T>(root: Node<T>, url: string): Match<T> | undefined {
  if (url.charCodeAt(0) !== 47 /* / */) return undefined;
  const params: Record<string, string> = {};
  const route = walk(root, url.split('/'), 1, params);
  return route === undefined ? undefined : { route, params: Object.freeze(params) };
}

function walk<T>(
  node: Node<T>,
  parts: readonly string[],
  i: number,
  params: Record<string, string>,
): T | undefined {
  if (i === parts.length) return node.value;
  const part = parts[i]!;
  const word = node.words.get(part);
  if (word) {
    const found = walk(word, parts, i + 1, params);
    if (found !== undefined) return found;
  }
  for (const p of node.params) {
    if (!part.endsWith(p.tail)) continue;
    const value = part.slice(0, part.length - p.tail.length);
    if (!PLAIN_PARAM.test(value)) continue;
    const found = walk(p.node, parts, i + 1, params);
    if (found !== undefined) {
      params[p.name] = value;
      return found;
    }
  }
  return undefined;
}
