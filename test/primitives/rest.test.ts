/** /primitives over HTTP: every endpoint and every bad input of docs/reference/contract.md 5. */
import { expect } from 'chai';
import type { MethodSpec, PropertySpec } from '../../src/primitives/primitive.ts';
import { json, simServer, type TestServer } from '../helpers.ts';
import { Probe } from './probes.ts';

/** A primitive with typed properties and methods, to exercise the argument rules. */
class Typed extends Probe {
  gain = 1;
  label = 'x';
  enabled = false;
  weights: number[] = [1, 2];
  tags: string[] = [];

  override properties(): PropertySpec[] {
    return [
      { name: 'gain', type: 'number', get: () => this.gain, set: (v) => (this.gain = v as number) },
      { name: 'label', type: 'string', get: () => this.label, set: (v) => (this.label = v as string) },
      {
        name: 'enabled',
        type: 'boolean',
        get: () => this.enabled,
        set: (v) => (this.enabled = v as boolean),
      },
      {
        name: 'weights',
        type: 'number[]',
        get: () => this.weights,
        set: (v) => (this.weights = v as number[]),
      },
      { name: 'tags', type: 'string[]', get: () => this.tags, set: (v) => (this.tags = v as string[]) },
      { name: 'version', type: 'string', readOnly: true, get: () => '1.0' },
    ];
  }

  override methods(): MethodSpec[] {
    return [
      ...super.methods(),
      {
        name: 'add',
        params: [
          { name: 'a', type: 'number' },
          { name: 'b', type: 'number', optional: true },
        ],
        call: ([a, b]) => (a as number) + ((b as number | undefined) ?? 0),
      },
      {
        name: 'greet',
        params: [{ name: 'names', type: 'string[]' }],
        call: ([n]) => `hello ${(n as string[]).join(' and ')}`,
      },
      { name: 'nothing', params: [], call: () => undefined },
      {
        name: 'boom',
        params: [],
        call: () => {
          throw new Error('exploded');
        },
      },
      {
        name: 'later',
        params: [],
        call: async () => {
          await Promise.resolve();
          return { ok: true };
        },
      },
    ];
  }
}

describe('primitives: REST', function () {
  let s: TestServer;
  before(async () => {
    s = await simServer('ergo-jr');
    s.primitives.attach(new Typed(s.primitives.context, 'typed'));
  });
  after(() => s.close());

  it('lists every primitive in order, and the running ones under both keys', async () => {
    expect(json(await s.get('/primitives/list.json'))).to.deep.equal({
      primitives: [
        'safe_power_up',
        'dance',
        'base_posture',
        'rest_posture',
        'curious_posture',
        'tetris_posture',
        'tinsel_demo',
        'stubborn_demo',
        'chicken_demo',
        'puzzel_demo',
        'typed',
      ],
    });
    expect(json(await s.get('/primitives/running/list.json'))).to.deep.equal({
      primitives: [],
      running_primitives: [],
    });
    expect(json(await s.get('/primitives/typed/start.json'))).to.deep.equal({ typed: 'started' });
    expect(json(await s.get('/primitives/running/list.json'))).to.deep.equal({
      primitives: ['typed'],
      running_primitives: ['typed'],
    });
    const entry = (json(await s.get('/robot.json')).primitives as { primitive: string }[]).find(
      (p) => p.primitive === 'typed',
    );
    expect(entry).to.deep.equal({
      primitive: 'typed',
      running: true,
      properties: ['gain', 'label', 'enabled', 'weights', 'tags', 'version'],
      methods: ['start', 'stop', 'pause', 'resume', 'add', 'greet', 'nothing', 'boom', 'later'],
    });
    expect(json(await s.get('/primitives/typed/stop.json'))).to.deep.equal({ typed: 'stopped' });
  });

  it('start, pause, resume, stop answer as docs/reference/contract.md 5 says', async () => {
    const get = async (verb: string) => {
      const res = await s.get(`/primitives/tinsel_demo/${verb}.json`);
      return { status: res.statusCode, body: res.json() };
    };
    expect(await get('stop')).to.deep.equal({ status: 200, body: { tinsel_demo: 'stopped' } });
    expect((await get('pause')).status).to.equal(409);
    expect((await get('resume')).status).to.equal(409);
    expect(await get('start')).to.deep.equal({ status: 200, body: { tinsel_demo: 'started' } });
    expect(await get('start')).to.deep.equal({ status: 200, body: { tinsel_demo: 'started' } });
    expect((await get('resume')).status).to.equal(409);
    expect(await get('pause')).to.deep.equal({ status: 200, body: { tinsel_demo: 'paused' } });
    expect(json(await s.get('/primitives/running/list.json')).primitives).to.deep.equal(['tinsel_demo']);
    expect(await get('resume')).to.deep.equal({ status: 200, body: { tinsel_demo: 'resumed' } });
    expect(await get('pause')).to.deep.equal({ status: 200, body: { tinsel_demo: 'paused' } });
    expect(await get('stop')).to.deep.equal({ status: 200, body: { tinsel_demo: 'stopped' } });
    const conflict = await s.get('/primitives/tinsel_demo/pause.json');
    expect(Object.keys(conflict.json())).to.deep.equal(['error', 'tip', 'details']);
    expect(conflict.json().error).to.match(/not running/);
  });

  it('404 for an unknown primitive on every endpoint, with the error body', async () => {
    for (const url of [
      '/primitives/nope/start.json',
      '/primitives/nope/stop.json',
      '/primitives/nope/pause.json',
      '/primitives/nope/resume.json',
      '/primitives/nope/properties/list.json',
      '/primitives/nope/properties/gain/value.json',
      '/primitives/nope/methods/list.json',
    ]) {
      const res = await s.get(url);
      expect(res.statusCode, url).to.equal(404);
      expect(res.json().tip).to.contain('/primitives/list.json');
    }
    expect((await s.post('/primitives/nope/properties/gain/value.json', 1)).statusCode).to.equal(404);
    expect((await s.post('/primitives/nope/methods/start/args.json')).statusCode).to.equal(404);
  });

  it('built-ins list no properties and the four lifecycle methods; puzzel_demo adds its levels', async () => {
    expect(json(await s.get('/primitives/dance/properties/list.json'))).to.deep.equal({ property: [] });
    expect(json(await s.get('/primitives/dance/methods/list.json'))).to.deep.equal({
      methods: ['start', 'stop', 'pause', 'resume'],
    });
    const puzzel = json(await s.get('/primitives/puzzel_demo/methods/list.json')).methods as string[];
    expect(puzzel).to.include.members(['level_normal', 'level_growing', 'precision_hard']);
    expect(puzzel).not.to.include('level_noramle');
  });

  it('properties: read, write after a type check, 403 read-only, 404 unknown, 400 bad values', async () => {
    expect(json(await s.get('/primitives/typed/properties/gain/value.json'))).to.deep.equal({
      'typed.gain': 1,
    });
    expect(json(await s.post('/primitives/typed/properties/gain/value.json', 2.5))).to.deep.equal({
      'typed.gain': 2.5,
    });
    expect(json(await s.post('/primitives/typed/properties/gain/value.json', '3'))).to.deep.equal({
      'typed.gain': 3,
    });
    expect(json(await s.post('/primitives/typed/properties/enabled/value.json', 'true'))).to.deep.equal({
      'typed.enabled': true,
    });
    expect(json(await s.post('/primitives/typed/properties/label/value.json', '"hi"'))).to.deep.equal({
      'typed.label': 'hi',
    });
    expect(json(await s.post('/primitives/typed/properties/weights/value.json', [3, '4']))).to.deep.equal({
      'typed.weights': [3, 4],
    });
    expect(json(await s.post('/primitives/typed/properties/tags/value.json', ['a', 'b']))).to.deep.equal({
      'typed.tags': ['a', 'b'],
    });
    // A form body: value=...
    const form = await s.app.inject({
      method: 'POST',
      url: '/primitives/typed/properties/gain/value.json',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'value=7',
    });
    expect(form.json()).to.deep.equal({ 'typed.gain': 7 });
    expect(json(await s.get('/primitives/typed/properties/version/value.json'))).to.deep.equal({
      'typed.version': '1.0',
    });
    const bad: [string, unknown, number][] = [
      ['version', '"2.0"', 403],
      ['nope', 1, 404],
      ['gain', 'fast', 400],
      ['gain', [1], 400],
      ['gain', null, 400],
      ['enabled', 'maybe', 400],
      ['label', 5, 400],
      ['weights', [1, 'x'], 400],
      ['weights', { a: 1 }, 400],
      ['tags', [1, 2], 400],
    ];
    for (const [prop, body, code] of bad) {
      const res = await s.post(`/primitives/typed/properties/${prop}/value.json`, body);
      expect(res.statusCode, `${prop} <- ${JSON.stringify(body)}`).to.equal(code);
      expect(Object.keys(res.json())).to.deep.equal(['error', 'tip', 'details']);
    }
    expect((await s.post('/primitives/typed/properties/gain/value.json')).statusCode).to.equal(400);
    expect((await s.get('/primitives/typed/properties/nope/value.json')).statusCode).to.equal(404);
    expect(json(await s.get('/primitives/typed/properties/gain/value.json'))).to.deep.equal({
      'typed.gain': 7,
    });
  });

  it('methods: object body = named args, array = positional, value = one, empty = none', async () => {
    const call = (m: string, body?: unknown) => s.post(`/primitives/typed/methods/${m}/args.json`, body);
    expect(json(await call('add', { a: 2, b: 3 }))).to.deep.equal({ 'typed:add': 5 });
    expect(json(await call('add', { a: 2 }))).to.deep.equal({ 'typed:add': 2 });
    expect(json(await call('add', [4, 5]))).to.deep.equal({ 'typed:add': 9 });
    expect(json(await call('add', 6))).to.deep.equal({ 'typed:add': 6 });
    expect(json(await call('add', '"7"'))).to.deep.equal({ 'typed:add': 7 });
    expect(json(await call('greet', { names: ['Ada', 'Alan'] }))).to.deep.equal({
      'typed:greet': 'hello Ada and Alan',
    });
    expect(json(await call('greet', [['Ada']]))).to.deep.equal({ 'typed:greet': 'hello Ada' });
    // A list also comes as one comma-separated string (as records' motors do).
    expect(json(await call('greet', '"Ada, Alan"'))).to.deep.equal({ 'typed:greet': 'hello Ada and Alan' });
    expect(json(await call('nothing'))).to.deep.equal({ 'typed:nothing': null });
    expect(json(await call('nothing', {}))).to.deep.equal({ 'typed:nothing': null });
    expect(json(await call('nothing', []))).to.deep.equal({ 'typed:nothing': null });
    expect(json(await call('later'))).to.deep.equal({ 'typed:later': { ok: true } });
    const bad: [string, unknown, number][] = [
      ['add', undefined, 400], // missing a
      ['add', { b: 1 }, 400],
      ['add', { a: 1, c: 2 }, 400],
      ['add', [1, 2, 3], 400],
      ['add', 'x', 400],
      ['add', { a: 'x' }, 400],
      ['greet', 5, 400], // one value that is not a list
      ['nothing', 1, 400],
      ['nothing', { a: 1 }, 400],
      ['missing', undefined, 404],
      ['__proto__', undefined, 404],
      ['constructor', undefined, 404],
    ];
    for (const [m, body, code] of bad) {
      const res = await call(m, body);
      expect(res.statusCode, `${m}(${JSON.stringify(body)})`).to.equal(code);
      expect(Object.keys(res.json())).to.deep.equal(['error', 'tip', 'details']);
    }
    const boom = await call('boom');
    expect(boom.statusCode).to.equal(500);
    expect(boom.json().details).to.equal('exploded');
    expect((await s.get('/primitives/typed/methods/add/args.json')).statusCode).to.equal(405);
  });

  it('built-in methods work without arguments and are 400 with any', async () => {
    for (const body of [{ x: 1 }, [1], 1, 'go', true]) {
      const res = await s.post('/primitives/tinsel_demo/methods/start/args.json', body);
      expect(res.statusCode, JSON.stringify(body)).to.equal(400);
    }
    expect(s.primitives.get('tinsel_demo').state).to.equal('stopped');
    expect(json(await s.post('/primitives/tinsel_demo/methods/start/args.json'))).to.deep.equal({
      'tinsel_demo:start': null,
    });
    expect(s.primitives.get('tinsel_demo').state).to.equal('running');
    expect(json(await s.post('/primitives/tinsel_demo/methods/pause/args.json', {}))).to.deep.equal({
      'tinsel_demo:pause': null,
    });
    expect((await s.post('/primitives/tinsel_demo/methods/pause/args.json', [])).statusCode).to.equal(200);
    expect(json(await s.post('/primitives/tinsel_demo/methods/resume/args.json'))).to.deep.equal({
      'tinsel_demo:resume': null,
    });
    expect((await s.post('/primitives/tinsel_demo/methods/resume/args.json')).statusCode).to.equal(409);
    expect(json(await s.post('/primitives/tinsel_demo/methods/stop/args.json'))).to.deep.equal({
      'tinsel_demo:stop': null,
    });
    expect((await s.post('/primitives/puzzel_demo/methods/level_hard/args.json', 3)).statusCode).to.equal(
      400,
    );
    expect(json(await s.post('/primitives/puzzel_demo/methods/level_hard/args.json'))).to.deep.equal({
      'puzzel_demo:level_hard': null,
    });
  });
});
