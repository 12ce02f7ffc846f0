import { z } from 'zod';
import { RobotError } from '../../core/errors.ts';
import { assertMoveName } from '../../records/move.ts';
import { MAX_REPLAY_SPEED, MIN_REPLAY_SPEED } from '../../records/player.ts';
import type { RecordsService } from '../../records/service.ts';
import { route, type RouteSpec } from '../route.ts';
import type { MotionPolicy } from '../profile.ts';
import { GUARD_NOTE } from './motors.ts';
import { forceQuery, lenientNumber, nameToWord } from '../schema.ts';

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

const recordBody = z.object({
  motors: z
    .union([z.array(z.unknown()), z.string()], { error: 'must be an array of motor names or "m1,m2"' })
    .optional()
    .meta({
      description: 'motor or alias names, an array or one comma-separated string; default: every motor',
    }),
});

const playBody = z.object({
  speed: lenientNumber
    .refine((s) => Math.abs(s) >= MIN_REPLAY_SPEED && Math.abs(s) <= MAX_REPLAY_SPEED, {
      error: `must be from ${MIN_REPLAY_SPEED} to ${MAX_REPLAY_SPEED}, or from -${MAX_REPLAY_SPEED} to -${MIN_REPLAY_SPEED} (backwards)`,
    })
    .default(1)
    .meta({
      description: `replay speed, default 1; negative plays backwards; ${MIN_REPLAY_SPEED} <= |speed| <= ${MAX_REPLAY_SPEED}`,
    }),
});

const trajectory = z
  .object({ length: z.number().meta({ description: 'number of time keys' }) })
  .catchall(z.unknown())
  .meta({ description: '{<move>: {<t>: {<motor>: [position, speed]}}, length}' });

/**
 * An object; its fields are checked by the move file reader, which names the frame and motor at fault (a schema
 * here would say less).
 */
const uploadBody = z
  .looseObject({
    framerate: z.unknown().meta({ description: 'frames per second of the recording' }),
    positions: z.unknown().meta({ description: '{<t seconds>: {<motor>: [position degrees, speed]}}' }),
  })
  .meta({ description: "a move as pypot's Move.save writes it: {framerate, positions}" });

/** docs/reference/rest-api.md 4.4 with the rules of docs/reference/contract.md 4. */
export function recordRoutes(
  records: RecordsService,
  policy: MotionPolicy = { compliantGoto: 'reject' },
): RouteSpec[] {
  const routes: RouteSpec[] = [
    route({
      method: 'GET',
      path: '/records/list.json',
      summary: 'the saved moves, sorted by name',
      answer: z.object({ moves: z.array(z.string()) }),
      examples: { answer: { moves: ['wave'] } },
      handler: async () => ({ moves: await records.list() }),
    }),
    route({
      method: 'GET',
      path: '/records/problems.json',
      summary: 'move files that cannot be read (left out of list.json), with the reason',
      beyondV4: true,
      answer: z.object({ problems: z.array(z.object({ file: z.string(), reason: z.string() })) }),
      examples: {
        answer: { problems: [{ file: 'broken.record', reason: 'not JSON: Unexpected end of JSON input' }] },
      },
      handler: async () => ({ problems: await records.problems() }),
    }),
    route({
      method: 'GET',
      path: '/records/:move/value.json',
      summary: 'the trajectory of a saved move, or of one being recorded',
      answer: trajectory,
      examples: { answer: { wave: { '0.0': { m1: [0.5, 0] }, '0.02': { m1: [0.7, 10] } }, length: 2 } },
      handler: ({ params }) => records.value(params.move),
    }),
    route({
      method: 'POST',
      path: '/records/:move/record.json',
      summary: 'start recording a move (body {"motors": [...]} optional: every motor by default)',
      body: recordBody,
      tip: RECORD_TIP,
      answer: nameToWord,
      examples: { body: { motors: ['m1', 'm2'] }, answer: { wave: 'recording' } },
      handler: async ({ params, body }) => {
        const name = params.move;
        assertMoveName(name);
        await records.record(name, body.motors);
        return { [name]: 'recording' };
      },
    }),
    route({
      method: 'POST',
      path: '/records/:move/save.json',
      summary: 'stop recording and save the move',
      answer: nameToWord,
      examples: { answer: { wave: 'saved' } },
      handler: async ({ params }) => {
        await records.save(params.move);
        return { [params.move]: 'saved' };
      },
    }),
    route({
      method: 'POST',
      path: '/records/:move/play.json',
      summary: 'replay a move (body {"speed": 1.0} optional; negative plays backwards)',
      description: GUARD_NOTE.replace(
        'the move is predicted',
        'the replay (with its travel to the first frame) is predicted',
      ),
      body: playBody,
      tip: PLAY_TIP,
      answer: nameToWord,
      examples: { body: { speed: -1 }, answer: { wave: 'started replay' } },
      handler: async ({ params, body, query }) => {
        const name = params.move;
        assertMoveName(name);
        const force = forceQuery(query);
        const guard = policy.guard;
        await records.play(name, body.speed, guard && ((path) => guard(path, force)));
        return { [name]: 'started replay' };
      },
    }),
    route({
      method: 'POST',
      path: '/records/:move/stop.json',
      summary: 'stop the replay of a move',
      answer: nameToWord,
      examples: { answer: { wave: 'stopped' } },
      handler: async ({ params }) => {
        await records.stop(params.move);
        return { [params.move]: 'stopped' };
      },
    }),
    route({
      method: 'POST',
      path: '/records/:move/delete.json',
      summary: 'stop and delete a move, from disk and memory',
      answer: nameToWord,
      examples: { answer: { wave: 'deleted' } },
      handler: async ({ params }) => {
        await records.delete(params.move);
        return { [params.move]: 'deleted' };
      },
    }),
    route({
      method: 'POST',
      path: '/records/:move/upload.json',
      summary: 'install a move sent as pypot move JSON {"framerate", "positions"} (the deploy gate)',
      description:
        'Checked like a move file read from disk (frames, motors of this robot); saved atomically, replacing a ' +
        'saved move of that name. 409 while that move is recorded or replayed.',
      beyondV4: true,
      body: uploadBody,
      tip: UPLOAD_TIP,
      answer: z.object({ frames: z.number() }).catchall(z.string()),
      examples: {
        body: { framerate: 50, positions: { '0.0': { m1: [0, 0] }, '0.02': { m1: [0.4, 20] } } },
        answer: { wave: 'uploaded', frames: 2 },
      },
      handler: async ({ params, body }) => {
        const name = params.move;
        assertMoveName(name);
        const frames = await records.upload(name, body);
        return { [name]: 'uploaded', frames };
      },
    }),
  ];
  // A name with a "/" spans several path segments: answer 400 for it as for any other bad name.
  for (const method of ['GET', 'POST'] as const)
    routes.push({
      method,
      path: '/records/*',
      summary: 'a move name with a "/" in it: 400',
      beyondV4: true,
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
