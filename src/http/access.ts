/**
 * Who may talk to the robot, decided before any handler runs (docs/security.md): the Host must be one of this
 * server's names (DNS rebinding), a request that can change the robot must come from an allowed origin (CSRF from
 * any page the user opens), and when a token is set the caller must carry it (a robot reachable on a network).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Socket } from 'node:net';
import os from 'node:os';
import { ConfigError, RobotError } from '../core/errors.ts';

/** Why a request was refused: its Host, its Origin, or its token. */
export type Refusal = 'host' | 'origin' | 'token';

export interface AccessOptions {
  /** Host names or addresses (no port) this server answers to besides its own: `--allowed-hosts` (`.domain`: and
   * every name under it). */
  readonly allowedHosts?: readonly string[];
  /** Origins allowed to change the robot and read its answers across origins; '*' allows every origin. */
  readonly origins?: '*' | readonly string[];
  /** Tokens that open this server (any one of them); none or empty: no token needed. Data: it crosses to workers. */
  readonly tokens?: readonly string[];
}

/** The tokens that open a request to `url` (empty: none needed), when they depend on it (a classroom's main port). */
export type TokensFor = (url: string) => readonly string[];

/** What the edge needs of a request (fastify's and node's requests both have it). */
export interface EdgeRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** The cookie a browser gets from `?token=`: its name starts so; the port keeps two servers' cookies apart. */
export const TOKEN_COOKIE = 'poppy-twin-token';
/** Set by a classroom's main port on the requests it hands to a twin under `/twins/<name>/`: that prefix. */
export const FORWARDED_PREFIX = 'x-forwarded-prefix';
/** The query parameter a browser opens the web view with (the URL printed at start). */
export const TOKEN_QUERY = 'token';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '0:0:0:0:0:0:0:1']);

/** A token for a server or a classroom's twin: 24 characters of base64url (144 random bits). */
export function newToken(): string {
  return randomBytes(18).toString('base64url');
}

/** Whether `address` (an IP, no brackets) is on the loopback. */
export function isLoopback(address: string): boolean {
  const a = address.toLowerCase().replace(/^::ffff:/, '');
  return a.startsWith('127.') || a === '::1' || a === '0:0:0:0:0:0:0:1' || a === 'localhost';
}

/** The host name of a Host header: lower case, no port, no brackets, no trailing dot. */
export function hostName(header: string): string {
  let h = header.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    h = end > 0 ? h.slice(1, end) : h;
  } else {
    const colon = h.lastIndexOf(':');
    // One colon: name:port. More: a bare IPv6 address (not valid in a Host header, read as the address).
    if (colon >= 0 && h.indexOf(':') === colon) h = h.slice(0, colon);
  }
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

/**
 * The names this server answers to: the loopback's always; and, when it listens beyond the loopback, the machine's
 * host name (also as `<name>.local`, mDNS: a Raspberry Pi's `poppy.local`) and the addresses of its interfaces.
 */
export function ownHostNames(beyondLoopback: boolean): Set<string> {
  const names = new Set(LOOPBACK_NAMES);
  if (!beyondLoopback) return names;
  const host = os.hostname().toLowerCase();
  names.add(host);
  names.add(`${host.split('.')[0]}.local`);
  for (const list of Object.values(os.networkInterfaces()))
    for (const i of list ?? []) names.add(i.address.toLowerCase());
  return names;
}

/** The checks of one server: built once, asked per request. */
export class EdgeAccess {
  readonly #extraHosts: ReadonlySet<string>;
  readonly #origins: '*' | ReadonlySet<string>;
  readonly #tokens: ((url: string) => readonly string[]) | undefined;
  /** The listening address decides the own names: read at the first request (the server listens by then). */
  #ownHosts: Set<string> | undefined;
  readonly #listening: () => string | undefined;
  #lastAllowedHost: string | undefined;

  constructor(opts: AccessOptions, listening: () => string | undefined, tokensFor?: TokensFor) {
    this.#extraHosts = new Set((opts.allowedHosts ?? []).map((h) => hostName(h)));
    const origins = opts.origins ?? [];
    this.#origins = origins === '*' ? '*' : new Set(origins.map((o) => o.toLowerCase().replace(/\/$/, '')));
    const tokens = opts.tokens ?? [];
    this.#tokens = tokensFor ?? (tokens.length ? () => tokens : undefined);
    this.#listening = listening;
  }

  /** Any origin may read and write (`--cors-origins='*'`). */
  get anyOrigin(): boolean {
    return this.#origins === '*';
  }

  /** A listed origin: its reads get CORS headers naming it. */
  listed(origin: string): boolean {
    return this.#origins === '*' || this.#origins.has(origin.toLowerCase());
  }

  /** Whether `name` (from a Host header) is this server's. */
  hostAllowed(name: string): boolean {
    if (this.#extraHosts.has(name) || name.endsWith('.localhost')) return true;
    // `.example.org` in --allowed-hosts: that domain and every name under it.
    for (const h of this.#extraHosts)
      if (h.startsWith('.') && (name.endsWith(h) || name === h.slice(1))) return true;
    if (!this.#ownHosts) {
      const address = this.#listening();
      // Not listening (inject(): tests) counts as the loopback.
      const beyond = address !== undefined && !isLoopback(address);
      const names = ownHostNames(beyond);
      if (address === undefined) return names.has(name);
      this.#ownHosts = names;
    }
    return this.#ownHosts.has(name);
  }

  /**
   * The refusal of `req`, or undefined when it may go on. `changes`: the request can change the robot (any method
   * but GET, HEAD and OPTIONS; a GET action such as a primitive's start; a WebSocket upgrade).
   */
  check(req: EdgeRequest, changes: boolean): RobotError | undefined {
    const h = req.headers;
    const host = h.host;
    // A request without Host (HTTP/1.0) cannot come from a browser, so not from a rebound name either.
    // A client sends the same Host every time: the last one allowed is kept, so a request costs one comparison.
    if (typeof host === 'string' && host !== this.#lastAllowedHost) {
      if (!this.hostAllowed(hostName(host))) return refusedHost(host);
      if (this.#ownHosts) this.#lastAllowedHost = host;
    }
    const origin = h.origin;
    if (changes && this.#origins !== '*') {
      if (typeof origin === 'string') {
        if (!this.#sameOrigin(origin, host) && !this.listed(origin)) return refusedOrigin(origin);
      } else {
        const site = h['sec-fetch-site'];
        // No Origin: a browser's Sec-Fetch-Site still says where the request comes from (another port is same-site).
        if (site === 'cross-site' || site === 'same-site') return refusedOrigin(`(a ${site} page)`);
      }
    }
    const tokens = this.#tokens?.(req.url);
    if (tokens?.length && req.method !== 'OPTIONS' && !carriesToken(req, tokens)) return refusedToken();
    return undefined;
  }

  /**
   * The Set-Cookie of a request opened with a right `?token=` (a browser following the printed URL): the browser's
   * later requests, its WebSocket included, carry the token without it in each URL. Undefined otherwise.
   */
  cookieFor(req: EdgeRequest): string | undefined {
    const q = req.url.indexOf('?');
    if (q < 0 || !req.url.includes(`${TOKEN_QUERY}=`, q) || !this.#tokens) return undefined;
    const value = new URLSearchParams(req.url.slice(q + 1)).get(TOKEN_QUERY);
    const tokens = this.#tokens(req.url);
    if (!value || !tokens.some((t) => sameToken(value, t))) return undefined;
    const host = typeof req.headers.host === 'string' ? req.headers.host : '';
    const port = /:(\d+)$/.exec(host)?.[1] ?? '';
    const prefix = req.headers[FORWARDED_PREFIX];
    const path = typeof prefix === 'string' && /^\/twins\/[A-Za-z0-9_-]+$/.test(prefix) ? prefix : '/';
    return tokenCookie(value, port, path);
  }

  #sameOrigin(origin: string, host: string | string[] | undefined): boolean {
    if (typeof host !== 'string') return false;
    const o = origin.toLowerCase();
    const hostPart = host.toLowerCase();
    return o === `http://${hostPart}` || o === `https://${hostPart}`;
  }
}

/** The token a request carries, in its Authorization header, its query (`?token=`) or a cookie. */
export function presentedTokens(req: EdgeRequest): string[] {
  const found: string[] = [];
  const auth = req.headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (m) found.push(m[1]!);
  }
  const q = req.url.indexOf('?');
  if (q >= 0 && req.url.includes(`${TOKEN_QUERY}=`, q)) {
    const value = new URLSearchParams(req.url.slice(q + 1)).get(TOKEN_QUERY);
    if (value) found.push(value);
  }
  const cookie = req.headers.cookie;
  if (typeof cookie === 'string' && cookie.includes(TOKEN_COOKIE))
    for (const part of cookie.split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0 && part.slice(0, eq).trim().startsWith(TOKEN_COOKIE)) found.push(part.slice(eq + 1).trim());
    }
  return found;
}

function carriesToken(req: EdgeRequest, tokens: readonly string[]): boolean {
  for (const presented of presentedTokens(req))
    for (const t of tokens) if (sameToken(presented, t)) return true;
  return false;
}

/** Compares digests in constant time: how long a wrong token takes says nothing of the right one. */
function sameToken(a: string, b: string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db);
}

/** `url` with any `token=` value hidden: for logs, metrics and the classroom's list. */
export function redactToken(url: string): string {
  return url.includes(`${TOKEN_QUERY}=`) ? url.replace(/([?&]token=)[^&#]*/g, '$1(hidden)') : url;
}

/** The Set-Cookie value giving the browser `token`, kept under `path` (a classroom twin's prefix) for this port. */
export function tokenCookie(token: string, port: string, path: string): string {
  return `${TOKEN_COOKIE}-${port || 'default'}=${token}; Path=${path}; HttpOnly; SameSite=Strict`;
}

/** Which kind of refusal a RobotError is, when it is one of the edge's. */
export function refusalOf(err: unknown): Refusal | undefined {
  return err instanceof RobotError ? REFUSALS.get(err) : undefined;
}

const REFUSALS = new WeakMap<RobotError, Refusal>();

function refusal(kind: Refusal, err: RobotError): RobotError {
  REFUSALS.set(err, kind);
  return err;
}

function refusedHost(host: string): RobotError {
  return refusal(
    'host',
    new RobotError(
      'forbidden',
      `this server does not answer to the host name "${host.slice(0, 100)}"`,
      'use the address the server printed at start, or start it with --allowed-hosts=<name> to allow this name',
      "a Host that is not the server's own is how a page of another site reaches a local server (DNS rebinding)",
    ),
  );
}

function refusedOrigin(origin: string): RobotError {
  return refusal(
    'origin',
    new RobotError(
      'forbidden',
      `requests from ${origin.slice(0, 100)} may not change the robot`,
      'open the web view from this server, or start it with --cors-origins=<origin> to allow that page',
      'a page of another origin (any site the user opens) must not move the robot',
    ),
  );
}

function refusedToken(): RobotError {
  return refusal(
    'token',
    new RobotError(
      'unauthorized',
      'this robot needs its token',
      'send "Authorization: Bearer <token>", or open the URL with ?token=<token> that the server printed at start',
      'missing or wrong token',
    ),
  );
}

/** `--cors-origins`: '*' or a comma-separated list of origins (`http://host:port`); throws naming a bad one. */
export function parseOrigins(list: string): '*' | string[] {
  if (list.trim() === '*') return '*';
  const origins = list
    .split(',')
    .map((s) => s.trim().replace(/\/$/, ''))
    .filter(Boolean);
  for (const o of origins) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(o);
    } catch {
      parsed = undefined;
    }
    if (o !== 'null' && (!parsed || parsed.origin !== o.toLowerCase()))
      throw new ConfigError(
        '--cors-origins',
        `"${o}" is not an origin: write scheme://host[:port], e.g. http://localhost:8601`,
      );
  }
  return origins;
}

/** A token given by the user (`--token`, POPPY_TWIN_TOKEN, a roster's `token`): the problem with it, if any. */
export function tokenProblem(token: string): string | undefined {
  if (token.length < 8) return 'a token must have at least 8 characters';
  if (token.length > 256) return 'a token must have at most 256 characters';
  if (!/^[\x21-\x7e]+$/.test(token) || /[;,"\\]/.test(token))
    return 'a token is printable ASCII without spaces, quotes, commas, semicolons or backslashes';
  return undefined;
}

/** Methods that may change the robot (GET, HEAD and a CORS preflight do not). */
export function changesState(method: string): boolean {
  return method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS';
}

/** Ends the socket once what was written has gone out, then destroys it. */
export function closeSoon(socket: Socket): void {
  socket.end();
  if (socket.writableFinished) socket.destroy();
  else socket.once('finish', () => socket.destroy());
}

export function isUpgrade(req: EdgeRequest): boolean {
  const upgrade = req.headers.upgrade;
  return typeof upgrade === 'string' && upgrade.toLowerCase() === 'websocket';
}
