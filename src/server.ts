// Over 400 lines: the composition root wires every room's parts in one place, the one module that knows them all.
/** The composition root: config -> backend -> Robot -> app. The only module that knows which backend runs. */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Backend } from './core/backend.ts';
import { ConfigError } from './core/errors.ts';
import { type RobotConfig, loadRobotConfig } from './config/robot-config.ts';
import { loadUrdf } from './urdf/parse.ts';
import type { UrdfRobot } from './urdf/types.ts';
import { SimBackend, type SimSpeed } from './sim/backend.ts';
import type { SimulationControls } from './sim/controls.ts';
import { Robot } from './robot/robot.ts';
import { type Logger, silentLogger } from './core/logger.ts';
import { buildApp } from './http/app.ts';
import type { AccessOptions } from './http/access.ts';
import type { HttpTimeouts } from './http/timeouts.ts';
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
import { WorkerDetector } from './vision/worker-detector.ts';
import { PrimitiveManager } from './primitives/manager.ts';
import type { IsolationOptions } from './primitives/isolated/host.ts';
import { RecordStore } from './records/store.ts';
import { RecordsService } from './records/service.ts';
import { buildChains } from './ik/chains.ts';
import { defaultProfile, pypotProfile } from './http/profile.ts';
import { ChangeCounter } from './http/robot-answer.ts';
import { MARKER_CODES } from './vision/marker.ts';
import { createWebView } from './ui/plugin.ts';
import type { StateStream } from './ui/stream.ts';
import { RealBackend, type RealOptions } from './real/backend.ts';
import { CaptureCamera } from './real/camera.ts';
import { RobotMetrics } from './http/metrics.ts';
import type { WorldScheduler } from './sim/scheduler.ts';
import { shadowRoutes } from './http/routes/shadow.ts';
import { calibrationRoutes } from './http/routes/calibration.ts';
import { type ServoParams, loadCalibration, servoParamsOf } from './config/calibration.ts';
import { busRoutes } from './http/routes/bus.ts';
import { ShadowTwin, shadowForStream } from './shadow/twin.ts';
import { chooseTwinThread, measureStepCostInWorker } from './shadow/twin-engine-thread.ts';
import type { ShadowThreadFlag } from './config/flags.ts';
import { twinStep } from './shadow/physics-rate.ts';
import { calibratedDeadBands } from './shadow/comparator.ts';
import { CycleLog } from './shadow/cycle-log.ts';
import { MoveGuard, twinState } from './shadow/guard.ts';
import { CalibrationRun } from './calibration/server-run.ts';
import { cycleRig } from './calibration/real-rig.ts';
import { Phases } from './core/phases.ts';
import { Readiness } from './http/readiness.ts';

/** The marker detector's cap in wall time (see MarkerWatcherOptions.maxWallRate). */
const MAX_DETECTIONS_PER_WALL_SECOND = 10;

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
  /** Who may call: allowed hosts and origins, tokens (src/http/access.ts; docs/security.md). */
  readonly access?: AccessOptions;
  readonly logger?: Logger;
  /** Sim only: the camera's lens and sensor model (default true); false gives clean frames. */
  readonly cameraRealism?: boolean;
  /** Physics timestep (s), sim only. */
  readonly dt?: number;
  /** Client compatibility profile: `pypot` answers as pypot 5.0.2 does (docs/reference/contract.md 8). */
  readonly compat?: 'pypot';
  /** Header, request and idle timeouts of the HTTP connections (ms). */
  readonly timeouts?: Partial<HttpTimeouts>;
  /** Log every request at debug level. */
  readonly requestLog?: boolean;
  /** Custom primitives in worker threads (default) or inline; and the workers' limits. */
  readonly primitiveIsolation?: 'worker' | 'inline';
  readonly primitiveLimits?: Partial<IsolationOptions>;
  /** Control loop rate, Hz (default 50). */
  readonly loopHz?: number;
  /** Real only: the serial line, what to do about motors that do not answer, and the servos' state at close. */
  readonly real?: Omit<RealOptions, 'config' | 'camera' | 'log'>;
  /** Real only: camera device (/dev/video0) or capture command; none by default. */
  readonly camera?: string;
  /** Sim only: step with other twins in this shared scheduler (a classroom) instead of a loop of its own. */
  readonly scheduler?: WorldScheduler;
  /** A classroom twin's name: its web view's title and its index page show it. */
  readonly name?: string;
  /** Labels on every metric series of this server (a classroom twin's `twin`). */
  readonly metricsLabels?: Readonly<Record<string, string>>;
  /** Real only: run the physics twin beside the robot and compare them (also the robot config's `shadow`). */
  readonly shadow?: boolean;
  /** With shadow: the twin's physics rate, Hz, or 'auto' (default): chosen from a step's cost here. */
  readonly shadowPhysicsHz?: number | 'auto';
  /** With shadow and a rate set (not 'auto'): the twin's solver iterations a step (tests, benches; default 4). */
  readonly shadowSolverIterations?: number;
  /** With shadow: where the twin's physics runs; 'auto' chooses by the machine's cores; default this thread. */
  readonly shadowThread?: ShadowThreadFlag;
  /** With shadow: predict each goto, multi-goto and IK goto and refuse (409) one that collides. */
  readonly guard?: boolean;
  /** With shadow: each cycle's commands and readings to this file, JSON lines (calibrate --from-log). */
  readonly shadowLog?: string;
  /** A calibration file for the twin (sim backend, shadow twin, guard); default: the robot config's `calibration`. */
  readonly calibration?: string;
  /** Where the start's time goes, part by part (the start-up line prints it). */
  readonly phases?: Phases;
  /**
   * GET /metrics also shows the process's own figures (memory, CPU, GC, the event loop's delay): for a process that
   * runs this one server (main.ts), not for a classroom's twins, which share one process and its own /metrics.
   */
  readonly processMetrics?: boolean;
}

/** At shutdown, how long connections still busy (a half-sent body) may take before they are cut (ms). */
const CLOSE_GRACE_MS = 300;

export interface RobotServer {
  readonly app: FastifyInstance;
  readonly robot: Robot;
  readonly backend: Backend;
  /** The twin's controls (hand, contacts, time, poses): present only on the sim backend. */
  readonly simulation: SimulationControls | undefined;
  readonly config: RobotConfig;
  readonly primitives: PrimitiveManager;
  readonly records: RecordsService;
  /** The marker detector running in the background, when the robot has a camera and a detector. */
  readonly markers: MarkerWatcher | undefined;
  /** The live state stream of the web view (/ui/, /stream/state). */
  readonly stream: StateStream;
  /** GET /metrics's registry, and the last request answered. */
  readonly metrics: RobotMetrics;
  /** The twin beside the real robot (--shadow), when it runs. */
  readonly shadow: ShadowTwin | undefined;
  /** Ready once the custom primitives are loaded (the robot is started before the app exists): /readyz. */
  readonly readiness: Readiness;
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

async function createBackend(
  opts: ServerOptions,
  config: RobotConfig,
  urdf: UrdfRobot,
  servoParams: ReadonlyMap<number, ServoParams> | undefined,
): Promise<Backend> {
  if (opts.backend === 'real') {
    const logger = opts.logger ?? silentLogger;
    const log = (line: string) => logger.warn(line);
    let camera: CaptureCamera | undefined;
    if (opts.camera) {
      if (!config.camera)
        throw new ConfigError('--camera', `the robot ${config.name} has no camera in its config`);
      camera = new CaptureCamera({
        source: opts.camera,
        resolution: config.camera.resolution,
        fps: config.camera.fps,
        log,
      });
    }
    return new RealBackend({ ...opts.real, config, camera, log, loopHz: opts.loopHz });
  }
  return new SimBackend({
    config,
    urdf,
    speed: opts.speed ?? 1,
    dt: opts.dt,
    scheduler: opts.scheduler,
    cameraRealism: opts.cameraRealism,
    servoParams,
  });
}

export async function createRobotServer(opts: ServerOptions): Promise<RobotServer> {
  const logger = opts.logger ?? silentLogger;
  const phases = opts.phases ?? new Phases();
  const config = await loadRobotConfig(opts.robot);
  if (opts.guard && !(opts.backend === 'real' && (opts.shadow ?? config.shadow)))
    throw new ConfigError(
      '--guard',
      'the guard predicts moves with the twin: it needs --backend=real --shadow',
    );
  if (opts.shadow && opts.backend !== 'real')
    throw new ConfigError(
      '--shadow',
      'shadow mode runs a twin beside the real robot: it needs --backend=real (on the sim backend the twin is the robot)',
    );
  const calibrationFile = opts.calibration ?? config.calibrationPath;
  const calibration = calibrationFile
    ? { file: path.resolve(calibrationFile), calibration: await loadCalibration(calibrationFile, config) }
    : undefined;
  const servoParams = calibration && servoParamsOf(calibration.calibration);
  phases.mark('config');
  const urdf = await loadRobotUrdf(config);
  const chains = buildChains(config, urdf);
  phases.mark('urdf');
  // The shadow twin's step is timed before the bus process starts beside it (decisions/0061), on the thread the twin
  // will run on.
  const log = (line: string, level: 'warn' | 'info' = 'info') => logger[level](line);
  const shadowing = opts.backend === 'real' && (opts.shadow ?? config.shadow);
  const twinThread = shadowing ? chooseTwinThread(opts.shadowThread, log) : undefined;
  const twinSetting = shadowing
    ? await twinStep({
        config,
        urdf,
        servoParams,
        hz: opts.shadowPhysicsHz,
        iterations: opts.shadowSolverIterations,
        log,
        measure:
          twinThread === 'worker'
            ? ({ solverIterations }) =>
                measureStepCostInWorker({ config, urdf, servoParams, solverIterations })
            : undefined,
        ownCore: twinThread === 'worker',
      })
    : undefined;
  const backend = await createBackend(opts, config, urdf, servoParams);
  await backend.open();
  phases.mark(opts.backend === 'sim' ? 'physics' : 'bus');
  const robot = new Robot(config, backend, { logger, rate: opts.loopHz });
  const simulation = backend instanceof SimBackend ? backend.simulation : undefined;
  // Static imports only: under the tests' loader a dynamic import of a project module can load a second copy of
  // core/errors.ts, whose RobotErrors the error handler would not recognise (500 instead of 404).
  const real = backend instanceof RealBackend ? backend : undefined;
  // The twin taps the real backend before the Robot's start-up writes, so it takes them too.
  const shadow =
    real && twinSetting
      ? new ShadowTwin({
          config,
          urdf,
          real,
          servoParams,
          stepS: twinSetting.stepS,
          solverIterations: twinSetting.solverIterations,
          thread: twinThread,
          firmware: opts.guard,
          deadBands: calibration && calibratedDeadBands(calibration.calibration),
          cycleLog: opts.shadowLog ? new CycleLog(path.resolve(opts.shadowLog), config.name) : undefined,
          log,
        })
      : undefined;
  const guard =
    shadow && opts.guard
      ? new MoveGuard({
          config,
          urdf,
          servoParams,
          state: twinState(shadow, robot.motors),
          motors: robot.motors,
          rate: robot.rate,
          log: (line) => logger.info(line),
        })
      : undefined;
  try {
    await shadow?.open();
    await guard?.open();
    await robot.start();
  } catch (err) {
    await guard?.close();
    await shadow?.close();
    await backend.close();
    throw err;
  }
  const primitives = new PrimitiveManager(robot, {
    combine: config.primitiveCombine,
    logger,
    primitivesDir: opts.primitivesDir ?? defaultPrimitivesDir(config),
    seed: opts.seed ?? 1,
    isolation: opts.primitiveIsolation,
    limits: opts.primitiveLimits,
  });
  const recordsDir = path.resolve(opts.recordsDir ?? 'records');
  const store = new RecordStore(recordsDir, logger);
  const records = new RecordsService({ robot, manager: primitives, store, logger });
  phases.mark('robot');
  try {
    await primitives.open();
    await records.open();
  } catch (err) {
    await records.close();
    await primitives.close();
    await robot.stop();
    await guard?.close();
    await shadow?.close();
    await backend.close();
    throw err;
  }
  phases.mark('records');
  // Custom primitives load in worker threads meanwhile: the server is not ready (503 but for the probes) until then.
  const readiness = new Readiness();
  readiness.wait('custom primitives', primitives.customLoaded());
  // In real time the detector runs in a worker thread; on a manual clock inline (each detection at its sim instant).
  const detector =
    backend.camera && config.markerDetector && opts.speed !== 'manual' ? new WorkerDetector() : undefined;
  const markers =
    backend.camera && config.markerDetector
      ? new MarkerWatcher({
          camera: backend.camera,
          clock: backend.clock,
          onError: (err) => logger.warn(`marker detector: ${(err as Error)?.message ?? String(err)}`),
          detect: detector && ((frame) => detector.detect(frame)),
          closeDetector: detector && (() => detector.close()),
          maxWallRate: opts.speed === 'manual' ? undefined : MAX_DETECTIONS_PER_WALL_SECOND,
        })
      : undefined;
  const listing: PrimitiveListing = primitives;
  const chosen =
    opts.compat === 'pypot'
      ? pypotProfile({ markerIds: new Map(Object.entries(MARKER_CODES)) })
      : defaultProfile;
  const profile = guard
    ? { ...chosen, policy: { ...chosen.policy, guard: guard.check.bind(guard) } }
    : chosen;
  const changes = new ChangeCounter();
  const metrics = new RobotMetrics(
    {
      runningPrimitives: () => primitives.runningList().length,
      realTimeFactor: simulation && (() => simulation.realTimeFactor()),
      physics: simulation && (() => simulation.stats()),
      bus: real
        ? () => ({
            transactions: real.stats.transactions,
            timeouts: [...real.health.values()].reduce((sum, h) => sum + h.timeouts, 0),
          })
        : undefined,
      shadow:
        shadow &&
        (() => ({
          twinTime: shadow.time,
          busy: shadow.stats.busyMs / 1000,
          reanchored: shadow.stats.reanchored,
        })),
    },
    opts.metricsLabels,
    { process: opts.processMetrics },
  );
  real?.onCycle((report) => metrics.loopLate(report.lateMs));
  // Files go to the server's own folder, never one a request names: docs/decisions/0067-calibration-route.md.
  const calibrationRun =
    real && shadow
      ? new CalibrationRun({
          config,
          robot,
          bus: real.bus,
          clock: real.clock,
          port: real.port.path,
          shadow,
          guard,
          // The primitives started with the robot (temperature_monitoring) watch; they do not move it.
          busy: () =>
            primitives
              .runningList()
              .filter((p) => !p.autoStart)
              .map((p) => `primitive "${p.name}"`),
          dir: path.join(recordsDir, 'calibrations'),
          onClose: opts.real?.onClose ?? 'compliant',
          rig: (motor, signal) => cycleRig(real, opts.loopHz ?? 50, robot.motor(motor).id, signal),
          log: (line) => logger.info(line),
        })
      : undefined;
  const routes: RouteSpec[] = [
    ...miscRoutes(robot, listing, changes),
    ...motorRoutes(robot, profile.policy),
    ...primitiveRoutes(primitives),
    ...recordRoutes(records, profile.policy),
    ...ikRoutes(robot, chains, profile.policy),
    ...sensorRoutes({ camera: backend.camera, markers }),
    metrics.route(),
    ...calibrationRoutes(calibration, calibrationRun ?? (real ? 'no-shadow' : 'sim')),
  ];
  if (simulation) routes.push(...simRoutes(robot, simulation));
  if (backend instanceof SimBackend) routes.push(...cardRoutes(backend));
  if (real) routes.push(...busRoutes(real));
  // On the real backend without --shadow the routes answer 404 with a tip; the sim has nothing to shadow.
  if (real) routes.push(...shadowRoutes(shadow, 'real'));
  const has = (path: string) => routes.some((r) => r.method === 'GET' && r.path === path);
  const view = await createWebView({
    robot,
    primitives,
    chains: [...chains.keys()],
    urdf,
    features: {
      cameraFrame: backend.camera !== undefined && has('/sensors/camera/frame.png'),
      cards: has('/sim/cards/list.json'),
    },
    markers: markers && { latest: () => markers.latest().markers },
    shadow: shadow && { latest: () => shadowForStream(shadow, robot) },
    name: opts.name,
  });
  routes.push(...view.routes);
  const app = buildApp({
    routes,
    logger,
    access: opts.access,
    onRefused: (kind) => metrics.refused(kind),
    title: opts.name ? `${opts.name} (Poppy ${config.name})` : `Poppy ${config.name}`,
    profile,
    changes,
    timeouts: opts.timeouts,
    requestLog: opts.requestLog,
    viewPath: '/ui/',
    alsoListed: view.listed,
    readiness,
    counter: metrics,
  });
  await view.registerStream(app);
  phases.mark('http');
  backend.start?.();
  markers?.start();
  let closing: Promise<void> | undefined;
  return {
    app,
    robot,
    backend,
    simulation,
    config,
    primitives,
    records,
    markers,
    stream: view.stream,
    metrics,
    shadow,
    readiness,
    close() {
      closing ??= (async () => {
        // Pending `wait` answers go out first (503 "server shutting down"); idle keep-alive sockets close with the
        // app; busy ones (a half-sent body, a slow client) get a short grace, then are cut.
        robot.beginShutdown();
        await new Promise((resolve) => setImmediate(resolve));
        const cut = setTimeout(() => app.server.closeAllConnections(), CLOSE_GRACE_MS);
        try {
          await app.close();
        } finally {
          clearTimeout(cut);
        }
        await markers?.close();
        await calibrationRun?.close();
        await records.close();
        await primitives.close();
        await robot.stop();
        await guard?.close();
        await shadow?.close();
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
