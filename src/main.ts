/** The command line: parse flags, build the server, listen, close cleanly on SIGINT/SIGTERM. */
import { Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError } from './core/errors.ts';
import { createRobotServer } from './server.ts';
import type { Logger } from './robot/robot.ts';

function parseSpeed(v: string): number | 'max' {
  if (v === 'max') return 'max';
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a positive number or "max"');
  return n;
}

function parseSeed(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('must be an integer');
  return n;
}

function parsePositive(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a positive number');
  return n;
}

function parsePort(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new InvalidArgumentError('must be an integer from 0 to 65535');
  return n;
}

const logger: Logger = {
  info: (m) => console.log(m),
  warn: (m) => console.warn(`warning: ${m}`),
  error: (m) => console.error(`error: ${m}`),
};

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
    .option('--port <n>', 'HTTP port', parsePort, 8080)
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
    .addOption(
      new Option('--on-close <state>', 'real only: servos at shutdown')
        .choices(['compliant', 'hold'])
        .default('compliant'),
    )
    .option(
      '--camera <device|command>',
      'real only: V4L2 device (/dev/video0) or a capture command for ffmpeg',
    )
    .option('--cors-origins <list>', 'comma-separated allowed CORS origins, or * for any', '*')
    .addOption(
      new Option('--compat <profile>', 'client compatibility profile (reserved: pypot)').choices(['pypot']),
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
    compat?: 'pypot';
    serial?: string;
    baud?: number;
    loopHz: number;
    allowMissingMotors?: boolean;
    onClose: 'compliant' | 'hold';
    camera?: string;
  }>();
  if (opts.compat) {
    console.error('error: --compat=pypot is reserved and not implemented in this version');
    process.exit(2);
  }
  const started = performance.now();
  let server;
  try {
    server = await createRobotServer({
      backend: opts.backend,
      robot: opts.robot,
      speed: opts.speed,
      recordsDir: opts.recordsDir,
      primitivesDir: opts.primitivesDir,
      seed: opts.seed,
      corsOrigins: opts.corsOrigins === '*' ? '*' : opts.corsOrigins.split(',').map((s) => s.trim()),
      logger,
      loopHz: opts.loopHz,
      camera: opts.camera,
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
    await server.app.listen({ port: opts.port, host: opts.host });
  } catch (err) {
    console.error(`error: cannot listen on ${opts.host}:${opts.port}: ${(err as Error).message}`);
    await server.close();
    process.exit(2);
  }
  const addr = server.app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : opts.port;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  console.log(
    `Poppy ${server.config.name} (${opts.backend}${opts.backend === 'sim' ? `, speed ${opts.speed}` : ''}) listening on http://${host}:${port}/ (ready in ${Math.round(performance.now() - started)} ms)`,
  );
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: closing`);
    server
      .close()
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        console.error(`error while closing: ${(err as Error).message}`);
        process.exit(1);
      });
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main(process.argv).catch((err: unknown) => {
  console.error(`error: ${(err as Error).stack ?? String(err)}`);
  process.exit(1);
});
