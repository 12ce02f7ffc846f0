import { RobotError } from '../../core/errors.ts';
import { assertMoveName } from '../../records/move.ts';
import { parseReplaySpeed } from '../../records/player.ts';
import type { RecordsService } from '../../records/service.ts';
import { objectBody } from '../body.ts';
import type { RouteSpec } from '../route.ts';

const RECORD_TIP = 'send {"motors": ["m1", "m2"]} or {"motors": "m1,m2"}, or no body to record every motor';
const UPLOAD_TIP =
  'send the move as pypot saves it: {"framerate": 50, "positions": {"0.0": {"m1": [0.0, 0.0]}, ...}}';
const PLAY_TIP = 'send {"speed": 1.0} (negative plays backwards), or no body';

/** Per-move operations and their method, for the answers to paths that carry a bad name. */
const OPERATIONS: Readonly<Record<string, 'GET' | 'POST'>> = {
  'value.json': 'GET',
  'record.json': 'POST',
  'save.json': 'POST',
  'play.json': 'POST',
  'stop.json': 'POST',
  'delete.json': 'POST',
  'upload.json': 'POST',
};

/** REST-API.md 4.4 with the rules of CONTRACT.md 4. */
export function recordRoutes(records: RecordsService): RouteSpec[] {
  const routes: RouteSpec[] = [
    {
      method: 'GET',
      path: '/records/list.json',
      summary: 'the saved moves, sorted by name',
      handler: async () => ({ moves: await records.list() }),
    },
    {
      method: 'GET',
      path: '/records/:move/value.json',
      summary: 'the trajectory of a saved move, or of one being recorded',
      handler: ({ params }) => records.value(params.move!),
    },
    {
      method: 'POST',
      path: '/records/:move/record.json',
      summary: 'start recording a move (body {"motors": [...]} optional: every motor by default)',
      handler: async ({ params, body }) => {
        const name = params.move!;
        assertMoveName(name);
        await records.record(name, objectBody(body, RECORD_TIP).motors);
        return { [name]: 'recording' };
      },
    },
    {
      method: 'POST',
      path: '/records/:move/save.json',
      summary: 'stop recording and save the move',
      handler: async ({ params }) => {
        await records.save(params.move!);
        return { [params.move!]: 'saved' };
      },
    },
    {
      method: 'POST',
      path: '/records/:move/play.json',
      summary: 'replay a move (body {"speed": 1.0} optional; negative plays backwards)',
      handler: async ({ params, body }) => {
        const name = params.move!;
        assertMoveName(name);
        await records.play(name, parseReplaySpeed(objectBody(body, PLAY_TIP).speed));
        return { [name]: 'started replay' };
      },
    },
    {
      method: 'POST',
      path: '/records/:move/stop.json',
      summary: 'stop the replay of a move',
      handler: async ({ params }) => {
        await records.stop(params.move!);
        return { [params.move!]: 'stopped' };
      },
    },
    {
      method: 'POST',
      path: '/records/:move/delete.json',
      summary: 'stop and delete a move, from disk and memory',
      handler: async ({ params }) => {
        await records.delete(params.move!);
        return { [params.move!]: 'deleted' };
      },
    },
    {
      method: 'POST',
      path: '/records/:move/upload.json',
      summary:
        'beyond v4: install a move sent as pypot move JSON {"framerate", "positions"} (the deploy gate)',
      handler: async ({ params, body }) => {
        const name = params.move!;
        assertMoveName(name);
        const frames = await records.upload(name, objectBody(body, UPLOAD_TIP));
        return { [name]: 'uploaded', frames };
      },
    },
  ];
  // A name with a "/" spans several path segments: answer 400 for it as for any other bad name.
  for (const method of ['GET', 'POST'] as const)
    routes.push({
      method,
      path: '/records/*',
      summary: 'a move name with a "/" in it: 400',
      handler: ({ params }) => badPath(method, params['*'] ?? ''),
    });
  return routes;
}

function badPath(method: 'GET' | 'POST', rest: string): never {
  const slash = rest.lastIndexOf('/');
  const op = rest.slice(slash + 1);
  const expected = op === 'list.json' && slash < 0 ? 'GET' : OPERATIONS[op];
  if (expected && slash >= 0) assertMoveName(rest.slice(0, slash)); // always throws for a multi-segment name
  if (expected && expected !== method)
    throw new RobotError(
      'method_not_allowed',
      `${method} is not allowed on /records/${rest}`,
      `use ${expected}`,
      expected,
    );
  throw new RobotError(
    'not_found',
    `no such endpoint: ${method} /records/${rest}`,
    'GET / lists every endpoint',
    'unknown route',
  );
}
