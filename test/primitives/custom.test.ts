/** Custom primitives from a folder: the shipped example over REST, and broken files reported and skipped. */
import { expect } from 'chai';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { robotFamily } from '../../src/primitives/builtins/index.ts';
import { json, simServer, type TestServer } from '../helpers.ts';
import { recordingLogger } from './probes.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const EXAMPLE = path.join(ROOT, 'examples/primitives/sinus.ts');
const API = path.join(ROOT, 'src/primitives/api.ts');

const BROKEN: Record<string, string> = {
  'syntax.ts': 'export default function (ctx {\n',
  'throws.js': "throw new Error('boom at load');\n",
  'wrong.ts': 'export const notDefault = 1;\n',
  'notprim.mjs': "export default () => ({ name: 'fake' });\n",
  'badprop.ts': `export default (ctx: any, lib: any) => new (class extends lib.Primitive {
  override properties() { return [{ name: 'x', type: 'object', get: () => 1, set: () => {} }]; }
})(ctx, 'badprop');\n`,
  'clash.ts': "export default (ctx: any, lib: any) => new (class extends lib.Primitive {})(ctx, 'dance');\n",
  'underscore.ts':
    "export default (ctx: any, lib: any) => new (class extends lib.Primitive {})(ctx, '_hidden');\n",
  'factorythrows.ts': "export default () => { throw new Error('no robot for me'); };\n",
};

const GOOD: Record<string, string> = {
  'classy.ts': `import { Primitive, type PrimitiveContext } from ${JSON.stringify(API)};
export default class Classy extends Primitive {
  constructor(ctx: PrimitiveContext) { super(ctx, 'classy', { frequency: 10 }); }
  protected override update(): void { this.request('m2', 'led', 'cyan'); }
}\n`,
  'asyncf.ts': `export default async (ctx: any, lib: any) => {
  await new Promise((r) => setImmediate(r));
  return new (class extends lib.Primitive {})(ctx, 'async_one');
};\n`,
  // Ignored: not modules, declarations, hidden files.
  'README.md': '# not a module\n',
  'types.d.ts': 'export type X = number;\n',
  '.hidden.ts': "throw new Error('must not be loaded');\n",
};

describe('primitives: custom modules from a folder', function () {
  let dir: string;
  let s: TestServer;
  let log: ReturnType<typeof recordingLogger>;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'poppy-primitives-'));
    await copyFile(EXAMPLE, path.join(dir, 'sinus.ts'));
    for (const [file, text] of Object.entries({ ...BROKEN, ...GOOD }))
      await writeFile(path.join(dir, file), text);
    log = recordingLogger();
    // Inline: these checks are tick by tick; test/primitives/isolated.test.ts covers the worker isolation.
    s = await simServer('ergo-jr', { primitivesDir: dir, logger: log, primitiveIsolation: 'inline' });
  });
  after(async () => {
    await s?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('loads the good ones after the built-ins, in file order, and the server starts despite the broken ones', async () => {
    const names = json(await s.get('/primitives/list.json')).primitives as string[];
    expect(names.slice(-3)).to.deep.equal(['async_one', 'classy', 'sinus']);
    expect(names).to.include('dance');
    expect(names.filter((n) => n === 'dance')).to.have.length(1);
  });

  it('reports every broken file with its path and reason', async () => {
    const problems = Object.fromEntries(
      s.primitives.loadProblems.map((p) => [path.basename(p.file), p.reason]),
    );
    expect(Object.keys(problems).sort()).to.deep.equal(Object.keys(BROKEN).sort());
    expect(problems['syntax.ts']).to.match(/expected|error/i);
    expect(problems['throws.js']).to.contain('boom at load');
    expect(problems['wrong.ts']).to.contain('no default export');
    expect(problems['notprim.mjs']).to.contain('not a Primitive');
    expect(problems['badprop.ts']).to.contain('property "x" has type "object"');
    expect(problems['clash.ts']).to.contain('"dance" already exists');
    expect(problems['underscore.ts']).to.contain('invalid primitive name');
    expect(problems['factorythrows.ts']).to.contain('no robot for me');
    for (const file of Object.keys(BROKEN))
      expect(
        log.has('error', new RegExp(`${path.join(dir, file).replace(/[.\\]/g, '\\$&')} skipped: .+`)),
      ).to.equal(true, file);
  });

  it('runs a class default export', async () => {
    await s.get('/primitives/classy/start.json');
    await s.advance(0.3);
    expect(s.robot.motor('m2').commands.led).to.equal('cyan');
    await s.get('/primitives/classy/stop.json');
  });

  it('the example sinus: its properties and set_phase work over REST and its motion shows in present_position', async () => {
    expect(json(await s.get('/primitives/sinus/properties/list.json'))).to.deep.equal({
      property: ['amplitude', 'frequency', 'offset', 'motors', 'phase'],
    });
    expect(json(await s.get('/primitives/sinus/methods/list.json')).methods).to.deep.equal([
      'start',
      'stop',
      'pause',
      'resume',
      'set_phase',
    ]);
    expect(json(await s.get('/primitives/sinus/properties/motors/value.json'))).to.deep.equal({
      'sinus.motors': ['m1'],
    });
    expect(json(await s.post('/primitives/sinus/properties/amplitude/value.json', 30))).to.deep.equal({
      'sinus.amplitude': 30,
    });
    expect(json(await s.post('/primitives/sinus/properties/frequency/value.json', '0.5'))).to.deep.equal({
      'sinus.frequency': 0.5,
    });
    expect(json(await s.post('/primitives/sinus/properties/motors/value.json', ['m1', 'm4']))).to.deep.equal({
      'sinus.motors': ['m1', 'm4'],
    });
    expect(json(await s.get('/primitives/sinus/start.json'))).to.deep.equal({ sinus: 'started' });
    const samples: number[] = [];
    for (let i = 0; i < 100; i++) {
      await s.advance(0.04);
      samples.push(s.robot.motor('m4').state.presentPosition);
    }
    // 4 s = two periods of a 30-degree sine
    expect(Math.max(...samples)).to.be.within(26, 33);
    expect(Math.min(...samples)).to.be.within(-33, -26);
    expect(s.robot.motor('m1').state.presentPosition).to.be.closeTo(
      s.robot.motor('m4').state.presentPosition,
      3,
    );

    // set_phase with an object, an array and a bare value
    expect(
      json(await s.post('/primitives/sinus/methods/set_phase/args.json', { degrees: 90 })),
    ).to.deep.equal({
      'sinus:set_phase': 90,
    });
    expect(json(await s.post('/primitives/sinus/methods/set_phase/args.json', [180]))).to.deep.equal({
      'sinus:set_phase': 180,
    });
    expect(json(await s.post('/primitives/sinus/methods/set_phase/args.json', 270))).to.deep.equal({
      'sinus:set_phase': 270,
    });
    await s.advance(0.1); // 0.1 s at 0.5 Hz: 18 degrees further
    expect(json(await s.get('/primitives/sinus/properties/phase/value.json'))['sinus.phase']).to.be.closeTo(
      288,
      2,
    );
    await s.advance(0.5);
    // Near the bottom of the sine: phase 288..378 degrees -> goal about -30 * sin(...)... check the goal follows it
    const phase =
      (json(await s.get('/primitives/sinus/properties/phase/value.json'))['sinus.phase'] as number) *
      (Math.PI / 180);
    expect(s.robot.motor('m4').commands.goalPosition).to.be.closeTo(30 * Math.sin(phase), 3);

    // bad inputs
    expect((await s.post('/primitives/sinus/properties/phase/value.json', 10)).statusCode).to.equal(403);
    expect((await s.post('/primitives/sinus/properties/frequency/value.json', 'fast')).statusCode).to.equal(
      400,
    );
    const refused = await s.post('/primitives/sinus/properties/frequency/value.json', 10);
    expect(refused.statusCode).to.equal(400);
    expect(refused.json().error).to.contain('0..5 Hz');
    expect((await s.post('/primitives/sinus/properties/motors/value.json', ['nope'])).statusCode).to.equal(
      404,
    );
    expect((await s.post('/primitives/sinus/properties/motors/value.json', [])).statusCode).to.equal(400);
    expect((await s.post('/primitives/sinus/methods/set_phase/args.json')).statusCode).to.equal(400);
    expect((await s.post('/primitives/sinus/methods/set_phase/args.json', { deg: 1 })).statusCode).to.equal(
      400,
    );
    expect((await s.post('/primitives/sinus/methods/set_phase/args.json', [1, 2])).statusCode).to.equal(400);

    // dropping a motor releases it: m4 stops following
    await s.post('/primitives/sinus/properties/motors/value.json', ['m1']);
    await s.advance(0.1);
    const held = s.robot.motor('m4').commands.goalPosition;
    await s.advance(0.5);
    expect(s.robot.motor('m4').commands.goalPosition).to.equal(held);
    expect(json(await s.get('/primitives/sinus/stop.json'))).to.deep.equal({ sinus: 'stopped' });
  });
});

describe('primitives: the default primitives folder beside a robot config', function () {
  it('loads primitives/ next to a renamed copy of a config; the built-ins follow the motors', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'poppy-robot-'));
    try {
      const config = JSON.parse(await readFile(path.join(ROOT, 'robots/ergo-jr.json'), 'utf8'));
      config.name = 'my-ergo';
      config.urdf = path.join(ROOT, 'urdf/ergo-jr.urdf');
      await writeFile(path.join(dir, 'my-ergo.json'), JSON.stringify(config));
      await mkdir(path.join(dir, 'primitives'));
      await copyFile(EXAMPLE, path.join(dir, 'primitives/sinus.ts'));
      expect(robotFamily(config)).to.equal('ergo-jr');
      const s = await simServer(path.join(dir, 'my-ergo.json'));
      try {
        await s.primitives.customLoaded(); // isolated (the default): loaded in the background
        const names = json(await s.get('/primitives/list.json')).primitives as string[];
        expect(names[0]).to.equal('safe_power_up');
        expect(names.at(-1)).to.equal('sinus');
      } finally {
        await s.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
