/** /primitives: list, lifecycle, declared properties and methods (REST-API.md 4.5, CONTRACT.md 5). */
import type { MethodArgs, PrimitiveManager } from '../../primitives/manager.ts';
import { bareValue, type Body } from '../body.ts';
import type { RouteSpec } from '../route.ts';

export function primitiveRoutes(manager: PrimitiveManager): RouteSpec[] {
  const names = (list: { name: string }[]) => list.map((p) => p.name);
  const lifecycle = (
    verb: 'start' | 'stop' | 'pause' | 'resume',
    answer: string,
    summary: string,
  ): RouteSpec => ({
    method: 'GET',
    path: `/primitives/:primitive/${verb}.json`,
    summary,
    handler: async ({ params }) => {
      const p = manager.get(params.primitive!);
      await (verb === 'start' ? p.start() : verb === 'stop' ? p.stop() : p[verb]());
      return { [p.name]: answer };
    },
  });
  return [
    {
      method: 'GET',
      path: '/primitives/list.json',
      summary: 'all primitive names',
      handler: () => ({ primitives: names(manager.list()) }),
    },
    {
      method: 'GET',
      path: '/primitives/running/list.json',
      summary: 'the running (or paused) primitives',
      handler: () => {
        const running = names(manager.runningList());
        return { primitives: running, running_primitives: [...running] };
      },
    },
    {
      method: 'GET',
      path: '/primitives/problems.json',
      summary: 'custom primitive files that could not be loaded, with the reason',
      handler: () => ({ problems: manager.loadProblems.map((p) => ({ file: p.file, reason: p.reason })) }),
    },
    {
      method: 'GET',
      path: '/primitives/:primitive/status.json',
      summary: "a primitive's state and the error that ended its last run (null if none)",
      handler: ({ params }) => manager.status(params.primitive!),
    },
    lifecycle('start', 'started', 'start a primitive (a running one stays as it is)'),
    lifecycle('stop', 'stopped', 'stop a primitive, after its teardown'),
    lifecycle('pause', 'paused', 'pause a running primitive'),
    lifecycle('resume', 'resumed', 'resume a paused primitive'),
    {
      method: 'GET',
      path: '/primitives/:primitive/properties/list.json',
      summary: "a primitive's property names",
      handler: ({ params }) => ({
        property: names(manager.propertiesOf(manager.get(params.primitive!))),
      }),
    },
    {
      method: 'GET',
      path: '/primitives/:primitive/properties/:prop/value.json',
      summary: 'read a property',
      handler: ({ params }) => manager.readProperty(params.primitive!, params.prop!),
    },
    {
      method: 'POST',
      path: '/primitives/:primitive/properties/:prop/value.json',
      summary: 'write a property (the body is the bare new value)',
      handler: ({ params, body }) =>
        manager.writeProperty(params.primitive!, params.prop!, () =>
          bareValue(body, 'the body is the new value as JSON, for example 30 or "m1"'),
        ),
    },
    {
      method: 'GET',
      path: '/primitives/:primitive/methods/list.json',
      summary: "a primitive's method names",
      handler: ({ params }) => ({ methods: names(manager.methodsOf(manager.get(params.primitive!))) }),
    },
    {
      method: 'POST',
      path: '/primitives/:primitive/methods/:method/args.json',
      summary:
        'call a method: object body = named arguments, array = positional, other value = one, empty = none',
      handler: ({ params, body }) => manager.callMethod(params.primitive!, params.method!, argsOf(body)),
    },
  ];
}

/** Arguments as the body gives them (CONTRACT.md 5). */
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
