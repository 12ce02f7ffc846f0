/**
 * The composition root: config -> backend -> Robot -> app. The only module that knows which backend runs.
 */
import type { FastifyInstance } from 'fastify';
import type { Backend } from './core/backend.ts';
import { ConfigError } from './core/errors.ts';
import { type RobotConfig, loadRobotConfig } from './config/robot-config.ts';
import { loadUrdf } from './urdf/parse.ts';
import { SimBackend, type SimSpeed } from './sim/backend.ts';
import { type Logger, Robot, silentLogger } from './robot/robot.ts';
import { buildApp } from './http/app.ts';
import type { RouteSpec } from './http/route.ts';
import { motorRoutes } from './http/routes/motors.ts';
import { miscRoutes, type PrimitiveListing } from './http/routes/misc.ts';
import { simRoutes } from './http/routes/sim.ts';

export interface ServerOptions {
  readonly backend: 'sim' | 'real';
  /** Built-in robot name or path to a robot config. */
  readonly robot: string;
  /** Sim seconds per wall second, 'max', or 'manual' (tests). */
  readonly speed?: SimSpeed;
  readonly recordsDir?: string;
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
  /** Stops the robot and the backend; idempotent. */
  close(): Promise<void>;
}

async function createBackend(opts: ServerOptions, config: RobotConfig): Promise<Backend> {
  if (opts.backend === 'real') {
    throw new ConfigError(
      '--backend',
      'the real backend (Dynamixel serial bus) is not available in this version yet; use --backend=sim',
    );
  }
  let urdf;
  try {
    urdf = await loadUrdf(config.urdfPath);
  } catch (err) {
    throw new ConfigError('urdf', (err as Error).message, config.source);
  }
  return new SimBackend({ config, urdf, speed: opts.speed ?? 1, dt: opts.dt });
}

export async function createRobotServer(opts: ServerOptions): Promise<RobotServer> {
  const logger = opts.logger ?? silentLogger;
  const config = await loadRobotConfig(opts.robot);
  const backend = await createBackend(opts, config);
  await backend.open();
  const robot = new Robot(config, backend, { logger });
  try {
    await robot.start();
  } catch (err) {
    await backend.close();
    throw err;
  }
  const primitives: PrimitiveListing = () => [];
  const routes: RouteSpec[] = [...miscRoutes(robot, primitives), ...motorRoutes(robot)];
  if (backend.simulation) routes.push(...simRoutes(robot, backend.simulation));
  const app = buildApp({ routes, logger, corsOrigins: opts.corsOrigins, title: `Poppy ${config.name}` });
  let closing: Promise<void> | undefined;
  return {
    app,
    robot,
    backend,
    config,
    close() {
      closing ??= (async () => {
        await app.close();
        await robot.stop();
        await backend.close();
      })();
      return closing;
    },
  };
}
