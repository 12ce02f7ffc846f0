/**
 * Client profiles: what a client observes of an answer, chosen once (`--compat`) and applied by the app around
 * every route. The default profile answers as docs/reference/contract.md 1-7 say; `pypot` answers as pypot 5.0.2 does where its
 * clients depend on it (docs/reference/contract.md 8, docs/reference/pypot.md 5, docs/reference/robots.md 9). Validation, clamping and safety are the same in both:
 * a profile only renames statuses, keys and content types, and picks the motion policy below (whose honest answers,
 * a waited goto's arrival and the refusal of an IK target out of reach, pypot does not give).
 */
import { createHash } from 'node:crypto';
import type { onSendHookHandler } from 'fastify';
import { RobotError } from '../core/errors.ts';
import type { MovePath } from '../robot/trajectory.ts';
import { routeKey, type RouteSpec } from './route.ts';

/** Choices of the domain calls that differ between profiles; handed to the route builders. */
export interface MotionPolicy {
  /** A goto on a compliant motor: 409 (`reject`), or accepted as pypot does (`keep-goal`: goal kept, no motion). */
  readonly compliantGoto: 'reject' | 'keep-goal';
  /** An alias name that lists every motor in `/motors/<alias>/list.json` (pypot: `motors`). */
  readonly allMotorsAlias?: string;
  /**
   * The guard (`--guard`): resolves when a move (a goto's path, a replay's) may start, throws (409) when its
   * prediction collides; `force` skips it.
   */
  readonly guard?: (path: MovePath, force: boolean) => Promise<void>;
  /** A waited goto's answer says whether it arrived: per motor error and tolerance, `reached` (docs/api.md). */
  readonly reportArrival?: boolean;
  /** An IK target out of reach is refused (422) before anything moves, instead of going to the nearest pose. */
  readonly refuseUnreachable?: boolean;
}

export interface Profile {
  readonly name: 'default' | 'pypot';
  readonly policy: MotionPolicy;
  /** Content-Type of JSON answers, errors included. */
  readonly jsonType: string;
  /** Answer GETs with an ETag, and 304 when If-None-Match matches. */
  readonly etags: boolean;
  /** Success status of a route (204 answers an empty body). */
  status(route: RouteSpec): number;
  /** The body fields of a request, rewritten before validation (pypot reads some fields its own way). */
  input(route: RouteSpec, fields: unknown): unknown;
  /** The answer a client of this profile expects. */
  answer(route: RouteSpec, answer: unknown): unknown;
  /** A domain error, as this profile reports it: another error, or an answer. */
  failure(
    route: RouteSpec,
    err: unknown,
    params: Readonly<Record<string, string>>,
  ): { answer: unknown } | undefined;
}

const JSON_TYPE = 'application/json; charset=utf-8';

export const defaultProfile: Profile = {
  name: 'default',
  policy: { compliantGoto: 'reject', reportArrival: true, refuseUnreachable: true },
  jsonType: JSON_TYPE,
  etags: false,
  status: (route) => route.status ?? 200,
  input: (_route, fields) => fields,
  answer: (_route, answer) => answer,
  failure: () => undefined,
};

/** pypot's statuses for writes and actions (docs/reference/pypot.md 5). */
const PYPOT_STATUS: Readonly<Record<string, number>> = {
  'POST /motors/:motor/registers/:register/value.json': 202,
  'POST /motors/:motor/goto.json': 202,
  'POST /motors/goto.json': 202,
  'POST /records/:move/record.json': 202,
  'POST /records/:move/save.json': 202,
  'POST /records/:move/play.json': 202,
  'POST /records/:move/stop.json': 202,
  'POST /records/:move/delete.json': 202,
  'GET /primitives/:primitive/start.json': 202,
  'GET /primitives/:primitive/stop.json': 202,
  'GET /primitives/:primitive/pause.json': 202,
  'GET /primitives/:primitive/resume.json': 202,
  'POST /primitives/:primitive/properties/:prop/value.json': 204,
};

/** Errors pypot reports with another status, per route: `code -> status`. */
const PYPOT_ERRORS: Readonly<Record<string, Readonly<Record<string, RobotError['code']>>>> = {
  // stop.json of a move that pypot never played (unknown to its player) is 400
  'POST /records/:move/stop.json': { not_found: 'bad_request' },
  // save.json of a move that is not recording is 404
  'POST /records/:move/save.json': { conflict: 'not_found' },
};

/** pypot accepts pause and resume in any state as no-ops. */
const PYPOT_NO_OP: Readonly<Record<string, string>> = {
  'GET /primitives/:primitive/pause.json': 'paused',
  'GET /primitives/:primitive/resume.json': 'resumed',
};

/** Python's truthiness of a JSON value (pypot's IK goto `wait`). */
function truthy(v: unknown): boolean {
  if (Array.isArray(v)) return v.length > 0;
  if (v !== null && typeof v === 'object') return Object.keys(v).length > 0;
  return Boolean(v);
}

export interface PypotProfileOptions {
  /** Marker card name -> marker id, for `/sensors/code/list.json`, which pypot answers with ids. */
  readonly markerIds?: ReadonlyMap<string, number>;
}

export function pypotProfile(opts: PypotProfileOptions = {}): Profile {
  const answers: Readonly<Record<string, (answer: Record<string, unknown>) => unknown>> = {
    // pypot's key only (docs/reference/contract.md 8)
    'GET /primitives/running/list.json': ({ running_primitives }) => ({ running_primitives }),
    'GET /sensors/code/list.json': (answer) => ({
      ...answer,
      codes: Array.isArray(answer.codes)
        ? answer.codes.map((c) => (typeof c === 'string' ? (opts.markerIds?.get(c) ?? c) : c))
        : answer.codes,
    }),
  };
  const inputs: Readonly<Record<string, (fields: Record<string, unknown>) => unknown>> = {
    // pypot reads `wait` by truthiness here (any truthy JSON), and by string value in the motor gotos
    'POST /ik/:chain/goto.json': (fields) => ({ ...fields, wait: truthy(fields.wait) }),
    // pypot has no default replay speed: no `speed` is 400
    'POST /records/:move/play.json': (fields) => {
      if (fields.speed === undefined)
        throw new RobotError('bad_request', 'speed is missing', 'send {"speed": 1.0}', 'no "speed" field');
      return fields;
    },
  };
  return {
    name: 'pypot',
    policy: { compliantGoto: 'keep-goal', allMotorsAlias: 'motors' },
    jsonType: 'text/html; charset=UTF-8',
    etags: true,
    status: (route) => PYPOT_STATUS[routeKey(route)] ?? route.status ?? 200,
    input(route, fields) {
      const rewrite = inputs[routeKey(route)];
      return rewrite && fields !== null && typeof fields === 'object' && !Array.isArray(fields)
        ? rewrite(fields as Record<string, unknown>)
        : fields;
    },
    answer(route, answer) {
      const rewrite = answers[routeKey(route)];
      return rewrite && answer !== null && typeof answer === 'object' && !Array.isArray(answer)
        ? rewrite(answer as Record<string, unknown>)
        : answer;
    },
    failure(route, err, params) {
      if (!(err instanceof RobotError)) return undefined;
      const key = routeKey(route);
      const noOp = PYPOT_NO_OP[key];
      if (noOp && err.code === 'conflict' && params.primitive)
        return { answer: { [params.primitive]: noOp } };
      // a write to a read-only register (motor or sensor) is 404 in pypot
      const code = err.code === 'read_only' ? 'not_found' : PYPOT_ERRORS[key]?.[err.code];
      if (code) throw new RobotError(code, err.message, err.tip, err.details);
      return undefined;
    },
  };
}

/** A strong ETag of an answer's bytes. */
export function etagOf(payload: string | Buffer): string {
  return `"${createHash('sha1').update(payload).digest('base64url')}"`;
}

/**
 * The onSend hook of a profile whose answers differ from the default's: their JSON type, and ETags with 304 for a
 * matching If-None-Match (pypot's). None for the default profile, whose answers go out as they are.
 */
export function answerRewriter(profile: Profile): onSendHookHandler | undefined {
  if (profile.jsonType === 'application/json; charset=utf-8' && !profile.etags) return undefined;
  return (req, reply, payload, done) => {
    const type = reply.getHeader('content-type');
    if (typeof type === 'string' && type.startsWith('application/json'))
      reply.header('content-type', profile.jsonType);
    if (
      profile.etags &&
      req.method === 'GET' &&
      reply.statusCode === 200 &&
      (typeof payload === 'string' || Buffer.isBuffer(payload))
    ) {
      const tag = etagOf(payload);
      reply.header('ETag', tag);
      if (req.headers['if-none-match'] === tag) {
        reply.code(304);
        done(null, '');
        return;
      }
    }
    done(null, payload);
  };
}
