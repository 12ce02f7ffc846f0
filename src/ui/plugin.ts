/**
 * The web view: the 3D twin and its control panel at /ui/, and the live state stream it reads (beyond the v4 API):
 * - WebSocket `/stream/state?rate=<Hz>`: a `hello` message describing the robot, then `state` messages at the rate
 *   asked (up to 50 Hz; send `{"rate": n}` to change it);
 * - `GET /stream/state.json`: the same state once, for clients that poll.
 * The HTTP routes are ordinary RouteSpecs (listed on `GET /`, errors through the one handler); the WebSocket route
 * is registered on the app by `registerStream`, since it needs @fastify/websocket loaded first.
 */
import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { RobotError, badRequest } from '../core/errors.ts';
import { NO_BODY } from '../http/body.ts';
import { RawReply, type RouteSpec } from '../http/route.ts';
import { FORWARDED_PREFIX } from '../http/access.ts';
import type { PrimitiveManager } from '../primitives/manager.ts';
import type { Robot } from '../robot/robot.ts';
import type { UrdfRobot } from '../urdf/types.ts';
import { robotDescriptionAnswer, sceneAnswer, stateAnswer } from './answers.ts';
import { BROWSER_DIR, BrowserBundle } from './bundle.ts';
import { MAX_RATE, type RobotDescription } from './protocol.ts';
import { type ViewTitle, viewTitle } from './title.ts';
import {
  type MarkerProvider,
  type ShadowProvider,
  describeRobot,
  robotState,
  sceneDescription,
} from './state.ts';
import { StateStream, parseRate, type StreamOptions } from './stream.ts';

export interface UiOptions {
  readonly robot: Robot;
  readonly primitives: PrimitiveManager;
  /** IK chain names. */
  readonly chains: readonly string[];
  /** The robot's URDF, sent to the view as data (src/scene/twin-scene.ts draws it). */
  readonly urdf: UrdfRobot;
  /** Which optional routes the server has (the camera frame, the sim's marker cards). */
  readonly features: RobotDescription['features'];
  /** Detected markers, when a detector runs; without one the state's `markers` is null. */
  readonly markers?: MarkerProvider;
  /** Shadow mode's comparison; without it the state's `shadow` is null. */
  readonly shadow?: ShadowProvider;
  readonly stream?: StreamOptions;
  /** A classroom twin's name, shown in the page's title. */
  readonly name?: string;
}

export interface WebView {
  /** The view's HTTP routes, for buildApp. */
  readonly routes: RouteSpec[];
  /** The WebSocket route, for the index page (it is registered by `registerStream`). */
  readonly listed: Pick<RouteSpec, 'method' | 'path' | 'summary'>[];
  readonly stream: StateStream;
  /** Adds the WebSocket route to `app` (before it listens). */
  registerStream(app: FastifyInstance): Promise<void>;
}

const DEFAULT_RATE = 20;
const STREAM_PATH = '/stream/state';

export async function createWebView(opts: UiOptions): Promise<WebView> {
  const { robot, primitives, markers, shadow } = opts;
  const description = describeRobot(robot, opts.chains, opts.features, opts.name ?? null);
  const hello = JSON.stringify(description);
  const stream = new StateStream(
    {
      version: () => robot.ticks,
      encode: (seq) => JSON.stringify(robotState(seq, robot, primitives, markers, shadow)),
    },
    opts.stream,
  );
  const bundle = new BrowserBundle();
  const [template, style] = await Promise.all([
    readFile(`${BROWSER_DIR}index.html`, 'utf8'),
    readFile(`${BROWSER_DIR}style.css`, 'utf8'),
  ]);
  const page = titled(template, viewTitle(description));
  const world = sceneDescription(robot, opts.urdf);
  // Documented and listed like the others; served by the WebSocket plugin (registerStream), never by this handler.
  const streamRoute: RouteSpec = {
    method: 'GET',
    path: STREAM_PATH,
    beyondV4: true,
    summary: `WebSocket: the live state at ?rate=<Hz> (up to ${MAX_RATE}); send {"rate": n} to change it`,
    description:
      'Upgrade to a WebSocket: a `hello` message describing the robot, then `state` messages (positions, ' +
      'compliance, running primitives, records, markers) at the rate asked. docs/api.md, "Live state stream".',
    answer: z.never().meta({ description: 'none: a plain GET is a 400, a WebSocket upgrade a 101' }),
    handler: () => {
      throw badRequest('this path is a WebSocket', `open it with new WebSocket('ws://<host>${STREAM_PATH}')`);
    },
  };
  const routes: RouteSpec[] = [
    {
      method: 'GET',
      beyondV4: true,
      path: '/ui',
      produces: 'text/html; charset=utf-8',
      summary: 'the web view: the robot in 3D, live, with its control panels',
      handler: ({ headers }) => {
        void bundle.script().catch(() => undefined); // start bundling while the page loads
        return new RawReply('text/html; charset=utf-8', pageUnder(page, headers?.[PREFIX_HEADER]));
      },
    },
    {
      method: 'GET',
      beyondV4: true,
      path: '/ui/app.js',
      produces: 'text/javascript; charset=utf-8',
      summary: "the web view's script (three.js and the view, bundled when the server is built)",
      handler: async () => {
        try {
          return new RawReply('text/javascript; charset=utf-8', await bundle.script());
        } catch (err) {
          throw new RobotError(
            'internal',
            'the web view could not be bundled',
            'check that npm ci installed three, urdf-loader and esbuild',
            (err as Error).message,
          );
        }
      },
    },
    {
      method: 'GET',
      beyondV4: true,
      path: '/ui/style.css',
      produces: 'text/css; charset=utf-8',
      summary: "the web view's style sheet",
      handler: () => new RawReply('text/css; charset=utf-8', style),
    },
    {
      method: 'GET',
      beyondV4: true,
      path: '/ui/robot.json',
      answer: robotDescriptionAnswer,
      summary: 'what the web view draws: motors with limits, chains, camera, table, optional routes',
      handler: () => description,
    },
    {
      method: 'GET',
      beyondV4: true,
      path: '/ui/scene.json',
      answer: sceneAnswer,
      summary:
        "what the 3D view builds its scene from: the URDF's links and joints, table, cards' resting places, camera",
      handler: () => world,
    },
    {
      method: 'GET',
      beyondV4: true,
      path: `${STREAM_PATH}.json`,
      answer: stateAnswer,
      summary: 'the live state once (positions, compliance, running primitives, records, markers)',
      handler: () => robotState(0, robot, primitives, markers, shadow),
    },
  ];
  return {
    routes,
    listed: [streamRoute],
    stream,
    async registerStream(app) {
      // Imported here, not at the top: a process that stops on a bad flag never loads it.
      const { default: websocket } = await import('@fastify/websocket');
      await app.register(async (scope) => {
        await scope.register(websocket, { options: { maxPayload: 4096 } });
        scope.addHook('onClose', async () => stream.close());
        // The full declaration (an HTTP handler and a wsHandler) keeps the route documented: a plain GET there is a
        // JSON 400 saying to open a WebSocket, where the plugin's short form would answer an empty 404.
        scope.route<{ Querystring: { rate?: string } }>({
          method: 'GET',
          url: STREAM_PATH,
          config: { route: streamRoute },
          // Runs before the upgrade, so a bad rate is a plain JSON 400.
          preValidation: async (req) => {
            if (req.query.rate !== undefined) parseRate(req.query.rate);
          },
          handler: () => streamRoute.handler({ params: {}, query: {}, body: NO_BODY }),
          wsHandler: (socket, req) => {
            socket.send(hello);
            const rate = req.query.rate === undefined ? DEFAULT_RATE : parseRate(req.query.rate);
            const viewer = stream.add(socket, rate);
            socket.on('message', (data) => {
              try {
                viewer.setRate(parseMessage(String(data)).rate);
              } catch (err) {
                const e = err instanceof RobotError ? err : badRequest(String(err));
                socket.send(
                  JSON.stringify({ type: 'error', error: e.message, tip: e.tip, details: e.details }),
                );
              }
            });
            socket.on('close', () => viewer.remove());
            socket.on('error', () => viewer.remove());
          },
        });
      });
    },
  };
}

const MESSAGE_TIP = `send {"rate": 20} (frames per second, at most ${MAX_RATE})`;

function parseMessage(text: string): { rate: number } {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    throw badRequest('a message must be JSON', MESSAGE_TIP, text.slice(0, 80));
  }
  if (typeof message !== 'object' || message === null || !('rate' in message))
    throw badRequest('the only message a viewer sends is its rate', MESSAGE_TIP, text.slice(0, 80));
  return { rate: parseRate(message.rate) };
}

/** The page with its title and heading filled in (the script sets the same ones once it runs). */
function titled(page: string, title: ViewTitle): string {
  const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return page
    .replace(/<title>[^<]*<\/title>/, `<title>${esc(title.tab)}</title>`)
    .replace(/(<h1 id="title">)[^<]*(<\/h1>)/, `$1${esc(title.heading)}$2`);
}

/** Set by a classroom's main port when it serves a twin under `/twins/<name>/` (src/classroom/). */
export const PREFIX_HEADER = FORWARDED_PREFIX;
const PREFIX = /^\/twins\/[A-Za-z0-9_-]+$/;

/** The page with its links under `prefix` (a classroom twin served on the main port), and the prefix for its script. */
function pageUnder(page: string, prefix: string | string[] | undefined): string {
  if (typeof prefix !== 'string' || !PREFIX.test(prefix)) return page;
  return page
    .replaceAll('"/ui/', `"${prefix}/ui/`)
    .replace('href="/"', `href="${prefix}/"`)
    .replace('<head>', `<head>\n    <meta name="poppy-base" content="${prefix}" />`);
}
