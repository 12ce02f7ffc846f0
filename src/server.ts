/**
 * The composition root: config -> backend -> Robot -> app. The only module that knows which backend runs.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Backend } from './core/backend.ts';
import { ConfigError } from './core/errors.ts';
import { type RobotConfig, loadRobotConfig } from './config/robot-config.ts';
import { loadUrdf } from './urdf/parse.ts';
import type { UrdfRobot } from './urdf/types.ts';
import { SimBackend, type SimSpeed } from './sim/backend.ts';
import { type Logger, Robot, silentLogger } from './robot/robot.ts';
import { buildApp } from './http/app.ts';
import type { RouteSpec } from './http/route.ts';
import { motorRoutes } from './http/routes/motors.ts';
import { miscRoutes, type PrimitiveListing } from './http/routes/misc.ts';
import { simRoutes } from './http/routes/sim.ts';
import { primitiveRoutes } from './http/routes/primitives.ts';
import { recordRoutes } from './http/routes/records.ts';
import { ikRoutes } from './http/routes/ik.ts';
import { sensorRoutes } from './http/routes/sensors.ts';
import { cardRoutes } from './http/routes/cards.ts';
import { MarkerWatcher } from './vision/watcher.ts';
import { PrimitiveManager } from './primitives/manager.ts';
import { RecordStore } from './records/store.ts';
import { RecordsService } from './records/service.ts';
import { buildChains } from './ik/chains.ts';

export interface ServerOptions {
  readonly backend: 'sim' | 'real';
  /** Built-in robot name or path to a robot config. */
  readonly robot: string;
  /** Sim seconds per wall second, 'max', or 'manual' (tests). */
  readonly speed?: SimSpeed;
  /** Where moves are saved (default ./records). */
  readonly recordsDir?: string;
  /** Folder of custom primitives; default: `primitives/` beside the robot config, when it exists. */
  readonly primitivesDir?: string;
  /** Seed for the behaviours' randomness (default 1). */
  readonly seed?: number;
  readonly corsOrigins?: '*' | readonly string[];
  readonly logger?: Logger;
  /** Physics timestep (s), sim only. */
  readonly dt?: number;
}

export interface RobotServer {
  readonly app: FastifyInstance;
  readonly robot: Robot;
  readonly backend: Backend;
  readonly config: RobotConfig;
  readonly primitives: PrimitiveManager;
  readonly records: RecordsService;
  /** The marker detector running in the background, when the robot has a camera and a detector. */
  readonly markers: MarkerWatcher | undefined;
  /** Stops the robot and the backend; idempotent. */
  close(): Promise<void>;
}

async function loadRobotUrdf(config: RobotConfig): Promise<UrdfRobot> {
  try {
    return await loadUrdf(config.urdfPath);
  } catch (err) {
    throw new ConfigError('urdf', (err as Error).message, config.source);
  }
}

async function createBackend(opts: ServerOptions, config: RobotConfig, urdf: UrdfRobot): Promise<Backend> {
  if (opts.backend === 'real') {
    throw new ConfigError(
      '--backend',
      'the real backend (Dynamixel serial bus) is not available in this version yet; use --backend=sim',
    );
  }
  return new SimBackend({ config, urdf, speed: opts.speed ?? 1, dt: opts.dt });
}

export async function createRobotServer(opts: ServerOptions): Promise<RobotServer> {
  const logger = opts.logger ?? silentLogger;
  const config = await loadRobotConfig(opts.robot);
  const urdf = await loadRobotUrdf(config);
  const chains = buildChains(config, urdf);
  const backend = await createBackend(opts, config, urdf);
  await backend.open();
  const robot = new Robot(config, backend, { logger });
  try {
    await robot.start();
  } catch (err) {
    await backend.close();
    throw err;
  }
  const primitives = new PrimitiveManager(robot, {
    combine: config.primitiveCombine,
    logger,
    primitivesDir: opts.primitivesDir ?? defaultPrimitivesDir(config),
    seed: opts.seed ?? 1,
  });
  const store = new RecordStore(path.resolve(opts.recordsDir ?? 'records'), logger);
  const records = new RecordsService({ robot, manager: primitives, store, logger });
  try {
    await primitives.open();
    await records.open();
  } catch (err) {
    await records.close();
    await primitives.close();
    await robot.stop();
    await backend.close();
    throw err;
  }
  const markers =
    backend.camera && config.markerDetector
      ? new MarkerWatcher({
          camera: backend.camera,
          clock: backend.clock,
          onError: (err) => logger.warn(`marker detector: ${(err as Error)?.message ?? String(err)}`),
        })
      : undefined;
  const listing: PrimitiveListing = () => primitives.listing();
  const routes: RouteSpec[] = [
    ...miscRoutes(robot, listing),
    ...motorRoutes(robot),
    ...primitiveRoutes(primitives),
    ...recordRoutes(records),
    ...ikRoutes(robot, chains),
    ...sensorRoutes({ camera: backend.camera, markers }),
  ];
  if (backend.simulation) routes.push(...simRoutes(robot, backend.simulation));
  if (backend instanceof SimBackend) routes.push(...cardRoutes(backend));
  const app = buildApp({ routes, logger, corsOrigins: opts.corsOrigins, title: `Poppy ${config.name}` });
  backend.start?.();
  markers?.start();
  let closing: Promise<void> | undefined;
  return {
    app,
    robot,
    backend,
    config,
    primitives,
    records,
    markers,
    close() {
      closing ??= (async () => {
        await app.close();
        await markers?.close();
        await records.close();
        await primitives.close();
        await robot.stop();
        await backend.close();
      })();
      return closing;
    },
  };
}

function defaultPrimitivesDir(config: RobotConfig): string | undefined {
  if (!config.source) return undefined;
  const dir = path.join(path.dirname(config.source), 'primitives');
  return existsSync(dir) ? dir : undefined;
}
