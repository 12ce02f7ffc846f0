/**
 * Scenarios that cannot hang and say where they failed: a request with `wait: true` moves the twin's clock, a
 * scenario over its sim-time or wall-time limit fails naming its step and line, an error names its file and line,
 * and the console, JSON and JUnit reports say so.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { DEFAULT_TIME_LIMIT, defineScenario, runScenario } from '../../src/scenario/api.ts';
import { resolveLimit } from '../../src/scenario/limits.ts';
import type { ScenarioResult } from '../../src/scenario/result.ts';
import { resultLines, runScenarios } from '../../src/scenario/runner.ts';
import busy from './fixtures/wall.scenario.ts';
import endless from './fixtures/loop.scenario.ts';
import waiting from './fixtures/wait-call.scenario.ts';
import { cli, lineOf } from './helpers.ts';

const FIXTURES = path.join(import.meta.dirname, 'fixtures');
const fixture = (name: string) => path.join(FIXTURES, `${name}.scenario.ts`);
const shown = (name: string) => path.relative(process.cwd(), fixture(name));
const THIS = import.meta.filename;
const sink = { write: () => true };

const run = (def: Parameters<typeof runScenario>[0], file: string, opts = {}) =>
  runScenario(def, path.dirname(file), {
    file: path.relative(process.cwd(), file),
    scenarioFile: file,
    ...opts,
  });

describe('scenario time limits and failure sites', function () {
  this.timeout(60_000);

  it('a t.call with wait: true moves the twin clock until the goto has ended, and answers', async () => {
    const r = await run(waiting, fixture('wait-call'));
    expect(r.status, resultLines(r)).to.equal('pass');
    expect(r.checks.map((c) => c.name)).to.deep.equal(['m1 arrived']);
    expect(r.simSeconds).to.be.within(1, 1.5);
  });

  it('a scenario past its sim-time limit fails in the step it was in, at its line', async () => {
    const r = await run(endless, fixture('loop'));
    const line = await lineOf(fixture('loop'), "t.call('POST', '/motors/m1/goto.json'");
    expect(r.status).to.equal('error');
    expect(r.errorType).to.equal('TimeLimitError');
    expect(r.error).to.match(
      new RegExp(
        `^${shown('loop')}:${line}: over its sim-time limit of 2 s \\(2\\.0\\d s of sim time, [\\d.]+ s of wall time\\) ` +
          'in step t\\.call\\("POST", "/motors/m1/goto\\.json", \\{"position":-?20,"duration":0\\.5,"wait":true\\}\\)$',
      ),
    );
    expect(r.location).to.include({ file: shown('loop'), line });
    expect(r.step).to.match(/^t\.call\("POST", "\/motors\/m1\/goto\.json"/);
    expect(r.simSeconds).to.be.within(2, 2.1);
    expect(r.timeLimit).to.deep.equal({ simSeconds: 2, wallSeconds: DEFAULT_TIME_LIMIT.wallSeconds });
    expect(r.checks.map((c) => c.status)).to.deep.equal(['pass']);
  });

  it("the scenario's own limit wins over the command line's, which wins over the default", () => {
    expect(resolveLimit()).to.deep.equal(DEFAULT_TIME_LIMIT);
    expect(resolveLimit(undefined, { wallSeconds: 9 })).to.deep.equal({
      simSeconds: DEFAULT_TIME_LIMIT.simSeconds,
      wallSeconds: 9,
    });
    expect(resolveLimit({ simSeconds: 5 }, { simSeconds: 3, wallSeconds: 9 })).to.deep.equal({
      simSeconds: 5,
      wallSeconds: 9,
    });
  });

  it('a loop in which no sim time passes fails at its wall-time limit, naming the call', async () => {
    const r = await run(busy, fixture('wall'));
    const line = await lineOf(fixture('wall'), "t.call('GET'");
    expect(r.error).to.match(
      new RegExp(
        `^${shown('wall')}:${line}: over its wall-time limit of 0\\.3 s \\(0\\.00 s of sim time, [\\d.]+ s of wall time\\) ` +
          '(in|after) step t\\.call\\("GET", "/robot\\.json"\\)$',
      ),
    );
    expect(r.simSeconds).to.equal(0);
  });

  it('a request that never answers ends at the wall-time limit too (a server by URL)', async () => {
    const def = defineScenario({
      name: 'inline: silent server',
      robot: 'ergo-jr',
      runsOn: 'any',
      timeLimit: { wallSeconds: 0.2 },
      run: async (t) => void (await t.call('GET', '/motors/list.json')),
    });
    const r = await run(def, THIS, {
      url: 'http://robot.invalid',
      remote: { fetch: () => new Promise<Response>(() => {}) },
    });
    const line = await lineOf(THIS, "t.call('GET', '/motors/list.json')");
    expect(r.error).to.match(
      new RegExp(
        `^${path.relative(process.cwd(), THIS)}:${line}: over its wall-time limit of 0\\.2 s .* in step`,
      ),
    );
    expect(r.step).to.equal('t.call("GET", "/motors/list.json")');
  });

  it('the runner ends a scenario that blocks its process, names its last step, and goes on', async () => {
    const results = await runScenarios([fixture('blocked'), fixture('wait-call')], {
      jobs: 1,
      killGraceSeconds: 0.2,
      out: sink,
    });
    expect(results[0]).to.include({
      name: 'fixture: blocked',
      robot: 'ergo-jr',
      status: 'error',
      errorType: 'TimeLimitError',
      step: 't.check("before the loop")',
    });
    expect(results[0]!.error).to.equal(
      "over its wall-time limit of 0.5 s: the scenario's process stopped answering (a loop that never awaits?) " +
        'and was ended 0.2 s later; its last step: t.check("before the loop")',
    );
    expect(results[1]!.status, resultLines(results[1]!)).to.equal('pass');
  });

  it('an error thrown by a scenario names its file and line, and the console never says 0/0', async () => {
    const def = defineScenario({
      name: 'inline: type error',
      robot: 'ergo-jr',
      async run(t) {
        await t.wait(0.1);
        const config = undefined as unknown as { speed: number };
        await t.wait(config.speed);
      },
    });
    const r = await run(def, THIS);
    const line = await lineOf(THIS, 'await t.wait(config.speed);');
    const where = `${path.relative(process.cwd(), THIS)}:${line}`;
    expect(r).to.include({ status: 'error', errorType: 'TypeError', step: 't.wait(0.1)' });
    expect(r.error).to.equal(`${where}: TypeError: Cannot read properties of undefined (reading 'speed')`);
    expect(r.stack).to.contain(`(${where}:`);
    expect(resultLines(r).split('\n')).to.deep.equal([
      `ERROR inline: type error [ergo-jr, twin] ${r.wallSeconds.toFixed(1)} s: ${r.error}`,
      '    stopped before any check; last step: t.wait(0.1)',
    ]);
  });

  it("an error in a check's body is that check's error, with the line", async () => {
    const def = defineScenario({
      name: 'inline: check error',
      robot: 'ergo-jr',
      async run(t) {
        await t.check(
          'reads a route',
          async () => void (await t.call('GET', '/motors/m9/registers/goal_position/value.json')),
        );
        await t.check('after it', (c) => c.expect(1, 'one').toBe(1));
      },
    });
    const r = await run(def, THIS);
    const line = await lineOf(THIS, "t.call('GET', '/motors/m9/");
    expect(r.status).to.equal('error');
    expect(r.error).to.equal(undefined);
    expect(r.checks.map((c) => c.status)).to.deep.equal(['error', 'pass']);
    expect(r.checks[0]!.summary).to.match(
      new RegExp(
        `^${path.relative(process.cwd(), THIS)}:${line}: GET /motors/m9/registers/goal_position/value\\.json: HTTP 404`,
      ),
    );
  });

  describe('the command line', () => {
    let dir: string;
    before(async () => (dir = await mkdtemp(path.join(os.tmpdir(), 'scenario-limits-'))));
    after(() => rm(dir, { recursive: true, force: true }));

    it('--sim-limit, and the console, JSON and JUnit reports name the file, line and step', async () => {
      const json = path.join(dir, 'out.json');
      const junit = path.join(dir, 'out.xml');
      const names = ['broken', 'forever', 'loop'];
      const out = await cli([
        ...names.map(fixture),
        '--sim-limit',
        '3',
        '--jobs',
        '2',
        '--json',
        json,
        '--junit',
        junit,
      ]);
      expect(out.code, out.stderr).to.equal(1);
      const loopLine = await lineOf(fixture('loop'), "t.call('POST', '/motors/m1/goto.json'");
      const foreverLine = await lineOf(fixture('forever'), 'await t.wait(1)');
      const brokenLine = await lineOf(fixture('broken'), 'throw new Error');
      expect(out.stdout).not.to.contain('0/0');
      expect(out.stdout).to.match(
        new RegExp(
          `^ERROR fixture: endless loop \\[ergo-jr, twin\\] [\\d.]+ s: ${shown('loop')}:${loopLine}: over its sim-time limit of 2 s .* in step t\\.call\\("POST", "/motors/m1/goto\\.json", .*\\)\\n    stopped after 1/1 checks passed$`,
          'm',
        ),
      );
      expect(out.stdout).to.match(
        new RegExp(
          `^ERROR fixture: waits forever \\[ergo-jr, twin\\] [\\d.]+ s: ${shown('forever')}:${foreverLine}: over its sim-time limit of 3 s .* in step t\\.wait\\(1\\)\\n    stopped before any check$`,
          'm',
        ),
      );
      expect(out.stdout).to.match(
        new RegExp(
          `^ERROR fixture: broken \\[ergo-jr, twin\\] [\\d.]+ s: ${shown('broken')}:${brokenLine}: the scenario script broke <here> & "there"\\n    stopped after 1/1 checks passed; last step: t\\.check\\("fine"\\)$`,
          'm',
        ),
      );

      const report = JSON.parse(await readFile(json, 'utf8')) as { scenarios: ScenarioResult[] };
      const byName = (n: string) => report.scenarios.find((s) => s.file === shown(n))!;
      expect(byName('forever')).to.deep.include({
        errorType: 'TimeLimitError',
        step: 't.wait(1)',
        timeLimit: { simSeconds: 3, wallSeconds: DEFAULT_TIME_LIMIT.wallSeconds },
      });
      expect(byName('forever').location).to.include({ file: shown('forever'), line: foreverLine });
      expect(byName('loop').timeLimit!.simSeconds).to.equal(2); // its own limit wins over --sim-limit
      expect(byName('broken')).to.deep.include({ errorType: 'Error', step: 't.check("fine")' });
      expect(byName('broken').stack).to.contain(`${shown('broken')}:${brokenLine}:`);

      const xml = await readFile(junit, 'utf8');
      expect(XMLValidator.validate(xml)).to.equal(true);
      const doc = new XMLParser({
        ignoreAttributes: false,
        isArray: (n) => ['testsuite', 'testcase'].includes(n),
      }).parse(xml) as { testsuites: { testsuite: { '@_package': string; testcase: JunitCase[] }[] } };
      const errorOf = (n: string) =>
        doc.testsuites.testsuite
          .find((s) => s['@_package'] === shown(n))!
          .testcase.find((c) => c['@_name'] === 'scenario')!.error!;
      expect(errorOf('loop')['@_type']).to.equal('TimeLimitError');
      expect(errorOf('loop')['@_message']).to.equal(byName('loop').error);
      expect(errorOf('loop')['#text']).to.contain('step: t.call("POST", "/motors/m1/goto.json"');
      expect(errorOf('broken')['@_message']).to.equal(
        `${shown('broken')}:${brokenLine}: the scenario script broke <here> & "there"`,
      );
      expect(errorOf('broken')['#text']).to.contain(`(${shown('broken')}:${brokenLine}:`);
    });

    it('refuses a limit that is not a number of seconds > 0 (exit 2)', async () => {
      const out = await cli([fixture('pass'), '--wall-limit', '0']);
      expect(out.code).to.equal(2);
      expect(out.stderr.trim()).to.equal('error: --wall-limit takes seconds, a number > 0, not "0"');
    });
  });
});

interface JunitCase {
  '@_name': string;
  error?: { '@_message': string; '@_type': string; '#text': string };
}
