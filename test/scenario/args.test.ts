/**
 * The scenario API checks its arguments at run time (users run untyped scenario files): a wrong type or an unknown
 * motor, chain, move, card or primitive stops the scenario with one message naming the call, the argument, what was
 * given and what is allowed, at the scenario's file and line. The types say the same to TypeScript users.
 */
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { type ScenarioContext, defineScenario, runScenario } from '../../src/scenario/api.ts';
import { junitReport } from '../../src/scenario/report.ts';
import type { ScenarioResult } from '../../src/scenario/result.ts';
import { resultLines } from '../../src/scenario/runner.ts';
import { runJob } from '../../src/scenario/job.ts';
import { lineOf } from './helpers.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const THIS = import.meta.filename;
const HERE = path.relative(process.cwd(), THIS);
const fixture = (name: string) => path.join(import.meta.dirname, 'fixtures', `${name}.scenario.ts`);

/** The context as an untyped .js scenario sees it: any argument goes. */
interface Untyped {
  [call: string]: (...args: unknown[]) => Promise<unknown>;
}
const loose = (t: ScenarioContext) => t as unknown as Untyped;
const cards = (t: ScenarioContext) => t.cards as unknown as Untyped;

async function runIn(run: (t: ScenarioContext) => Promise<unknown>, dir = import.meta.dirname) {
  const def = defineScenario({ name: 'inline', robot: 'ergo-jr', run: async (t) => void (await run(t)) });
  return runScenario(def, dir, { file: HERE, scenarioFile: THIS });
}

/** Each case's call is on the line marked `// @<id>`. */
const CASES: { id: string; run: (t: ScenarioContext) => Promise<unknown>; error: string | RegExp }[] = [
  {
    id: 'hand-unknown',
    run: (t) => t.hand({ m7: 20 }, 1), // @hand-unknown
    error: `t.hand({"m7":20}, 1): motor is "m7", not one of ergo-jr's motors: m1, m2, m3, m4, m5, m6`,
  },
  {
    id: 'hand-motor-name',
    run: (t) => t.hand('m0', 20, 1), // @hand-motor-name
    error: `t.hand("m0", 20, 1): motor is "m0", not one of ergo-jr's motors: m1, m2, m3, m4, m5, m6`,
  },
  {
    id: 'hand-degrees',
    run: (t) => loose(t).hand!('m4', '20', 1), // @hand-degrees
    error: 't.hand("m4", "20", 1): degrees is "20" (a string); give a finite number (user degrees)',
  },
  {
    id: 'hand-seconds',
    run: (t) => loose(t).hand!('m4', 20), // @hand-seconds
    error: 't.hand("m4", 20): seconds is undefined; give a number > 0',
  },
  {
    id: 'hand-shape',
    run: (t) => loose(t).hand!(['m4'], 1), // @hand-shape
    error:
      't.hand(["m4"], 1): the first argument is ["m4"] (an array); give a motor and its position, ' +
      't.hand("m1", 40, 1.5), or several, t.hand({m1: 40, m4: -30}, 1.5)',
  },
  {
    id: 'wait',
    run: (t) => t.wait(-1), // @wait
    error: 't.wait(-1): seconds is -1 (a number); give a number >= 0',
  },
  {
    id: 'call-method',
    run: (t) => loose(t).call!('get', '/robot.json'), // @call-method
    error: 't.call("get", "/robot.json"): method is "get", not one of the methods of the REST API: GET, POST',
  },
  {
    id: 'call-url',
    run: (t) => loose(t).call!('GET', 'robot.json'), // @call-url
    error:
      't.call("GET", "robot.json"): url is "robot.json"; give a path on the target starting with "/", e.g. "/robot.json"',
  },
  {
    id: 'ik-chain',
    run: (t) => t.checkIkTargets('arm', [{ xyz: [0.1, 0, 0.1] }]), // @ik-chain
    error: `t.checkIkTargets("arm", [{"xyz":[0.1,0,0.1]}]): chain is "arm", not one of ergo-jr's IK chains: chain`,
  },
  {
    id: 'ik-xyz',
    run: (t) => loose(t).checkIkTargets!('chain', [{ xyz: [0.1, 0.2] }]), // @ik-xyz
    error:
      't.checkIkTargets("chain", [{"xyz":[0.1,0.2]}]): targets[0].xyz is [0.1,0.2] (an array); give 3 numbers [x, y, z] in metres',
  },
  {
    id: 'primitive',
    run: (t) => t.checkPrimitive('dnace', 1), // @primitive
    error:
      /^t\.checkPrimitive\("dnace", 1\): name is "dnace", not one of the primitives \(GET \/primitives\/list\.json\): (\w+, )+dance, (\w+, )*\w+$/,
  },
  {
    id: 'card-show',
    run: (t) => t.cards.show('nope', 0.3), // @card-show
    error:
      /^t\.cards\.show\("nope", 0\.3\): name is "nope", not one of the cards of the sim \(GET \/sim\/cards\/list\.json\): tetris, caribou(, \w+)*$/,
  },
  {
    id: 'card-pose',
    run: (t) => cards(t).pose!('tetris', [0, 0.3], [0, 0, 0]), // @card-pose
    error:
      't.cards.pose("tetris", [0,0.3], [0,0,0]): xyz is [0,0.3] (an array); give 3 numbers [x, y, z] in metres',
  },
  {
    id: 'move-file',
    run: (t) => t.loadMove('moves/none.record'), // @move-file
    error: `t.loadMove("moves/none.record"): file "moves/none.record" does not exist (looked for ${path.join(import.meta.dirname, 'moves/none.record')}, relative to the scenario's folder)`,
  },
  {
    id: 'check-move-string',
    run: (t) => loose(t).checkMove!('wave', 'moves/wave.record'), // @check-move-string
    error:
      't.checkMove("wave"): move is the string "moves/wave.record"; load it first: ' +
      't.checkMove(label, await t.loadMove("moves/wave.record"))',
  },
  {
    id: 'check-body',
    run: (t) => loose(t).check!('peak'), // @check-body
    error:
      't.check("peak"): the second argument is undefined; give a function, e.g. ' +
      "(c) => c.expect(value, 'what').toBeAtMost(limit)",
  },
];

describe('scenario API argument checks', function () {
  this.timeout(60_000);
  let records: string;
  before(async () => {
    records = await mkdtemp(path.join(os.tmpdir(), 'scenario-args-'));
    await mkdir(path.join(records, 'moves'));
    for (const name of ['wave', 'bow'])
      await copyFile(
        path.join(ROOT, 'scenarios/moves/ergo-jr-wave.record'),
        path.join(records, `${name}.record`),
      );
  });
  after(() => rm(records, { recursive: true, force: true }));

  const failsWith = (r: ScenarioResult, error: string | RegExp, line: number) => {
    expect(r.status, resultLines(r)).to.equal('error');
    expect(r.errorType).to.equal('ScenarioArgumentError');
    expect(r.location).to.include({ file: HERE, line });
    const prefix = `${HERE}:${line}: `;
    expect(r.error!.startsWith(prefix), r.error).to.equal(true);
    if (typeof error === 'string') expect(r.error!.slice(prefix.length)).to.equal(error);
    else expect(r.error!.slice(prefix.length)).to.match(error);
  };

  for (const c of CASES)
    it(`${c.id}: one message naming the argument, what was given and what is allowed, at its line`, async () => {
      failsWith(await runIn(c.run), c.error, await lineOf(THIS, `// @${c.id}`));
    });

  it('moves: a name the records folder does not have lists the ones it has', async () => {
    const r = await runIn((t) => t.loadMove({ name: 'wvae', recordsDir: records })); // @move-name
    failsWith(
      r,
      /: name is "wvae", not one of the moves in .*scenario-args-\w+: bow, wave$/,
      await lineOf(THIS, '// @move-name'),
    );
  });

  it('a bad argument inside a check stops the scenario, naming the check it was in', async () => {
    const r = await runIn((t) => t.check('inside', async () => void (await loose(t).wait!('2')))); // @in-check
    failsWith(
      r,
      't.wait("2"): seconds is "2" (a string); give a number >= 0',
      await lineOf(THIS, '// @in-check'),
    );
    expect(r.step).to.equal('t.check("inside") > t.wait("2")');
    expect(r.checks).to.deep.equal([]);
  });

  it('the documented forms work: t.hand(motor, degrees, seconds) and t.hand({motor: degrees}, seconds)', async () => {
    const at: Record<string, number> = {};
    const r = await runIn(async (t) => {
      const position = (m: string) => t.twin!.robot.motor(m).state.presentPosition;
      await t.hand('m4', 20, 1);
      at.m4 = position('m4');
      await t.hand({ m1: 40, m4: -10 }, 1);
      at.m1 = position('m1');
      at.m4b = position('m4');
    });
    expect(r.error).to.equal(undefined);
    expect(at.m4).to.be.closeTo(20, 3);
    expect(at.m1).to.be.closeTo(40, 3);
    expect(at.m4b).to.be.closeTo(-10, 3);
  });

  it('a scenario file run by the runner: its own file and line, in the console and JUnit', async () => {
    const file = fixture('bad-arg');
    const r = await runJob({ id: 0, path: file, file: path.relative(process.cwd(), file) });
    const line = await lineOf(file, 't.hand({ m7: 20 }, 1)');
    const error = `${path.relative(process.cwd(), file)}:${line}: t.hand({"m7":20}, 1): motor is "m7", not one of ergo-jr's motors: m1, m2, m3, m4, m5, m6`;
    expect(r).to.include({ error, errorType: 'ScenarioArgumentError', step: 't.hand({"m7":20}, 1)' });
    expect(resultLines(r).split('\n')).to.deep.equal([
      `ERROR fixture: bad argument [ergo-jr, twin] ${r.wallSeconds.toFixed(1)} s: ${error}`,
      '    stopped after 1/1 checks passed',
    ]);
    const xml = junitReport([r]);
    expect(xml).to.contain('type="ScenarioArgumentError"');
    expect(xml).to.contain(`message="${error.replace(/"/g, '&quot;')}"`);
  });

  it('a bad definition is an error at the line that defines it, before anything runs', async () => {
    const file = fixture('bad-define');
    const r = await runJob({ id: 0, path: file, file: path.relative(process.cwd(), file) });
    const line = await lineOf(file, 'export default defineScenario');
    expect(r).to.include({
      status: 'error',
      errorType: 'ScenarioArgumentError',
      error:
        `${path.relative(process.cwd(), file)}:${line}: cannot load the scenario: ` +
        'defineScenario: run is "the wave"; give async run(t) { ... }',
    });
    expect(() =>
      defineScenario({ name: 'x', robot: 'ergo-jr', timeLimit: { simSeconds: -1 }, run: async () => {} }),
    ).to.throw('defineScenario: timeLimit.simSeconds is -1; give seconds, a number > 0');
  });
});

/** Compiled, never run: TypeScript users get the same answers from the types (`npm run typecheck`). */
export function typedLikeTheChecks(t: ScenarioContext): void {
  void t.hand('m4', 20, 1);
  void t.hand({ m1: 40 }, 1.5);
  // @ts-expect-error a motor's position comes with its seconds
  void t.hand('m4', 20);
  // @ts-expect-error the seconds of {motor: degrees} come second
  void t.hand({ m1: 40 }, 1.5, 2);
  // @ts-expect-error degrees are numbers
  void t.hand('m4', '20', 1);
  // @ts-expect-error the methods are 'GET' and 'POST'
  void t.call('get', '/robot.json');
  // @ts-expect-error a url is a path on the target
  void t.call('GET', 'robot.json');
  // @ts-expect-error an IK target is 3 numbers
  void t.checkIkTargets('chain', [{ xyz: [0.1, 0.2] }]);
  // @ts-expect-error a card's pose is 3 numbers and 3 angles
  void t.cards.pose('tetris', [0, 0.3], [0, 0, 0]);
}
