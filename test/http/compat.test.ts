/**
 * The pypot profile (`--compat=pypot`, docs/reference/contract.md 8): the requests of pypot 5.0.2's REST test suite (27 tests,
 * Python `requests` with `Content-Type: application/json`, an Ergo Jr, the move `unit_test`, the primitive
 * `base_posture`), written here, with what a pypot client relies on; then the request sets of the Scratch
 * extension and of the recorder web page (a JSON body labelled as a form, `JSON.parse` of the answer text) in both
 * profiles.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { LightMyRequestResponse } from 'fastify';
import { simServer, untilAnswered, type TestServer } from '../helpers.ts';
import { isErrorBody } from './facts.ts';

const HTML = 'text/html; charset=UTF-8';
const JSON_TYPE = 'application/json; charset=utf-8';

/** What pypot's suite sends: `requests.post(url, data=data, headers={'Content-Type': 'application/json'})`. */
function pypotClient(s: TestServer) {
  return {
    get: (url: string) => s.app.inject({ method: 'GET', url }),
    post: (url: string, data?: string) =>
      s.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json' },
        ...(data ? { payload: data } : {}),
      }),
  };
}

/** The answer as a client reads it: JSON.parse of the text, whatever the Content-Type says. */
const parsed = (res: LightMyRequestResponse) => JSON.parse(res.body) as Record<string, unknown>;

function expectStatus(res: LightMyRequestResponse, status: number, what: string) {
  expect(res.statusCode, `${what}: ${res.body}`).to.equal(status);
  if (status === 204 || status === 304) return;
  expect(res.body, what).to.not.match(/<html|<body|<!doctype/i);
  if (status >= 400) expect(isErrorBody(parsed(res)), `${what}: ${res.body}`).to.equal(true);
}

describe('pypot profile: the requests of pypot 5.0.2 REST test suite (Ergo Jr)', function () {
  this.timeout(30000);
  let s: TestServer;
  let dir: string;
  let c: ReturnType<typeof pypotClient>;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'compat-'));
    s = await simServer('ergo-jr', { compat: 'pypot', recordsDir: dir });
    c = pypotClient(s);
  });
  afterEach(async () => {
    await s.close();
    await rm(dir, { recursive: true, force: true });
  });

  const one = async (method: 'get' | 'post', url: string, status: number, data?: string) => {
    const res = method === 'get' ? await c.get(url) : await c.post(url, data);
    expectStatus(res, status, `${method.toUpperCase()} ${url}`);
    return res;
  };

  it('test_ip, test_index, test_paths: 200, JSON labelled text/html (GET / is the HTML index)', async () => {
    const ip = await one('get', '/ip.json', 200);
    expect(ip.headers['content-type']).to.equal(HTML);
    expect(parsed(ip).ip).to.be.a('string');
    const robot = await one('get', '/robot.json', 200);
    expect(robot.headers['content-type']).to.equal(HTML);
    expect(parsed(robot).motors).to.have.lengthOf(6);
    const index = await c.get('/');
    expect(index.statusCode).to.equal(200);
    expect(index.body).to.match(/<html/);
  });

  it('test_motors_list: /motors/motors/list.json lists every motor; an unknown alias is 404', async () => {
    expect(parsed(await one('get', '/motors/list.json', 200)).motors).to.include.members([
      'm1',
      'm2',
      'm3',
      'm4',
      'm5',
      'm6',
    ]);
    expect(parsed(await one('get', '/motors/motors/list.json', 200)).motors).to.deep.equal([
      'm1',
      'm2',
      'm3',
      'm4',
      'm5',
      'm6',
    ]);
    expect(parsed(await one('get', '/motors/base/list.json', 200)).base).to.include.members([
      'm1',
      'm2',
      'm3',
    ]);
    expect(parsed(await one('get', '/motors/tip/list.json', 200)).tip).to.include.members(['m4', 'm5', 'm6']);
    await one('get', '/motors/unknown_alias/list.json', 404);
  });

  it('test_motors_aliases_list and test_motors_registers_list', async () => {
    expect(parsed(await one('get', '/motors/aliases/list.json', 200)).aliases).to.include.members([
      'base',
      'tip',
    ]);
    const regs = parsed(await one('get', '/motors/m1/registers/list.json', 200)).registers;
    for (const r of [
      'goal_speed',
      'compliant',
      'safe_compliant',
      'angle_limit',
      'id',
      'name',
      'model',
      'present_position',
      'goal_position',
      'present_speed',
      'moving_speed',
      'present_load',
      'torque_limit',
      'lower_limit',
      'upper_limit',
      'present_voltage',
      'present_temperature',
      'pid',
      'led',
      'control_mode',
    ])
      expect(regs, r).to.include(r);
    await one('get', '/motors/unknown_motor/registers/list.json', 404);
  });

  it('test_motor_register: writes are 202, unknown names 404, a wrong value 400, a read-only register 404', async () => {
    await one('get', '/motors/m1/registers/present_position/value.json', 200);
    await one('get', '/motors/unknown_motor/registers/present_position/value.json', 404);
    await one('get', '/motors/m1/registers/unknown_register/value.json', 404);
    const write = await one('post', '/motors/m1/registers/compliant/value.json', 202, 'true');
    expect(parsed(write)).to.deep.equal({ compliant: true });
    await one('post', '/motors/unknown_motor/registers/compliant/value.json', 404, 'true');
    await one('post', '/motors/m1/registers/unknown_register/value.json', 404, 'true');
    await one('post', '/motors/m1/registers/compliant/value.json', 400, 'wrong_value');
    // pypot answers a write to a read-only register as an unknown one, and changes nothing
    const before = parsed(await c.get('/motors/m1/registers/present_position/value.json'));
    await one('post', '/motors/m1/registers/present_position/value.json', 404, '10');
    expect(parsed(await c.get('/motors/m1/registers/present_position/value.json'))).to.deep.equal(before);
  });

  it('test_motor_register_values', async () => {
    const all = parsed(await one('get', '/motors/registers/compliant/list.json', 200)).compliant;
    expect(Object.keys(all as object)).to.have.members(['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
    await one('get', '/motors/registers/unknown_register/list.json', 404);
  });

  it('test_motor_goto: a goto on a compliant motor is 202, keeps the goal, does not move it, and waits its duration', async () => {
    expect(parsed(await c.get('/motors/m1/registers/compliant/value.json')).compliant).to.equal(true);
    const start = parsed(await c.get('/motors/m1/registers/present_position/value.json'))
      .present_position as number;
    const t0 = s.backend.clock.now();
    const res = await untilAnswered(
      s,
      c.post('/motors/m1/goto.json', '{"position":10,"duration":"3","wait":"true"}'),
    );
    expectStatus(res, 202, 'goto');
    expect(s.backend.clock.now() - t0).to.be.within(2.9, 3.2);
    expect(parsed(res)).to.deep.include({ duration: 3, waiting: true });
    // pypot's answer: no word of arrival (the default profile's reached, error, tolerance).
    expect(Object.keys(parsed(res))).to.deep.equal(['motors', 'duration', 'waiting', 'cancelled']);
    expect(parsed(await c.get('/motors/m1/registers/goal_position/value.json')).goal_position).to.be.closeTo(
      10,
      0.01,
    );
    const now = parsed(await c.get('/motors/m1/registers/present_position/value.json'))
      .present_position as number;
    expect(Math.abs(now - start), 'a compliant motor does not follow the goto').to.be.below(2);
    await one('post', '/motors/m1/goto.json', 400, '{"position":10,"duration":"-3","wait":"true"}');
    await one('post', '/motors/m1/goto.json', 400, '{"duration":"3","wait":"true"}');
  });

  it('test_motors_goto: 202; wrong lengths, durations or missing motors are 400 and nothing moves', async () => {
    const res = await untilAnswered(
      s,
      c.post('/motors/goto.json', '{"motors":["m1", "m2"], "positions":[0,10],"duration":"3","wait":"true"}'),
    );
    expectStatus(res, 202, 'multi goto');
    const goals = () => c.get('/motors/registers/goal_position/list.json').then((r) => r.body);
    const before = await goals();
    for (const data of [
      '{"motors":["m1"], "positions":[0,10],"duration":"3","wait":"true"}',
      '{"motors":["m1", "m2"], "positions":[0,10],"duration":"-3","wait":"true"}',
      '{"positions":[0,10],"duration":"3","wait":"true"}',
    ])
      await one('post', '/motors/goto.json', 400, data);
    await s.advance(0.5);
    expect(await goals()).to.equal(before);
  });

  it('test_sensors_list: 200 with the camera and the marker detector', async () => {
    expect(parsed(await one('get', '/sensors/list.json', 200)).sensors).to.include.members([
      'camera',
      'marker_detector',
    ]);
  });

  it('test_sensor_registers_list and test_sensor_register: unknown sensors are 404, also on POST', async () => {
    await one('get', '/sensors/unknown_sensor/registers/list.json', 404);
    await one('get', '/sensors/unknown_sensor/registers/unknown_register/value.json', 404);
    await one('post', '/sensors/unknown_sensor/registers/unknown_register/value.json', 404, 'wrong_value');
  });

  it('test_records_list, test_records_values, test_record_delete', async () => {
    expect(parsed(await one('get', '/records/list.json', 200)).moves).to.deep.equal([]);
    await one('post', '/records/unit_test/record.json', 202);
    await s.advance(0.2);
    await one('post', '/records/unit_test/save.json', 202);
    expect(parsed(await one('get', '/records/unit_test/value.json', 200))).to.have.property('unit_test');
    await one('get', '/records/unit_test2/value.json', 404);
    expect(parsed(await one('post', '/records/unit_test/delete.json', 202))).to.deep.equal({
      unit_test: 'deleted',
    });
  });

  it('test_records_record_and_save: 202s, the move is listed, save of an unknown move is 404', async () => {
    await one('post', '/records/unit_test/record.json', 202);
    await s.advance(0.1);
    await one('post', '/records/unit_test/save.json', 202, '{}');
    expect(parsed(await c.get('/records/list.json')).moves).to.include('unit_test');
    await one('post', '/records/unit_test/record.json', 202, '{"motors":["m1","m2"]}');
    await s.advance(0.1);
    await one('post', '/records/unit_test/save.json', 202);
    await one('post', '/records/unit_test2/save.json', 404);
    // pypot: save.json of a move that is not recording is 404 too
    await one('post', '/records/unit_test/save.json', 404);
    await one('post', '/records/unit_test/delete.json', 202);
  });

  it('test_record_play and test_record_stop: speed is required, unreadable JSON is 400, stop of an unknown move is 400', async () => {
    await one('post', '/records/unit_test/record.json', 202);
    await s.advance(0.2);
    await one('post', '/records/unit_test/save.json', 202);
    await one('post', '/records/unit_test/play.json', 202, '{"speed": -1}');
    await one('post', '/records/unit_test/stop.json', 202);
    await one('post', '/records/unit_test/play.json', 400, '{"sped": -1}');
    await one('post', '/records/unit_test/play.json', 400, '{"speed": unreadable_speed}');
    await one('post', '/records/unit_test2/play.json', 404, '{"speed": -1}');
    await one('post', '/records/unit_test/play.json', 202, '{"speed": 1}');
    await one('post', '/records/unit_test/stop.json', 202);
    await one('post', '/records/unit_test2/stop.json', 400);
    await one('post', '/records/unit_test/delete.json', 202);
  });

  it('test_primitives_list and test_running_primitives_list: pypot\'s key "running_primitives" only', async () => {
    expect(parsed(await one('get', '/primitives/list.json', 200)).primitives).to.include('base_posture');
    await one('get', '/primitives/base_posture/start.json', 202);
    const running = parsed(await one('get', '/primitives/running/list.json', 200));
    expect(Object.keys(running)).to.deep.equal(['running_primitives']);
    expect(running.running_primitives).to.include('base_posture');
  });

  it('test_start, stop, pause, resume_primitive: 202, unknown 404; pause and resume in any state are no-ops', async () => {
    for (const verb of ['start', 'stop', 'pause', 'resume']) {
      await one('get', '/primitives/base_posture/start.json', 202);
      const res = await one('get', `/primitives/base_posture/${verb}.json`, 202);
      expect(Object.keys(parsed(res))).to.deep.equal(['base_posture']);
      await one('get', `/primitives/unknown_primitive/${verb}.json`, 404);
    }
    await one('get', '/primitives/base_posture/stop.json', 202);
    // not running: pypot still answers 202
    await one('get', '/primitives/base_posture/pause.json', 202);
    await one('get', '/primitives/base_posture/resume.json', 202);
  });

  it('test_primitive_properties_list and test_primitive_methods_list', async () => {
    await one('get', '/primitives/base_posture/properties/list.json', 200);
    await one('get', '/primitives/unknown_primitive/properties/list.json', 404);
    expect(parsed(await one('get', '/primitives/base_posture/methods/list.json', 200)).methods).to.include(
      'start',
    );
    await one('get', '/primitives/unknown_primitive/methods/list.json', 404);
  });
});

describe('pypot profile: what else its clients see', function () {
  this.timeout(30000);
  let s: TestServer;
  beforeEach(async () => {
    s = await simServer('ergo-jr', { compat: 'pypot' });
  });
  afterEach(() => s.close());

  it('/sensors/code/list.json answers integer marker ids; a sensor register write is 404', async () => {
    // hold the Ergo Jr up in its rest posture, camera looking ahead, as a lab would
    const motors = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'];
    for (const m of motors) await s.post(`/motors/${m}/registers/compliant/value.json`, false);
    await untilAnswered(
      s,
      s.post('/motors/goto.json', { motors, positions: [0, -90, 35, 0, 55, -5], duration: 0.5, wait: true }),
    );
    await s.advance(0.5);
    expect(parsed(await s.get('/sensors/code/list.json'))).to.deep.equal({ codes: [] });
    expect((await s.post('/sim/cards/caribou/show.json', {})).statusCode).to.equal(200);
    await s.advance(1 / s.markers!.rate + 0.01);
    expect(parsed(await s.get('/sensors/code/list.json'))).to.deep.equal({ codes: [221052793] });
    expectStatus(await s.post('/sensors/camera/registers/fps/value.json', 30), 404, 'sensor write');
  });

  it('GETs carry an ETag; If-None-Match with it is 304 with no body, until the answer changes', async () => {
    const first = await s.get('/motors/m1/registers/compliant/value.json');
    const tag = first.headers.etag as string;
    expect(tag).to.match(/^".+"$/);
    const again = await s.app.inject({
      method: 'GET',
      url: '/motors/m1/registers/compliant/value.json',
      headers: { 'if-none-match': tag },
    });
    expect(again.statusCode).to.equal(304);
    expect(again.body).to.equal('');
    await s.post('/motors/m1/registers/compliant/value.json', false);
    const changed = await s.app.inject({
      method: 'GET',
      url: '/motors/m1/registers/compliant/value.json',
      headers: { 'if-none-match': tag },
    });
    expect(changed.statusCode).to.equal(200);
    expect(changed.headers.etag).to.not.equal(tag);
  });

  it('errors stay JSON {error, tip, details} (labelled text/html), never HTML pages, also 405 and unknown routes', async () => {
    for (const res of [
      await s.get('/no/such/route'),
      await s.app.inject({ method: 'DELETE', url: '/motors/list.json' }),
      await s.app.inject({ method: 'PUT', url: '/' }),
      await s.post('/motors/m1/goto.json', '{"position": "<script>", "duration": 1}'),
    ]) {
      expect(res.statusCode).to.be.within(400, 499);
      expect(res.headers['content-type']).to.equal(HTML);
      expect(isErrorBody(parsed(res)), res.body).to.equal(true);
    }
  });

  it('a property write is 204 with an empty body and sets it; a read-only property is 404', async () => {
    const custom = await simServer('ergo-jr', { compat: 'pypot', primitivesDir: 'examples/primitives' });
    try {
      const res = await custom.post('/primitives/sinus/properties/amplitude/value.json', 12);
      expect(res.statusCode, res.body).to.equal(204);
      expect(res.body).to.equal('');
      expect(parsed(await custom.get('/primitives/sinus/properties/amplitude/value.json'))).to.deep.equal({
        'sinus.amplitude': 12,
      });
      expectStatus(await custom.post('/primitives/sinus/properties/phase/value.json', 1), 404, 'read-only');
    } finally {
      await custom.close();
    }
  });

  it('IK goto reads wait by truthiness (any truthy JSON waits)', async () => {
    for (const m of ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'])
      await s.post(`/motors/${m}/registers/compliant/value.json`, false);
    const t0 = s.backend.clock.now();
    const res = await untilAnswered(
      s,
      s.post('/ik/chain/goto.json', { xyz: '0.05,-0.1,0.15', duration: 1, wait: 'yes' }),
    );
    expect(res.statusCode, res.body).to.equal(200);
    expect(s.backend.clock.now() - t0).to.be.at.least(0.95);
    expect(Object.keys(parsed(res))).to.deep.equal(['xyz', 'rot', 'cancelled']);
    const quick = await s.post('/ik/chain/goto.json', { xyz: '0.05,-0.1,0.15', duration: 1, wait: 0 });
    expect(quick.statusCode).to.equal(200);
    expect(Object.keys(parsed(quick))).to.deep.equal(['xyz', 'rot']);
  });

  it('IK goto out of reach: as pypot, the chain goes to the closest pose (200, no refusal, no new field)', async () => {
    for (const m of ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'])
      await s.post(`/motors/${m}/registers/compliant/value.json`, false);
    const res = await untilAnswered(
      s,
      s.post('/ik/chain/goto.json', { xyz: '0,-1,0.15', duration: 1, wait: true }),
    );
    expect(res.statusCode, res.body).to.equal(200);
    expect(Object.keys(parsed(res))).to.deep.equal(['xyz', 'rot', 'cancelled']);
    const reached = String(parsed(res).xyz).split(',').map(Number);
    expect(reached[1]).to.be.below(-0.15); // stretched towards -y
    expect(Math.hypot(reached[0]!, reached[1]! + 1, reached[2]! - 0.15)).to.be.above(0.5);
    // The motors went there: the present pose moved towards the target.
    const now = String(parsed(await s.get('/ik/chain/value.json')).xyz)
      .split(',')
      .map(Number);
    expect(now[1]).to.be.below(-0.15);
  });
});

/** Requests of the Scratch 3 extension and of the recorder web page: both profiles serve them. */
for (const compat of [undefined, 'pypot'] as const) {
  describe(`client request sets (${compat ?? 'default'} profile)`, function () {
    this.timeout(30000);
    let s: TestServer;
    let dir: string;
    beforeEach(async () => {
      dir = await mkdtemp(path.join(os.tmpdir(), 'clients-'));
      s = await simServer('ergo-jr', { recordsDir: dir, ...(compat ? { compat } : {}) });
    });
    afterEach(async () => {
      await s.close();
      await rm(dir, { recursive: true, force: true });
    });
    const ok = (res: LightMyRequestResponse, what: string) => {
      expect(res.statusCode, `${what}: ${res.body}`).to.be.within(200, 299);
      expect(res.headers['content-type'], what).to.equal(compat ? HTML : JSON_TYPE);
      return parsed(res);
    };
    /** jQuery's $.post(url, JSON.stringify(data)): JSON labelled as a form. */
    const form = (url: string, data: unknown) =>
      s.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/x-www-form-urlencoded; charset=UTF-8' },
        payload: JSON.stringify(data),
      });

    it('the recorder page: stiffen, record, save, list, replay, watch the running list, stop, delete', async () => {
      const motors = ok(await s.get('/motors/list.json'), 'list').motors as string[];
      ok(await s.get('/motors/aliases/list.json'), 'aliases');
      for (const m of motors) ok(await form(`/motors/${m}/registers/compliant/value.json`, false), m);
      ok(await form('/records/wave/record.json', { motors: ['m1', 'm2'] }), 'record');
      await s.advance(0.3);
      ok(await form('/records/wave/save.json', {}), 'save');
      expect(ok(await s.get('/records/list.json'), 'moves').moves).to.deep.equal(['wave']);
      ok(await form('/records/wave/play.json', { speed: 1 }), 'play');
      const running = ok(await s.get('/primitives/running/list.json'), 'running');
      expect(running.running_primitives).to.include('_wave_player');
      ok(await form('/records/wave/stop.json', {}), 'stop');
      ok(await form('/records/wave/delete.json', {}), 'delete');
      expect(ok(await s.get('/records/list.json'), 'moves').moves).to.deep.equal([]);
    });

    it('the Scratch extension: read registers, write a goal, gotos, primitives, IK', async () => {
      ok(await s.get('/robot.json'), 'robot');
      ok(await s.get('/motors/m1/registers/present_position/value.json'), 'read');
      ok(await s.post('/motors/m1/registers/compliant/value.json', 'false'), 'stiff');
      ok(await s.post('/motors/m1/registers/goal_position/value.json', '20'), 'goal');
      ok(await form('/motors/m2/registers/compliant/value.json', false), 'stiff m2');
      ok(
        await s.post('/motors/goto.json', {
          motors: ['m1', 'm2'],
          positions: [10, -10],
          duration: 1,
          wait: false,
        }),
        'multi goto',
      );
      ok(await s.post('/motors/m1/goto.json', { position: 0, duration: '0.5', wait: 'false' }), 'goto');
      ok(await s.get('/primitives/list.json'), 'primitives');
      ok(await s.get('/primitives/dance/start.json'), 'start');
      ok(await s.get('/primitives/dance/stop.json'), 'stop');
      ok(await s.get('/ik/chain/value.json'), 'ik value');
      ok(await s.get('/records/list.json'), 'records');
    });
  });
}
