/**
 * The OpenAPI 3.1 document, generated from the routes' zod schemas (@fastify/swagger + fastify-type-provider-zod),
 * served at GET /openapi.json, and the browsable reference at /docs (src/http/docs-page.ts).
 */
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { registerDocsPage } from './docs-page.ts';
import type { Profile } from './profile.ts';
import type { RouteSpec } from './route.ts';
import { errorBody } from './schema.ts';

interface OperationLike {
  requestBody?: {
    required?: boolean;
    content?: Record<string, { schema?: { type?: string; required?: string[] } }>;
  };
}

export const OPENAPI_PATH = '/openapi.json';
/** The probes answer whoever asks: no token. */
const PROBE_PATHS = new Set(['/healthz', '/readyz']);
export const DOCS_PATH = '/docs';

/** JSON Schema of a zod schema: the input side for bodies (what a client may send), the output side for answers. */
function jsonSchema(schema: unknown, io: 'input' | 'output'): Record<string, unknown> {
  if (!(schema instanceof z.ZodType)) return {};
  const { $schema: _, ...rest } = z.toJSONSchema(schema, {
    io,
    target: 'draft-2020-12',
    unrepresentable: 'any',
  });
  return rest;
}

const ERROR_JSON = jsonSchema(errorBody, 'output');

const TAGS = [
  { name: 'motors', description: 'motors, their registers and gotos (REST API 4.0.0 section 4.2)' },
  { name: 'sensors', description: 'camera and marker detector (4.3)' },
  { name: 'records', description: 'recorded moves (4.4)' },
  { name: 'primitives', description: 'behaviours: lifecycle, properties, methods (4.5)' },
  { name: 'ik', description: 'inverse kinematics (4.6)' },
  { name: 'robot', description: 'the whole robot, the index, the host address (4.1, 4.7)' },
  { name: 'sim', description: 'sim backend only: not in REST API 4.0.0' },
  { name: 'view', description: 'the web view and its live state stream: not in REST API 4.0.0' },
  { name: 'bus', description: 'real backend only: the Dynamixel bus; not in REST API 4.0.0' },
  { name: 'reference', description: 'this document and the reference page: not in REST API 4.0.0' },
];

function tagOf(path: string): string {
  const first = path.split('/')[1] ?? '';
  if (['motors', 'sensors', 'records', 'primitives', 'ik', 'sim'].includes(first)) return first;
  if (first === 'ui' || first === 'stream') return 'view';
  if (first === 'bus') return 'bus';
  return path === OPENAPI_PATH || path.startsWith(DOCS_PATH) ? 'reference' : 'robot';
}

/** Extra facts of an operation: where it runs, and whether REST API 4.0.0 has it. */
function marks(route: RouteSpec | undefined, url: string): Record<string, unknown> {
  const simOnly = route?.simOnly ?? url.startsWith('/sim/');
  const beyondV4 = route?.beyondV4 ?? (simOnly || url === OPENAPI_PATH);
  const notes = [
    simOnly ? 'Sim backend only.' : '',
    beyondV4 ? 'Not in REST API 4.0.0: an addition of this server.' : '',
  ].filter(Boolean);
  return {
    'x-sim-only': simOnly,
    'x-beyond-v4': beyondV4,
    ...(notes.length || route?.description
      ? { description: [route?.description, ...notes].filter(Boolean).join(' ') }
      : {}),
  };
}

function withExample(schema: unknown, example: unknown): unknown {
  if (example === undefined || schema === null || typeof schema !== 'object') return schema;
  return { ...schema, examples: [example] };
}

/** A non-JSON answer: text (HTML, script, style sheet) or bytes (PNG). */
function rawAnswer(contentType: string): Record<string, unknown> {
  const text = contentType.startsWith('text/');
  return {
    description: text ? `a ${contentType.split(';')[0]} document` : `${contentType} bytes`,
    content: { [contentType]: { schema: text ? { type: 'string' } : { type: 'string', format: 'binary' } } },
  };
}

export function registerOpenApi(app: FastifyInstance, opts: { title: string; profile: Profile }): void {
  void app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: `${opts.title} REST API`,
        version: '4.0.0',
        description:
          'The pypot REST API 4.0.0 for Poppy robots, as this server implements it. Every failure answers ' +
          '`{error, tip, details}` (three strings). Bodies: JSON whatever the Content-Type; form fields too; numbers ' +
          'also as decimal strings. See docs/api.md in the repository for the rules in prose.' +
          (opts.profile.name === 'pypot'
            ? ' This server runs the pypot compatibility profile: JSON answers are labelled text/html, writes answer 202.'
            : ''),
      },
      tags: TAGS,
      // A token is asked only when the server has one (docs/security.md): the empty requirement says so.
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description:
              'the token given by --token or POPPY_TWIN_TOKEN, or printed at start beyond the loopback',
          },
          cookie: {
            type: 'apiKey',
            in: 'cookie',
            name: 'poppy-twin-token-<port>',
            description: 'set (HttpOnly, SameSite=Strict) by opening a page with ?token=<token>',
          },
        },
      },
      security: [{ bearer: [] }, { cookie: [] }, {}],
    },
    // A body whose fields are all optional may be left out (no body = {}).
    transformObject: (doc) => {
      if (!('openapiObject' in doc)) return doc.swaggerObject;
      for (const ops of Object.values(doc.openapiObject.paths ?? {}))
        for (const op of Object.values(ops as Record<string, OperationLike>)) {
          const schema = op.requestBody?.content?.['application/json']?.schema;
          if (op.requestBody && schema?.type === 'object' && !schema.required?.length)
            op.requestBody.required = false;
        }
      return doc.openapiObject;
    },
    transform: (doc) => {
      const { schema, url } = doc;
      const route = (doc.route.config as { route?: RouteSpec } | undefined)?.route;
      if (schema?.hide || url.includes('*')) return { schema: { hide: true }, url };
      const body = route?.body ?? route?.bareBody;
      const ok = route?.answer ? jsonSchema(route.answer, 'output') : undefined;
      const status = route ? opts.profile.status(route) : 200;
      const answer =
        status === 204
          ? { description: 'no content' }
          : route?.produces
            ? rawAnswer(route.produces)
            : withExample(
                ok ?? { description: 'the answer', type: 'object', additionalProperties: true },
                route?.examples?.answer,
              );
      return {
        url,
        schema: {
          summary: route?.summary,
          tags: [tagOf(url)],
          ...marks(route, url),
          ...(body ? { body: withExample(jsonSchema(body, 'input'), route?.examples?.body) } : {}),
          ...(PROBE_PATHS.has(url) ? { security: [] } : {}),
          response: {
            [status]: answer,
            '401': {
              description: 'the server has a token and the request lacks it (docs/security.md)',
              ...ERROR_JSON,
            },
            '403': {
              description:
                "a Host not the server's, or a page of another origin changing the robot; or a read-only register",
              ...ERROR_JSON,
            },
            '4XX': { description: 'the request is wrong: what, how to fix it, why', ...ERROR_JSON },
            '5XX': { description: 'the hardware does not answer (503), or a bug (500)', ...ERROR_JSON },
          },
        },
      };
    },
  });
  registerDocsPage(app, DOCS_PATH);
}

/** GET /openapi.json, served beside the routes (the index page lists it). */
export function openApiRoute(app: FastifyInstance): RouteSpec {
  return {
    method: 'GET',
    path: OPENAPI_PATH,
    summary: 'this API as an OpenAPI 3.1 document (the browsable reference is at /docs)',
    beyondV4: true,
    answer: z
      .looseObject({
        openapi: z.literal('3.1.0'),
        info: z.looseObject({}),
        paths: z.record(z.string(), z.unknown()),
      })
      .meta({ description: 'an OpenAPI 3.1 document' }),
    handler: () => app.swagger(),
  };
}
