// Over 400 lines: every flag of the command line, its checks and the start and stop they drive, in one place.
/**
 * The command line: parse flags, build the server, listen, close on SIGINT/SIGTERM within SHUTDOWN_DEADLINE_MS
 * whatever clients do; a second signal exits at once.
 */
import { Command, Option } from 'commander';
import {
  HELP,
  parsePort,
  parsePositive,
  parseSeconds,
  parseSeed,
  parseSpeed,
  parseShadowPhysicsHz,
  parseWorkers,
  SHADOW_THREADS,
  type ShadowThreadFlag,
} from './config/flags.ts';
import { ConfigError } from './core/errors.ts';
import { DEFAULT_TIMEOUTS } from './http/timeouts.ts';
import { type EdgeFlags, edgeFlags, printedHost } from './http/edge-flags.ts';
import { LOG_LEVELS, type LogLevel, asLogger, createPino } from './core/logger.ts';
import type { RobotServer } from './server.ts';
import type { Classroom } from './classroom/classroom.ts';
import type { ShardedClassroom } from './classroom/sharded.ts';
import { Phases } from './core/phases.ts';
import { twinThreadFor } from './shadow/twin-engine-thread.ts';
import { type MemoryFlag, type MemoryPlan, memoryPlan } from './core/memory.ts';
import v8 from 'node:v8';
/** V8's own growth factor of the young generation (its default), given back once the server listens. */
const V8_SEMI_SPACE_GROWTH = 2;

/**
 * Once the server listens, the young generation grows under load as V8 sees fit (held at its first size till then),
 * but on a small machine or where node capped it (src/core/memory.ts): there it stays held.
 */
function youngGenerationGrows(plan: MemoryPlan): void {
  if (plan.youngGenerationGrows) v8.setFlagsFromString(`--semi-space-growth-factor=${V8_SEMI_SPACE_GROWTH}`);
}
/** Signals this close together are one request to stop (see shutdown). */
const SAME_SIGNAL_MS = 150;
/** Past this, a shutdown that is still waiting on something exits anyway (and says what it gave up on). */
const SHUTDOWN_DEADLINE_MS = 1800;

async function main(argv: string[]): Promise<void> {
  const program = new Command()
    .name('poppy-twin')
    .description('REST server (pypot API 4.0.0) for a Poppy robot: a physics twin (sim) or the real robot')
    .addOption(
      new Option('--backend <kind>', 'sim (physics twin) or real (Dynamixel bus)')
        .choices(['sim', 'real'])
        .default('sim'),
    )
    .option('--robot <name|path>', 'ergo-jr, torso, humanoid, or the path to a robot config JSON', 'ergo-jr')
    .option('--port <n>', 'HTTP port (a classroom: its main port; twin i gets port + i)', parsePort, 8080)
    .option(
      '--classroom <n|file>',
      'serve n twins of --robot in one process (or the twins of a JSON file: {"twins": [{"name", "robot", "port"?}]})',
    )
    .option(
      '--workers <n|auto>',
      "classroom: worker threads stepping the twins, a shard of the class each (auto: one per core; 0 or 1: the main thread's)",
      parseWorkers,
      'auto' as number | 'auto',
    )
    .option('--host <addr>', 'address to listen on', '127.0.0.1')
    .option('--records-dir <dir>', 'where recorded moves are saved', 'records')
    .option(
      '--primitives-dir <dir>',
      'folder of custom primitives (.ts/.js); default: primitives/ beside the robot config',
    )
    .option('--seed <n>', "seed of the behaviours' randomness", parseSeed, 1)
    .option(
      '--speed <factor|max>',
      'sim time relative to wall time (sim only)',
      parseSpeed,
      1 as number | 'max',
    )
    .option('--serial <path>', "real only: the robot's serial port (default: the robot config's bus port)")
    .option('--baud <n>', 'real only: serial baud rate (default: the robot config, 1000000)', parsePositive)
    .option('--loop-hz <n>', 'control (sync) loop rate, Hz', parsePositive, 50)
    .option('--allow-missing-motors', 'real only: serve the motors that answer, 503 for the others')
    .option('--shadow', HELP.shadow)
    .option('--shadow-physics-hz <hz|auto>', HELP.shadowPhysicsHz, parseShadowPhysicsHz)
    .addOption(
      new Option('--shadow-thread <where>', HELP.shadowThread).choices(SHADOW_THREADS).default('auto'),
    )
    .option('--guard', HELP.guard)
    .option('--shadow-log <file>', HELP.shadowLog)
    .option('--calibration <file>', HELP.calibration)
    .addOption(
      new Option('--on-close <state>', 'real only: servos at shutdown')
        .choices(['compliant', 'hold'])
        .default('compliant'),
    )
    .option(
      '--camera <device|command>',
      'real only: V4L2 device (/dev/video0), ffmpeg input, or gst:<GStreamer source> (gst:libcamerasrc)',
    )
    .addOption(
      new Option('--camera-realism <on|off>', "sim only: the camera's lens and sensor model, or clean frames")
        .choices(['on', 'off'])
        .default('on'),
    )
    .addOption(
      new Option(
        '--physics <auto|lean|fast>',
        "sim: the physics engine's compiled code: lean (about 50 MB less memory, steps a third slower) or fast",
      )
        .choices(['auto', 'lean', 'fast'])
        .default('auto'),
    )
    .addOption(
      new Option(
        '--memory <auto|small|ample>',
        "V8's young generation: small holds it at its first size (auto: small at 2 GB of RAM or less)",
      )
        .choices(['auto', 'small', 'ample'])
        .default('auto'),
    )
    .option(
      '--cors-origins <list>',
      "origins besides the server's own allowed to drive it and read its answers (comma-separated), or * for any",
      '',
    )
    .option(
      '--allowed-hosts <list>',
      "host names besides the server's own it answers to (comma-separated)",
      '',
    )
    .option(
      '--token <token>',
      'the token clients must send (default: POPPY_TWIN_TOKEN; generated beyond loopback)',
    )
    .addOption(
      new Option('--log-level <level>', 'least severe level logged (debug adds a line per request)')
        .choices(LOG_LEVELS)
        .default('info'),
    )
    .option(
      '--header-timeout <s>',
      'seconds a client may take to send the request headers',
      parseSeconds,
      DEFAULT_TIMEOUTS.headers / 1000,
    )
    .option(
      '--request-timeout <s>',
      'seconds a client may take to send a whole request (headers and body)',
      parseSeconds,
      DEFAULT_TIMEOUTS.request / 1000,
    )
    .option(
      '--idle-timeout <s>',
      'seconds an idle keep-alive connection stays open',
      parseSeconds,
      DEFAULT_TIMEOUTS.idle / 1000,
    )
    .addOption(
      new Option('--compat <profile>', 'answer as pypot 5.0.2 does, for its clients (pypot)').choices([
        'pypot',
      ]),
    )
    .showHelpAfterError(false)
    .configureOutput({ outputError: (str, write) => write(str.split('\n')[0] + '\n') })
    .exitOverride();
  try {
    program.parse(argv);
  } catch (err) {
    const code = (err as { exitCode?: number }).exitCode ?? 2;
    process.exit(code === 0 ? 0 : 2);
  }
  const opts = program.opts<{
    backend: 'sim' | 'real';
    robot: string;
    port: number;
    host: string;
    recordsDir: string;
    primitivesDir?: string;
    seed: number;
    speed: number | 'max';
    corsOrigins: string;
    allowedHosts: string;
    token?: string;
    compat?: 'pypot';
    logLevel: LogLevel;
    headerTimeout: number;
    requestTimeout: number;
    idleTimeout: number;
    serial?: string;
    baud?: number;
    loopHz: number;
    allowMissingMotors?: boolean;
    onClose: 'compliant' | 'hold';
    camera?: string;
    classroom?: string;
    workers: number | 'auto';
    cameraRealism: 'on' | 'off';
    shadow?: boolean;
    shadowPhysicsHz?: number | 'auto';
    shadowThread: ShadowThreadFlag;
    guard?: boolean;
    shadowLog?: string;
    calibration?: string;
    physics: 'auto' | 'lean' | 'fast';
    memory: MemoryFlag;
  }>();
  if (opts.classroom === undefined && program.getOptionValueSource('workers') === 'cli') {
    console.error('error: --workers applies to a classroom: use it with --classroom');
    process.exit(2);
  }
  if (opts.classroom !== undefined && (opts.backend !== 'sim' || opts.speed === 'max')) {
    console.error(
      'error: --classroom serves sim twins at a real-time speed: not with --backend=real or --speed=max',
    );
    process.exit(2);
  }
  const physics = physicsCode(opts);
  // The WebAssembly kernels compile first, in V8's top tier (decision 0051); the engine after.
  if (physics === 'lean') {
    const frameKernels = [import('./scene/frame-kernels.ts'), import('./scene/textured-fill.ts')];
    await Promise.all([...frameKernels, import('./vision/png-filter.ts')]);
    v8.setFlagsFromString('--liftoff-only');
  }
  // Start-up's allocations must not grow the young generation for good: it grows once listening (Torso 120 -> 104 MB).
  v8.setFlagsFromString('--semi-space-growth-factor=1');
  // From the process's start: node's own start and this module count too.
  const phases = new Phases(0);
  phases.mark('node');
  const log = await createPino({ level: opts.logLevel });
  const logger = asLogger(log);
  const memory = memoryPlan(opts.memory);
  logger.info(memory.line);
  const started = performance.now();
  let server: Pick<RobotServer, 'close'> | undefined;
  // Installed before anything starts: a signal during start-up must not find the default action (instant death).
  let stopping = false;
  let firstSignalAt = 0;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) {
      // Under `npm start` a signal to the process group arrives twice (sent, and forwarded by npm): one request.
      if (performance.now() - firstSignalAt < SAME_SIGNAL_MS) return;
      logger.warn(`${signal} again: exiting at once`);
      dieBy(signal);
    }
    stopping = true;
    firstSignalAt = performance.now();
    logger.info(`${signal}: closing (a second ${signal} exits at once)`);
    setTimeout(() => {
      logger.error(`shutdown: still closing after ${SHUTDOWN_DEADLINE_MS} ms; exiting anyway`);
      dieBy(signal);
    }, SHUTDOWN_DEADLINE_MS).unref();
    if (!server) dieBy(signal); // still starting: nothing to close yet
    server
      .close()
      .then(() => logger.info('closed'))
      .catch((err: unknown) => logger.error(`shutdown: closing failed: ${(err as Error).message}`))
      .finally(() => dieBy(signal));
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  let edge: EdgeFlags;
  try {
    edge = edgeFlags(opts, process.env.POPPY_TWIN_TOKEN, opts.classroom !== undefined);
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    process.exit(2);
  }
  if (edge.access.origins === '*')
    logger.warn("--cors-origins='*': any web page the user opens may drive this robot (docs/security.md)");
  const shared = {
    primitivesDir: opts.primitivesDir,
    seed: opts.seed,
    compat: opts.compat,
    access: edge.access,
    logger,
    requestLog: log.isLevelEnabled('debug'),
    timeouts: {
      headers: opts.headerTimeout * 1000,
      request: opts.requestTimeout * 1000,
      idle: opts.idleTimeout * 1000,
    },
    loopHz: opts.loopHz,
    cameraRealism: opts.cameraRealism === 'on',
  };
  if (opts.classroom !== undefined) {
    const classroom = opts.classroom;
    try {
      const { readRoster } = await import('./classroom/roster.ts');
      const { announceClass } = await import('./classroom/tokens.ts');
      const twins = await readRoster(classroom, { robot: opts.robot, port: opts.port });
      const { autoWorkers, ShardedClassroom } = await import('./classroom/sharded.ts');
      const workers =
        opts.workers === 'auto' ? autoWorkers(twins.length) : Math.min(opts.workers, twins.length);
      const roomOptions = { ...shared, twins, speed: opts.speed as number, recordsDir: opts.recordsDir };
      let room: Classroom | ShardedClassroom;
      if (workers <= 1) {
        const { Classroom } = await import('./classroom/classroom.ts');
        room = await Classroom.create(roomOptions);
      } else {
        room = await ShardedClassroom.create({ ...roomOptions, workers });
      }
      server = room;
      if (stopping) return;
      await room.listen(opts.host, opts.port);
      youngGenerationGrows(memory);
      await announceClass(room, {
        host: printedHost(opts.host),
        twins,
        workers,
        startedMs: performance.now() - started,
        recordsDir: opts.recordsDir,
        edge,
        logger,
      });
    } catch (err) {
      if (err instanceof ConfigError) {
        console.error(`error: ${err.message}`);
        await server?.close();
        process.exit(2);
      }
      throw err;
    }
    return;
  }
  let robotServer: RobotServer;
  try {
    // Loaded once the flags are good (a bad flag or --help loads none); a twin's Rapier compiles meanwhile, where this
    // thread will step one (a twin in a worker loads its own: a second instance here would serve nothing).
    const physicsHere =
      opts.backend === 'sim' || (opts.shadow && (opts.guard || twinThreadFor(opts.shadowThread) === 'main'));
    if (physicsHere) void import('./sim/build-world.ts').then((m) => m.initRapier()).catch(() => {});
    const { createRobotServer } = await import('./server.ts');
    phases.mark('modules');
    server = robotServer = await createRobotServer({
      ...shared,
      phases,
      backend: opts.backend,
      robot: opts.robot,
      speed: opts.speed,
      recordsDir: opts.recordsDir,
      camera: opts.camera,
      shadow: opts.shadow,
      shadowPhysicsHz: opts.shadowPhysicsHz ?? 'auto',
      shadowThread: opts.shadowThread,
      guard: opts.guard,
      shadowLog: opts.shadowLog,
      calibration: opts.calibration,
      processMetrics: true,
      real: {
        serial: opts.serial,
        baud: opts.baud,
        allowMissing: opts.allowMissingMotors,
        onClose: opts.onClose,
      },
    });
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  try {
    await robotServer.app.listen({ port: opts.port, host: opts.host });
  } catch (err) {
    console.error(`error: cannot listen on ${opts.host}:${opts.port}: ${(err as Error).message}`);
    await server.close();
    process.exit(2);
  }
  phases.mark('listen');
  youngGenerationGrows(memory);
  const addr = robotServer.app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : opts.port;
  const host = printedHost(opts.host);
  if (!robotServer.readiness.ready) {
    logger.info(
      `serving http://${host}:${port}/ (503 but for /healthz until ready: waiting for ${robotServer.readiness.waitingFor.join(', ')})`,
    );
    await robotServer.readiness.whenReady();
    phases.mark('custom primitives');
  }
  const total = phases.list.reduce((sum, [, ms]) => sum + ms, 0);
  logger.info(
    `Poppy ${robotServer.config.name} (${opts.backend}${opts.backend === 'sim' ? `, speed ${opts.speed}` : ''}, ${physics} physics) listening on http://${host}:${port}/ (ready in ${Math.round(total)} ms: ${phases})`,
  );
  logger.info(`web view: http://${host}:${port}/ui/   API reference: http://${host}:${port}/docs`);
  // A generated token is printed here once, in the URL a browser opens (as Jupyter does), and never logged again.
  if (edge.generated)
    logger.info(
      `open http://${host}:${port}/ui/?token=${edge.token} (clients send Authorization: Bearer <token>)`,
    );
  else if (edge.token)
    logger.info('clients send the token given by --token or POPPY_TWIN_TOKEN (docs/security.md)');
}

/**
 * Which code the physics engine runs: V8's baseline WebAssembly code only (lean: no optimising compiler, whose
 * memory glibc keeps: 50 MB of an idle Torso's RSS) or optimised hot functions (fast: a third more steps per
 * CPU second). Auto is lean where the physics runs at real time or slower and nothing predicts ahead of it
 * (docs/decisions/0035-lean-physics-code.md).
 */
function physicsCode(opts: {
  physics: 'auto' | 'lean' | 'fast';
  speed: number | 'max';
  classroom?: string;
  guard?: boolean;
}): 'lean' | 'fast' {
  if (opts.physics !== 'auto') return opts.physics;
  const realTime = opts.speed !== 'max' && opts.speed <= 1;
  return realTime && opts.classroom === undefined && !opts.guard ? 'lean' : 'fast';
}

/**
 * Ends the process by the signal it received, as Unix programs do once they have cleaned up (the parent sees
 * "terminated by SIGTERM", a shell 143). Unlike process.exit(), which waits for V8's background compilations (the
 * physics engine's WebAssembly tier-up: seconds on a busy machine), the default action ends the process at once.
 */
function dieBy(signal: NodeJS.Signals): never {
  process.removeAllListeners(signal);
  process.kill(process.pid, signal);
  // The default action of SIGINT and SIGTERM ends the process before this line runs.
  process.exit(1);
}

main(process.argv).catch((err: unknown) => {
  console.error(`error: ${(err as Error).stack ?? String(err)}`);
  process.exit(1);
});
