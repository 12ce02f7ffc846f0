/**
 * The runner: exit codes, the JSON report, JUnit XML that follows the Ant JUnit schema's required elements and
 * attributes, progress on a terminal and off it, determinism (the same scenario twice gives the same figures).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { runScenario } from '../../src/scenario/api.ts';
import { failureList, junitReport, summarize } from '../../src/scenario/report.ts';
import type { ScenarioResult } from '../../src/scenario/result.ts';
import { findScenarios, runScenarios } from '../../src/scenario/runner.ts';
import passing from './fixtures/pass.scenario.ts';
import { cli } from './helpers.ts';

const FIXTURES = path.join(import.meta.dirname, 'fixtures');
const fixture = (name: string) => path.join(FIXTURES, `${name}.scenario.ts`);
const ROOT = path.resolve(import.meta.dirname, '../..');

/** Drops what may differ between two runs: wall times. */
const figures = (r: ScenarioResult) => ({ ...r, wallSeconds: 0 });

describe('scenario runner', function () {
  this.timeout(60_000);
  let dir: string;
  before(async () => (dir = await mkdtemp(path.join(os.tmpdir(), 'scenario-runner-'))));
  after(() => rm(dir, { recursive: true, force: true }));

  it('finds *.scenario.ts files in folders, and takes any file named', async () => {
    expect(await findScenarios([FIXTURES])).to.deep.equal(
      [
        'bad-arg',
        'bad-define',
        'blocked',
        'broken',
        'fail',
        'forever',
        'loop',
        'pass',
        'wait-call',
        'wall',
      ].map(fixture),
    );
    const helper = path.join(import.meta.dirname, 'helpers.ts');
    expect(await findScenarios([helper, fixture('pass')])).to.deep.equal([helper, fixture('pass')].sort());
    const scenarios = await findScenarios([path.join(ROOT, 'scenarios')]);
    expect(scenarios.map((f) => path.basename(f))).to.include.members([
      'ergo-jr-wave.scenario.ts',
      'torso-two-arms.scenario.ts',
      'ergo-jr-ik.scenario.ts',
      'torso-ik.scenario.ts',
    ]);
    expect(scenarios.some((f) => f.endsWith('record-moves.ts'))).to.equal(false);
  });

  it('exits 1 when a check fails, writes both reports, and names when and where it failed', async () => {
    const json = path.join(dir, 'out.json');
    const junit = path.join(dir, 'out.xml');
    const run = await cli([
      fixture('pass'),
      fixture('fail'),
      fixture('broken'),
      '--json',
      json,
      '--junit',
      junit,
    ]);
    expect(run.code, run.stderr).to.equal(1);
    expect(run.stdout).to.match(/^start .*pass\.scenario\.ts$/m); // plain lines: not a terminal
    expect(run.stdout).to.match(
      /^FAIL fixture: bad move \[ergo-jr, twin\] .*: 1\/4 checks passed, 3 failed$/m,
    );
    expect(run.stdout).to.contain('FAIL bad: joint limits: m3 leaves its range [-90.00, 90.00] deg at t=0.6');
    expect(run.stdout).to.contain('bad: speed: m1 at t=0.99 s moves at 2000 deg/s');
    expect(run.stdout).to.match(/Scenario\s+Robot\s+Check\s+Result\s+Detail/);
    expect(run.stdout).to.contain('3 scenario(s), 15 check(s): 12 passed, 3 failed, 1 error(s), 0 skipped');

    const report = JSON.parse(await readFile(json, 'utf8')) as {
      summary: Record<string, unknown>;
      scenarios: ScenarioResult[];
    };
    expect(report.summary).to.deep.equal({
      scenarios: 3,
      checks: 15,
      passed: 12,
      failed: 3,
      errors: 1,
      skipped: 0,
      ok: false,
    });
    const bad = report.scenarios.find((s) => s.name === 'fixture: bad move')!;
    const limits = bad.checks.find((c) => c.name === 'bad: joint limits')!;
    expect(limits.status).to.equal('fail');
    expect(limits.findings[0]).to.include({ where: 'm3', unit: 'deg', limit: 90 });
    expect(limits.findings[0]!.margin).to.be.closeTo(20, 1e-9);
    expect(report.scenarios.find((s) => s.name === 'fixture: broken')).to.include({
      status: 'error',
      error: 'test/scenario/fixtures/broken.scenario.ts:9: the scenario script broke <here> & "there"',
    });

    const xml = await readFile(junit, 'utf8');
    checkJunit(xml, { suites: 3, failures: 3, errors: 1 });
    const doc = parseJunit(xml);
    const failing = doc.testsuites.testsuite.flatMap((s) => s.testcase).filter((c) => c.failure);
    expect(failing.map((c) => c['@_name'])).to.deep.equal([
      'bad: joint limits',
      'bad: speed',
      'bad: acceleration',
    ]);
    expect(failing[0]!.failure!['@_message']).to.match(/^m3 leaves its range .* at t=0\.6\d s/);
  });

  it('exits 0 when every check passes, 2 for a path that does not exist', async () => {
    const run = await cli([fixture('pass')]);
    expect(run.code, run.stdout + run.stderr).to.equal(0);
    expect(run.stdout).to.contain('1 scenario(s), 10 check(s): 10 passed, 0 failed, 0 error(s), 0 skipped');
    const missing = await cli([path.join(dir, 'nowhere')]);
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.contain('no such file or folder');
  });

  it('runs scenarios in parallel processes, results in file order, with a live line on a terminal', async () => {
    let text = '';
    const out = { isTTY: true, write: (s: string) => (text += s) };
    const results = await runScenarios([fixture('fail'), fixture('broken')], { jobs: 2, out });
    expect(results.map((r) => r.name)).to.deep.equal(['fixture: bad move', 'fixture: broken']);
    expect(text).to.contain('\r\x1b[K[0/2] running: ');
    expect(text).to.contain('\r\x1b[KERROR fixture: broken [ergo-jr, twin]');
    expect(text).not.to.match(/^start /m);
  });

  it('every example in scenarios/ passes on its twin, as docs/scenarios.md has users run them first', async () => {
    const files = await findScenarios([path.join(ROOT, 'scenarios')]);
    const results = await runScenarios(files, { jobs: 2, out: { write: () => true } });
    expect(results).to.have.length(files.length);
    const summary = summarize(results);
    expect(summary, failureList(results)).to.include({ failed: 0, errors: 0, skipped: 0 });
    expect(summary.passed).to.equal(summary.checks);
  });

  it('is deterministic: the same scenario twice gives the same figures', async () => {
    const a = await runScenario(passing, FIXTURES, { file: 'pass' });
    const b = await runScenario(passing, FIXTURES, { file: 'pass' });
    expect(a.status).to.equal('pass');
    expect(a.checks.find((c) => c.name === 'gentle: replay tracking')!.measured.m1_rms_deg).to.be.above(0);
    expect(figures(b)).to.deep.equal(figures(a));
  });

  it('writes valid JUnit XML for skipped checks and text that needs escaping', () => {
    const xml = junitReport([
      {
        file: 'a/b.scenario.ts',
        name: 'odd <name> & "quotes"',
        robot: 'torso',
        target: 'http://x',
        status: 'skipped',
        checks: [
          { name: 'c\u0001', status: 'skipped', summary: 'needs the twin', findings: [], measured: {} },
        ],
        wallSeconds: 0.5,
      },
    ]);
    checkJunit(xml, { suites: 1, failures: 0, errors: 0 });
    const suite = parseJunit(xml).testsuites.testsuite[0]!;
    expect(suite['@_name']).to.equal('odd <name> & "quotes" [torso]');
    expect(suite.testcase[0]!['@_name']).to.equal('c');
    expect(suite.testcase[0]!.skipped).to.not.equal(undefined);
  });
});

interface JunitCase {
  '@_name': string;
  '@_classname': string;
  '@_time': string;
  failure?: { '@_message': string; '@_type': string; '#text'?: string };
  error?: { '@_message': string; '@_type': string };
  skipped?: unknown;
}
interface JunitSuite {
  [attr: string]: unknown;
  properties: { property: { '@_name': string; '@_value': string }[] };
  testcase: JunitCase[];
  'system-out': unknown;
  'system-err': unknown;
}

function parseJunit(xml: string): { testsuites: Record<string, string> & { testsuite: JunitSuite[] } } {
  return new XMLParser({
    ignoreAttributes: false,
    parseAttributeValue: false,
    isArray: (name) => ['testsuite', 'testcase', 'property'].includes(name),
  }).parse(xml) as { testsuites: Record<string, string> & { testsuite: JunitSuite[] } };
}

/**
 * The Ant JUnit schema's required elements and attributes (plus `skipped`, as Jenkins' junit-10.xsd has it), and
 * counts that agree with the test cases.
 */
function checkJunit(xml: string, want: { suites: number; failures: number; errors: number }): void {
  expect(XMLValidator.validate(xml)).to.equal(true);
  const doc = parseJunit(xml);
  const suites = doc.testsuites.testsuite;
  expect(suites).to.have.length(want.suites);
  let failures = 0;
  let errors = 0;
  suites.forEach((s, i) => {
    for (const attr of [
      'name',
      'tests',
      'failures',
      'errors',
      'skipped',
      'time',
      'timestamp',
      'hostname',
      'id',
      'package',
    ])
      expect(s, `testsuite ${i} @${attr}`).to.have.property(`@_${attr}`);
    expect(s['@_timestamp']).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/); // xs:dateTime without a zone, as Ant writes
    expect(Number(s['@_time'])).to.be.at.least(0);
    expect(s['@_id']).to.equal(String(i));
    expect(s).to.have.property('properties');
    expect(s).to.have.property('system-out');
    expect(s).to.have.property('system-err');
    const cases = s.testcase ?? [];
    expect(Number(s['@_tests'])).to.equal(cases.length);
    const f = cases.filter((c) => c.failure).length;
    const e = cases.filter((c) => c.error).length;
    expect(Number(s['@_failures'])).to.equal(f);
    expect(Number(s['@_errors'])).to.equal(e);
    expect(Number(s['@_skipped'])).to.equal(cases.filter((c) => c.skipped !== undefined).length);
    failures += f;
    errors += e;
    for (const c of cases) {
      for (const attr of ['name', 'classname', 'time']) expect(c).to.have.property(`@_${attr}`);
      if (c.failure) expect(c.failure).to.include.keys('@_message', '@_type');
      if (c.error) expect(c.error).to.include.keys('@_message', '@_type');
    }
  });
  expect(Number(doc.testsuites['@_failures'])).to.equal(failures);
  expect(Number(doc.testsuites['@_errors'])).to.equal(errors);
  expect(failures).to.equal(want.failures);
  expect(errors).to.equal(want.errors);
}
