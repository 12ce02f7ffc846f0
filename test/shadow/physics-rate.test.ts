/**
 * The shadow twin's physics rate chosen at start (src/shadow/physics-rate.ts): the choice from a step's cost, which
 * tests inject (time is a dependency), the flag's values, and a real-backend server's twin at the rate asked.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { InvalidArgumentError } from 'commander';
import { SHADOW_PHYSICS_HZ, parseShadowPhysicsHz } from '../../src/config/flags.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { emulateBus } from '../../src/emulator/emulator.ts';
import { memoryBinding } from '../../src/emulator/memory-binding.ts';
import { type StartBusHost, inProcessBus } from '../../src/real/bus-host.ts';
import { type RobotServer, createRobotServer } from '../../src/server.ts';
import {
  LEANEST_SOLVER_ITERATIONS,
  LEAN_SOLVER_ITERATIONS,
  OWN_CORE_CPU_SHARE,
  OWN_CORE_SETTINGS,
  TWIN_CPU_SHARE,
  TWIN_PHYSICS_HZ,
  TWIN_STEPS_S,
  chooseTwinStep,
  measureStepCost,
  twinPhysics,
} from '../../src/shadow/physics-rate.ts';
import { DEFAULT_SOLVER_ITERATIONS } from '../../src/sim/build-world.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-physics-rate-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

describe("the shadow twin's physics rate", () => {
  const steps = [0.002, 0.004, 0.005];

  it('takes the finest step whose cost stays within the share of the CPU', () => {
    expect(TWIN_CPU_SHARE).to.equal(0.2);
    // 0.1 ms a step: 5 % of the CPU at 2 ms.
    expect(chooseTwinStep(0.1, 0.2, steps)).to.deep.include({ stepS: 0.002, over: false });
    // 0.6 ms: 30 % at 2 ms, 15 % at 4 ms.
    expect(chooseTwinStep(0.6, 0.2, steps)).to.deep.include({ stepS: 0.004, over: false });
    // 0.95 ms: 23.75 % at 4 ms, 19 % at 5 ms.
    const at5 = chooseTwinStep(0.95, 0.2, steps);
    expect(at5).to.deep.include({ stepS: 0.005, over: false });
    expect(at5.share).to.be.closeTo(0.19, 1e-9);
    // Right at the share still fits.
    expect(chooseTwinStep(0.4, 0.2, steps).stepS).to.equal(0.002);
  });

  it('takes the coarsest step when none fits, and says it is over', () => {
    const r = chooseTwinStep(2, 0.2, steps);
    expect(r).to.deep.include({ stepS: 0.005, over: true });
    expect(r.share).to.be.closeTo(0.4, 1e-9);
  });

  it('chooses among the faithful steps only: 500 Hz, over its share on a slow machine', () => {
    expect([...TWIN_STEPS_S]).to.deep.equal([0.002]);
    expect(chooseTwinStep(0.1)).to.deep.include({ stepS: 0.002, over: false });
    expect(chooseTwinStep(0.6)).to.deep.include({ stepS: 0.002, over: true });
  });

  it('auto: measures once and says the rate and the cost in one line', async () => {
    let probes = 0;
    const { physics, line } = await twinPhysics('auto', async () => {
      probes++;
      return 0.08;
    });
    expect(probes).to.equal(1);
    expect(physics).to.deep.include({ stepS: 0.002, over: false });
    expect(line).to.equal('shadow twin: physics at 500 Hz on this machine (a step costs 0.080 ms)');
    // Over the fifth it is given, but a twin at 30 % keeps time: no warning (the probe reads high at a start).
    const busy = await twinPhysics('auto', async () => 0.6);
    expect(busy.physics).to.deep.include({ stepS: 0.002, over: true });
    expect(busy.line).to.equal('shadow twin: physics at 500 Hz on this machine (a step costs 0.60 ms)');
    const slow = await twinPhysics('auto', async () => 1.3);
    expect(slow.line).to.equal(
      'shadow twin: physics at 500 Hz on this machine (a step costs 1.30 ms); its steps take 65 % of a core: ' +
        'it may fall behind the robot (docs/shadow.md, "Its physics rate")',
    );
  });

  it('auto in a worker thread: 500 Hz within its core, then two substeps, then 400 Hz, then one, a warning past that', async () => {
    expect(OWN_CORE_CPU_SHARE).to.equal(0.75);
    expect([DEFAULT_SOLVER_ITERATIONS, LEAN_SOLVER_ITERATIONS, LEANEST_SOLVER_ITERATIONS]).to.deep.equal([
      4, 2, 1,
    ]);
    expect(OWN_CORE_SETTINGS).to.deep.equal([
      { stepS: 0.002, solverIterations: 4 },
      { stepS: 0.002, solverIterations: 2 },
      { stepS: 0.0025, solverIterations: 2 },
      { stepS: 0.0025, solverIterations: 1 },
    ]);
    /** A probe whose step costs `ms[iterations]`, each iteration count asked for kept in `asked`. */
    const probe =
      (ms: Record<number, number>, asked: number[] = []) =>
      async (iterations: number) => {
        asked.push(iterations);
        return ms[iterations]!;
      };
    // An Ergo Jr's step on a Pi 3B+ core (about 1.3 ms: 65 % at 500 Hz): measured once, with four substeps.
    const asked: number[] = [];
    const ergo = await twinPhysics('auto', probe({ 4: 1.3, 2: 0.9 }, asked), true);
    expect(asked).to.deep.equal([4]);
    expect(ergo.physics).to.deep.include({ stepS: 0.002, solverIterations: 4, over: false });
    expect(ergo.line).to.equal(
      'shadow twin: physics at 500 Hz on this machine (a step costs 1.30 ms, 65 % of its core)',
    );
    // Right at the share: still 500 Hz with four.
    expect((await twinPhysics('auto', probe({ 4: 1.5 }), true)).physics).to.deep.include({
      stepS: 0.002,
      solverIterations: 4,
    });
    // A Torso's on a Pi 4 on a busy day (1.5 ms with two: 75 %): 500 Hz with two substeps, both costs said.
    const torsoAsked: number[] = [];
    const torso = await twinPhysics('auto', probe({ 4: 2.2, 2: 1.5 }, torsoAsked), true);
    expect(torsoAsked).to.deep.equal([4, 2]);
    expect(torso.physics).to.deep.include({
      stepS: 0.002,
      solverIterations: 2,
      over: false,
      stepCostMs: 1.5,
    });
    expect(torso.physics.share).to.be.closeTo(0.75, 1e-9);
    expect(torso.line).to.equal(
      'shadow twin: physics at 500 Hz with 2 solver substeps on this machine (a step costs 1.50 ms, 75 % of its ' +
        'core; with 4 substeps 2.20 ms, 110 % at 500 Hz) (docs/shadow.md, "Its physics rate")',
    );
    // A Torso's on a Pi 3B+ (2.2 ms with four, 1.6 with two): 400 Hz with two.
    const slower = await twinPhysics('auto', probe({ 4: 2.2, 2: 1.6 }), true);
    expect(slower.physics).to.deep.include({ stepS: 0.0025, solverIterations: 2, over: false });
    expect(slower.line).to.equal(
      'shadow twin: physics at 400 Hz with 2 solver substeps on this machine (a step costs 1.60 ms, 64 % of its ' +
        'core; 500 Hz would take 80 %; with 4 substeps 2.20 ms, 110 % at 500 Hz; less faithful than 500 Hz) ' +
        '(docs/shadow.md, "Its physics rate")',
    );
    // The Torso's on a Pi 3B+ on a slow hour of the rig (two substeps 2.5 ms, 100 %): 400 Hz with one, timed last.
    const slowAsked: number[] = [];
    const slow = await twinPhysics('auto', probe({ 4: 3.5, 2: 2.5, 1: 1.8 }, slowAsked), true);
    expect(slowAsked).to.deep.equal([4, 2, 1]);
    expect(slow.physics).to.deep.include({ stepS: 0.0025, solverIterations: 1, over: false });
    expect(slow.line).to.equal(
      'shadow twin: physics at 400 Hz with 1 solver substep on this machine (a step costs 1.80 ms, 72 % of its ' +
        'core; 500 Hz would take 90 %; with 4 substeps 3.50 ms, 175 % at 500 Hz; less faithful than 500 Hz) ' +
        '(docs/shadow.md, "Its physics rate")',
    );
    // Slower still: 400 Hz with one, and said that it may fall behind.
    const slowest = await twinPhysics('auto', probe({ 4: 5, 2: 3.6, 1: 2.6 }), true);
    expect(slowest.physics).to.deep.include({ stepS: 0.0025, solverIterations: 1, over: true });
    expect(slowest.line).to.equal(
      'shadow twin: physics at 400 Hz with 1 solver substep on this machine (a step costs 2.60 ms, 104 % of its ' +
        'core; 500 Hz would take 130 %; with 4 substeps 5.00 ms, 250 % at 500 Hz; less faithful than 500 Hz): ' +
        'it may fall behind the robot (docs/shadow.md, "Its physics rate")',
    );
    // The server's thread keeps its own rule: 500 Hz with four only, whatever a step costs.
    expect((await twinPhysics('auto', probe({ 4: 2 }), false)).physics).to.deep.include({
      stepS: 0.002,
      solverIterations: 4,
    });
  });

  it('a rate from the flag, or none given (a server made in code), measures nothing', async () => {
    const never = async () => {
      throw new Error('measured');
    };
    const flag = await twinPhysics(200, never);
    expect(flag.physics.stepS).to.equal(0.005);
    expect(flag.line).to.equal(
      'shadow twin: physics at 200 Hz (--shadow-physics-hz, less faithful than 500 Hz (docs/shadow.md))',
    );
    expect((await twinPhysics(500, never)).line).to.equal(
      'shadow twin: physics at 500 Hz (--shadow-physics-hz)',
    );
    const none = await twinPhysics(undefined, never);
    expect(none.physics.stepS).to.equal(0.002);
    expect(none.line).to.equal('shadow twin: physics at 500 Hz (the default)');
  });

  it("times the twin's own steps on the clock it is given", async () => {
    const config = await loadRobotConfig('ergo-jr');
    const urdf = await loadUrdf(config.urdfPath);
    // Ten chunks of 15 steps, read before and after each: 3 ms each (0.2 ms a step) but the three slowest.
    const chunkMs = [3, 3, 45, 3, 3, 30, 3, 3, 3, 60];
    const times = chunkMs.flatMap((ms, i) => [i * 100, i * 100 + ms]);
    const cost = await measureStepCost({ config, urdf, now: () => times.shift()! });
    // The fastest quarter (3 chunks) at 0.2 ms a step; the clock read twice a chunk, no more.
    expect(cost).to.be.closeTo(0.2, 1e-9);
    expect(times).to.deep.equal([]);
  });

  it('--shadow-physics-hz takes auto or one of the rates the twin was tried at', () => {
    expect([...SHADOW_PHYSICS_HZ]).to.deep.equal(TWIN_PHYSICS_HZ);
    expect(parseShadowPhysicsHz('auto')).to.equal('auto');
    expect(parseShadowPhysicsHz('250')).to.equal(250);
    expect(() => parseShadowPhysicsHz('300')).to.throw(
      InvalidArgumentError,
      'must be "auto" or one of 500, 400, 250, 200',
    );
    expect(() => parseShadowPhysicsHz('fast')).to.throw(InvalidArgumentError);
  });

  /** A real-backend server on the in-memory emulator with `shadow` options, its info and warning lines kept. */
  async function withShadowServer(
    shadow: {
      shadowThread?: 'worker' | 'main';
      shadowPhysicsHz: number | 'auto';
      shadowSolverIterations?: number;
    },
    check: (server: RobotServer, lines: string[]) => void,
  ): Promise<void> {
    const emulated = await emulateBus({ robot: 'ergo-jr', speed: 'manual' });
    const lines: string[] = [];
    const host = inProcessBus(memoryBinding({ '/dev/mem0': emulated.bus }));
    // The bus's open said among the lines, in its order.
    const busHost: StartBusHost = (events) => {
      const bus = host(events);
      return { ...bus, send: (m) => (m.t === 'open' && lines.push('(the bus opens)'), bus.send(m)) };
    };
    const server = await createRobotServer({
      backend: 'real',
      robot: 'ergo-jr',
      real: { serial: '/dev/mem0', busHost },
      shadow: true,
      ...shadow,
      recordsDir: path.join(tmp, 'records'),
      logger: { info: (l) => lines.push(l), warn: (l) => lines.push(l), error: () => {} },
    }).catch(async (err: unknown) => {
      await emulated.close();
      throw err;
    });
    try {
      check(server, lines);
    } finally {
      await server.close();
      await emulated.close();
    }
  }

  it('a server whose twin has a thread of its own times its step in a worker and weighs it against that core', () =>
    withShadowServer({ shadowThread: 'worker', shadowPhysicsHz: 'auto' }, (server, info) => {
      const line = info.find((l) => l.startsWith('shadow twin: physics at'));
      const m =
        /^shadow twin: physics at (\d+) Hz(?: with (\d) solver substeps?)? on this machine \(a step costs ([\d.]+) ms, (\d+) % of its core/.exec(
          line ?? '',
        );
      expect(m, line).to.not.equal(null);
      // The share it says is the cost it read at the rate it took, against a core (not the server thread's fifth).
      const [hz, iterations, cost, share] = [Number(m![1]), Number(m![2] ?? 4), Number(m![3]), Number(m![4])];
      expect(share).to.be.closeTo((cost * hz) / 10, 1);
      expect(OWN_CORE_SETTINGS.map((s) => `${1 / s.stepS}/${s.solverIterations}`)).to.include(
        `${hz}/${iterations}`,
      );
      // Fewer substeps or a coarser step only where the finer setting's cost did not fit.
      if (hz !== 500 || iterations !== 4) expect(line).to.include('with 4 substeps');
      expect(server.shadow!.engine.stepS).to.equal(1 / hz);
      expect(server.shadow!.engine.solverIterations).to.equal(iterations);
    }));

  it('times the step before the bus process starts, on either thread (a start beside it misreads it)', async () => {
    const order = (lines: string[]) =>
      lines
        .filter((l) => l === '(the bus opens)' || l.startsWith('shadow twin: physics at'))
        .map((l) => l.slice(0, 23));
    for (const shadowThread of ['worker', 'main'] as const)
      await withShadowServer({ shadowThread, shadowPhysicsHz: 'auto' }, (_, lines) =>
        expect(order(lines), shadowThread).to.deep.equal(['shadow twin: physics at', '(the bus opens)']),
      );
  });

  it("a real-backend server's twin steps at the rate asked and logs it", () =>
    withShadowServer({ shadowPhysicsHz: 250 }, (server, info) => {
      expect(server.shadow!.sim.dt).to.equal(0.004);
      expect(server.shadow!.sim.solverIterations).to.equal(4);
      expect(info).to.include(
        'shadow twin: physics at 250 Hz (--shadow-physics-hz, less faithful than 500 Hz (docs/shadow.md))',
      );
    }));

  it('a server made in code runs its twin with the solver iterations it is given, in Rapier', () =>
    withShadowServer({ shadowPhysicsHz: 500, shadowSolverIterations: 2 }, (server, info) => {
      expect(server.shadow!.sim.solverIterations).to.equal(2);
      expect(info).to.include('shadow twin: physics at 500 Hz with 2 solver substeps (--shadow-physics-hz)');
    }));
});
