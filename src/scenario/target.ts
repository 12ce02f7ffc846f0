/**
 * Where a scenario runs: the twin (in-process, sim time moves only when the scenario waits) or a running server
 * by URL (sim or real; wall time). Both answer the same REST API, so read-only and replay checks run on either.
 */
import type { Twin } from './twin.ts';

export interface Answer {
  readonly status: number;
  readonly body: unknown;
}

export interface Target {
  readonly kind: 'twin' | 'remote';
  /** 'twin' or the server's URL. */
  readonly label: string;
  get(url: string): Promise<Answer>;
  post(url: string, body?: unknown): Promise<Answer>;
  /** A request answered only after time passes (`wait: true`): time is moved until it answers. */
  postWaiting(url: string, body: unknown, maxSeconds?: number): Promise<Answer>;
  /** Lets `seconds` of the target's time pass. */
  wait(seconds: number): Promise<void>;
  /** The target's time, seconds. */
  now(): number;
}

/** A GET/POST that must succeed: anything but 200 throws naming the request and the answer. */
export async function ok(answer: Promise<Answer>, what: string): Promise<Record<string, unknown>> {
  const a = await answer;
  if (a.status !== 200) throw new Error(`${what}: HTTP ${a.status} ${JSON.stringify(a.body)}`);
  return a.body as Record<string, unknown>;
}

export function twinTarget(twin: Twin): Target {
  const answer = (r: { statusCode: number; body: string }): Answer => ({
    status: r.statusCode,
    body: r.body === '' ? undefined : (JSON.parse(r.body) as unknown),
  });
  return {
    kind: 'twin',
    label: 'twin',
    get: async (url) => answer(await twin.get(url)),
    post: async (url, body) => answer(await twin.post(url, body)),
    postWaiting: async (url, body, maxSeconds = 60) =>
      answer(await twin.untilAnswered(twin.post(url, body), maxSeconds, 0.02)),
    wait: (s) => twin.advance(s),
    now: () => twin.backend.clock.now(),
  };
}

export interface RemoteOptions {
  /** How time passes while the scenario waits (default: real time). Tests inject one that drives a sim. */
  readonly sleep?: (seconds: number) => Promise<void>;
  readonly now?: () => number;
  readonly fetch?: typeof fetch;
}

export function remoteTarget(baseUrl: string, opts: RemoteOptions = {}): Target {
  const base = baseUrl.replace(/\/+$/, '');
  const doFetch = opts.fetch ?? fetch;
  const sleep = opts.sleep ?? ((s: number) => new Promise<void>((r) => setTimeout(r, s * 1000)));
  const now = opts.now ?? (() => performance.now() / 1000);
  const send = async (method: 'GET' | 'POST', url: string, body?: unknown): Promise<Answer> => {
    const res = await doFetch(base + url, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      // not JSON: keep the text for the error message
    }
    return { status: res.status, body: parsed };
  };
  return {
    kind: 'remote',
    label: base,
    get: (url) => send('GET', url),
    post: (url, body) => send('POST', url, body),
    postWaiting: (url, body) => send('POST', url, body),
    wait: sleep,
    now,
  };
}
