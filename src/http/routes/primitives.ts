/** /primitives: list, lifecycle, declared properties and methods (docs/reference/rest-api.md 4.5, docs/reference/contract.md 5). */
import type { PrimitiveManager } from '../../primitives/manager.ts';
import type { MethodArgs } from '../../primitives/members.ts';
import { z } from 'zod';
import { bareValue, type Body } from '../body.ts';
import { route, type RouteSpec } from '../route.ts';
import { anyValue, nameToWord } from '../schema.ts';

const names = z.array(z.string());

export function primitiveRoutes(manager: PrimitiveManager): RouteSpec[] {
  const nameList = (list: { name: string }[]) => list.map((p) => p.name);
  const lifecycle = (
    verb: 'start' | 'stop' | 'pause' | 'resume',
    answer: string,
    summary: string,
  ): RouteSpec =>
    route({
      method: 'GET',
      path: `/primitives/:primitive/${verb}.json` as '/primitives/:primitive/start.json',
      summary,
      action: true,
      answer: nameToWord,
      examples: { answer: { dance: answer } },
      handler: async ({ params }) => {
        const p = manager.get(params.primitive);
        await (verb === 'start' ? p.start() : verb === 'stop' ? p.stop() : p[verb]());
        return { [p.name]: answer };
      },
    });
  return [
    route({
      method: 'GET',
      path: '/primitives/list.json',
      summary: 'all primitive names',
      answer: z.object({ primitives: names }),
      examples: { answer: { primitives: ['dance', 'sinus'] } },
      handler: () => ({ primitives: nameList(manager.list()) }),
    }),
    route({
      method: 'GET',
      path: '/primitives/running/list.json',
      summary: 'the running (or paused) primitives',
      description:
        'The same list under both keys: `primitives` (REST API 4.0.0) and `running_primitives` (pypot).',
      answer: z.object({ primitives: names, running_primitives: names }),
      examples: { answer: { primitives: ['dance'], running_primitives: ['dance'] } },
      handler: () => {
        const running = nameList(manager.runningList());
        return { primitives: running, running_primitives: [...running] };
      },
    }),
    route({
      method: 'GET',
      path: '/primitives/problems.json',
      summary: 'custom primitive files that could not be loaded, with the reason',
      beyondV4: true,
      answer: z.object({ problems: z.array(z.object({ file: z.string(), reason: z.string() })) }),
      examples: {
        answer: {
          problems: [{ file: 'primitives/broken.ts', reason: 'no default export: export a Primitive class' }],
        },
      },
      handler: () => ({ problems: manager.loadProblems.map((p) => ({ file: p.file, reason: p.reason })) }),
    }),
    route({
      method: 'GET',
      path: '/primitives/:primitive/status.json',
      summary: "a primitive's state and the error that ended its last run (null if none)",
      beyondV4: true,
      answer: z.object({
        primitive: z.string(),
        state: z.enum(['stopped', 'running', 'paused']),
        running: z.boolean().meta({ description: 'running or paused' }),
        last_error: z.string().nullable().meta({
          description: 'why its last run ended on a failure (a throw, a crash, a watchdog); null if none',
        }),
        isolated: z.boolean().meta({ description: 'a custom primitive, run in its own worker thread' }),
      }),
      examples: {
        answer: { primitive: 'sinus', state: 'stopped', running: false, last_error: null, isolated: false },
      },
      handler: ({ params }) => manager.status(params.primitive),
    }),
    lifecycle('start', 'started', 'start a primitive (a running one stays as it is)'),
    lifecycle('stop', 'stopped', 'stop a primitive, after its teardown'),
    lifecycle('pause', 'paused', 'pause a running primitive'),
    lifecycle('resume', 'resumed', 'resume a paused primitive'),
    route({
      method: 'GET',
      path: '/primitives/:primitive/properties/list.json',
      summary: "a primitive's property names",
      answer: z.object({ property: names }),
      examples: { answer: { property: ['amplitude', 'frequency', 'motors'] } },
      handler: ({ params }) => ({
        property: nameList(manager.propertiesOf(manager.get(params.primitive))),
      }),
    }),
    route({
      method: 'GET',
      path: '/primitives/:primitive/properties/:prop/value.json',
      summary: 'read a property',
      answer: z.record(z.string(), z.unknown()),
      examples: { answer: { 'sinus.amplitude': 30 } },
      handler: ({ params }) => manager.readProperty(params.primitive, params.prop),
    }),
    route({
      method: 'POST',
      path: '/primitives/:primitive/properties/:prop/value.json',
      summary: 'write a property (the body is the bare new value)',
      bareBody: anyValue,
      answer: z.record(z.string(), z.unknown()),
      examples: { body: 30, answer: { 'sinus.amplitude': 30 } },
      handler: ({ params, body }) =>
        manager.writeProperty(params.primitive, params.prop, () =>
          bareValue(body, 'the body is the new value as JSON, for example 30 or "m1"'),
        ),
    }),
    route({
      method: 'GET',
      path: '/primitives/:primitive/methods/list.json',
      summary: "a primitive's method names",
      answer: z.object({ methods: names }),
      examples: { answer: { methods: ['reset'] } },
      handler: ({ params }) => ({ methods: nameList(manager.methodsOf(manager.get(params.primitive))) }),
    }),
    route({
      method: 'POST',
      path: '/primitives/:primitive/methods/:method/args.json',
      summary:
        'call a method: object body = named arguments, array = positional, other value = one, empty = none',
      bareBody: z
        .unknown()
        .meta({ description: 'the arguments: object = named, array = positional, other = one' }),
      answer: z.record(z.string(), z.unknown()),
      examples: { body: { amplitude: 10 }, answer: { 'sinus:reset': null } },
      handler: ({ params, body }) => manager.callMethod(params.primitive, params.method, argsOf(body)),
    }),
  ];
}

/** Arguments as the body gives them (docs/reference/contract.md 5). */
function argsOf(body: Body): MethodArgs {
  switch (body.kind) {
    case 'none':
      return { positional: [] };
    case 'form':
      return { named: body.fields };
    case 'text':
      return { positional: [body.text.trim()] };
    case 'json': {
      const v = body.value;
      if (Array.isArray(v)) return { positional: v };
      if (v !== null && typeof v === 'object') return { named: v as Record<string, unknown> };
      return { positional: [v] };
    }
  }
}
