/** The records API over inject(): every rule of docs/reference/contract.md 4, the state machine, and every bad input. */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { simServer, type TestServer } from '../helpers.ts';

type Res = { status: number; body: Record<string, unknown>; headers: Record<string, unknown> };

describe('records API (Ergo Jr, sim)', function () {
  this.timeout(30000);
  let root: string;
  let dir: string;
  let s: TestServer;

  const get = async (url: string): Promise<Res> => {
    const r = await s.get(url);
    return { status: r.statusCode, body: r.json(), headers: r.headers };
  };
  const post = async (url: string, body?: unknown, headers?: Record<string, string>): Promise<Res> => {
    const r = await s.post(url, body, headers);
    return { status: r.statusCode, body: r.json(), headers: r.headers };
  };
  const expectError = (r: Res, status: number) => {
    expect(r.status, JSON.stringify(r.body)).to.equal(status);
    expect(Object.keys(r.body).sort()).to.deep.equal(['details', 'error', 'tip']);
    for (const v of Object.values(r.body)) expect(v).to.be.a('string');
  };
  const files = async () => (await fs.readdir(dir)).sort();
  const primitives = async () => (await get('/primitives/list.json')).body.primitives as string[];
  const running = async () => (await get('/primitives/running/list.json')).body.primitives as string[];

  /** Records `name` (all motors or the given ones) for `seconds`, then saves. */
  async function recordMove(name: string, seconds = 0.5, body?: unknown) {
    expect((await post(`/records/${name}/record.json`, body)).status).to.equal(200);
    await s.advance(seconds);
    expect((await post(`/records/${name}/save.json`)).body).to.deep.equal({ [name]: 'saved' });
  }

  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'poppy-records-api-'));
    dir = path.join(root, 'records');
    s = await simServer('ergo-jr', { recordsDir: dir });
  });
  afterEach(async () => {
    await s.close();
    await fs.rm(root, { recursive: true, force: true });
  });

  describe('names', () => {
    const bad = [
      ['../x', '..%2Fx'],
      ['a/b (encoded)', 'a%2Fb'],
      ['a/b', 'a/b'],
      ['../../etc/passwd', '..%2F..%2Fetc%2Fpasswd'],
      ['.hidden', '.hidden'],
      ['empty', ''],
      ['-dash', '-dash'],
      ['_underscore', '_underscore'],
      ['a b', 'a%20b'],
      ['back\\slash', 'a%5Cb'],
      ['NUL', 'a%00b'],
      ['unicode', 'mouvement-%C3%A9'],
      ['65 characters', 'a'.repeat(65)],
    ] as const;
    for (const [label, segment] of bad) {
      it(`refuses the move name ${label} with 400 on every operation, and writes nothing`, async () => {
        for (const op of ['record', 'save', 'play', 'stop', 'delete'])
          expectError(await post(`/records/${segment}/${op}.json`, op === 'record' ? {} : undefined), 400);
        expectError(await get(`/records/${segment}/value.json`), 400);
        await s.advance(0.2);
        expect(await fs.readdir(root)).to.deep.equal(['records']);
        expect(await files()).to.deep.equal([]);
        expect((await get('/records/list.json')).body).to.deep.equal({ moves: [] });
        expect(s.records.isRecording(segment)).to.equal(false);
      });
    }

    it('dot segments never reach the records: the URL is resolved before routing, nothing is written', async () => {
      for (const url of [
        '/records/../x/record.json',
        '/records/%2E%2E/record.json',
        '/records/./x/../../y/save.json',
      ])
        expect((await post(url, {})).status, url).to.be.within(400, 499);
      await s.advance(0.2);
      expect(await fs.readdir(root)).to.deep.equal(['records']);
      expect(await files()).to.deep.equal([]);
    });

    it('accepts 64 characters of letters, digits, "_", "." and "-" starting with a letter or digit', async () => {
      const name = `A1_.-${'z'.repeat(59)}`;
      await recordMove(name, 0.1);
      expect(await files()).to.deep.equal([`${name}.record`]);
      await recordMove('9lives', 0.1);
      expect((await get('/records/list.json')).body).to.deep.equal({ moves: ['9lives', name] });
    });

    it('a wrong method on a records path is 405 with Allow, an unknown operation 404', async () => {
      const r = await get('/records/x/record.json');
      expectError(r, 405);
      expect(r.headers.allow).to.equal('POST');
      const l = await post('/records/list.json');
      expectError(l, 405);
      expect(l.headers.allow).to.equal('GET');
      expectError(await post('/records/x/value.json'), 405);
      expectError(await post('/records/x/frobnicate.json'), 404);
      expectError(await get('/records/a/b/c/list.json'), 404);
    });
  });

  describe('record.json', () => {
    it('records every motor with no body, {} or no "motors" key, and answers "recording"', async () => {
      for (const body of [undefined, {}, { other: 1 }]) {
        const r = await post('/records/all/record.json', body);
        expect(r.body).to.deep.equal({ all: 'recording' });
        expect(s.records.isRecording('all')).to.equal(true);
        await s.advance(0.1);
        const v = await get('/records/all/value.json');
        const first = Object.values(v.body.all as Record<string, unknown>)[0] as Record<string, unknown>;
        expect(Object.keys(first)).to.deep.equal(['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
      }
    });

    it('takes motors as an array, a comma-separated string (spaces trimmed) or alias names', async () => {
      const cases: [unknown, string[]][] = [
        [
          ['m2', 'm1'],
          ['m1', 'm2'],
        ],
        [' m3 , m6 ', ['m3', 'm6']],
        ['tip', ['m4', 'm5', 'm6']],
        [
          ['base', 'm6', 'm1'],
          ['m1', 'm2', 'm3', 'm6'],
        ],
        ['m1', ['m1']],
      ];
      for (const [motors, expected] of cases) {
        expect((await post('/records/sel/record.json', { motors })).status).to.equal(200);
        await s.advance(0.05);
        const v = await get('/records/sel/value.json');
        const frames = Object.values(v.body.sel as Record<string, Record<string, unknown>>);
        for (const f of frames) expect(Object.keys(f), JSON.stringify(motors)).to.deep.equal(expected);
      }
      // A form body works too.
      const r = await post('/records/form/record.json', 'motors=m4', {
        'content-type': 'application/x-www-form-urlencoded',
      });
      expect(r.body).to.deep.equal({ form: 'recording' });
    });

    it('an empty list is 400, a bad type 400, an unknown motor 404, and nothing starts', async () => {
      for (const motors of [[], '', ' , ', 5, null, true, { m1: 1 }, [1], ['m1', ''], ['m1', null]]) {
        expectError(await post('/records/x/record.json', { motors }), 400);
        expect(s.records.isRecording('x'), JSON.stringify(motors)).to.equal(false);
      }
      for (const motors of [['m1', 'nope'], 'm1,nope', 'nope', ['arms']]) {
        expectError(await post('/records/x/record.json', { motors }), 404);
        expect(s.records.isRecording('x')).to.equal(false);
      }
      expectError(await post('/records/x/record.json', 'not json'), 400);
      expectError(await post('/records/x/record.json', [1, 2]), 400);
      expectError(await get('/records/x/value.json'), 404);
      expect(await primitives()).to.not.include('_x_recorder');
      expect(await files()).to.deep.equal([]);
    });

    it('samples [present_position, present_speed] at 50 Hz, and value.json shows the recording live', async () => {
      await post('/records/live/record.json', { motors: ['m1'] });
      const v0 = await get('/records/live/value.json');
      expect(v0.body.length).to.equal(1);
      expect(Object.keys(v0.body.live as object)).to.deep.equal(['0']);
      await s.advance(1);
      const v1 = await get('/records/live/value.json');
      expect(v1.body.length as number).to.be.within(50, 52);
      await s.advance(1);
      const v2 = await get('/records/live/value.json');
      expect(v2.body.length as number).to.be.within(100, 102);
      const positions = v2.body.live as Record<string, { m1: [number, number] }>;
      const keys = Object.keys(positions);
      expect(keys).to.have.length(v2.body.length as number);
      for (const k of keys) {
        expect(k).to.match(/^\d+(\.\d+)?$/);
        expect(positions[k]!.m1).to.have.length(2);
      }
      const [p, speed] = positions[keys[keys.length - 1]!]!.m1;
      const m1 = s.robot.motor('m1');
      expect(p).to.be.closeTo(m1.state.presentPosition, 1);
      expect(speed).to.be.closeTo(m1.state.presentSpeed, 20);
      // Not listed until saved.
      expect((await get('/records/list.json')).body).to.deep.equal({ moves: [] });
    });

    it('recording an existing name replaces it entirely, new motor list too', async () => {
      await recordMove('again', 0.5, { motors: ['m1', 'm2'] });
      const before = (await get('/records/again/value.json')).body;
      expect(before.length as number).to.be.within(25, 27);
      await post('/records/again/record.json', { motors: 'm5' });
      await s.advance(0.2);
      const live = (await get('/records/again/value.json')).body;
      expect(live.length as number).to.be.within(10, 12);
      expect(Object.keys(Object.values(live.again as object)[0] as object)).to.deep.equal(['m5']);
      await post('/records/again/save.json');
      const saved = (await get('/records/again/value.json')).body;
      expect(Object.keys(Object.values(saved.again as object)[0] as object)).to.deep.equal(['m5']);
      expect(saved.length).to.equal(live.length);
      // Recording again while recording restarts from zero.
      await post('/records/again/record.json', { motors: 'm6' });
      await s.advance(0.3);
      await post('/records/again/record.json', { motors: 'm6' });
      expect((await get('/records/again/value.json')).body.length).to.equal(1);
    });

    it('recording a move that is playing is 409, and the replay goes on', async () => {
      await recordMove('busy', 1, { motors: ['m1'] });
      await post('/records/busy/play.json', { speed: 0.5 });
      await s.advance(0.1);
      expectError(await post('/records/busy/record.json', { motors: ['m1'] }), 409);
      expect(s.records.isPlaying('busy')).to.equal(true);
      expect(s.records.isRecording('busy')).to.equal(false);
    });
  });

  describe('save.json', () => {
    it('writes <dir>/<name>.record in the pypot format, atomically, and lists it', async () => {
      await recordMove('first', 0.4, { motors: ['m1', 'm2'] });
      expect(await files()).to.deep.equal(['first.record']);
      const doc = JSON.parse(await fs.readFile(path.join(dir, 'first.record'), 'utf8')) as {
        framerate: number;
        positions: Record<string, Record<string, number[]>>;
      };
      expect(doc.framerate).to.equal(50);
      expect(Object.keys(doc.positions)).to.have.length(
        (await get('/records/first/value.json')).body.length as number,
      );
      for (const row of Object.values(doc.positions)) expect(Object.keys(row)).to.deep.equal(['m1', 'm2']);
      expect(s.records.isRecording('first')).to.equal(false);
      expect((await get('/records/list.json')).body).to.deep.equal({ moves: ['first'] });
    });

    it('is 404 for a name neither recording nor saved, 409 for a saved move not recording', async () => {
      expectError(await post('/records/ghost/save.json'), 404);
      await recordMove('done', 0.1);
      const r = await post('/records/done/save.json');
      expectError(r, 409);
      expect(r.body.tip).to.include('record.json');
    });

    it('keeps the recording when the disk refuses it, and a later save.json retries', async () => {
      await post('/records/retry/record.json', { motors: 'm1' });
      await s.advance(0.2);
      await fs.rm(dir, { recursive: true });
      await fs.writeFile(dir, 'not a directory'); // every write into "dir" now fails
      expectError(await post('/records/retry/save.json'), 500);
      expect((await get('/records/retry/value.json')).body.length as number).to.be.within(10, 12);
      await fs.rm(dir);
      await fs.mkdir(dir);
      expect((await post('/records/retry/save.json')).body).to.deep.equal({ retry: 'saved' });
      expect(await files()).to.deep.equal(['retry.record']);
      expectError(await post('/records/retry/save.json'), 409);
    });
  });

  describe('list.json and value.json', () => {
    it('lists the saved moves sorted by name', async () => {
      for (const n of ['b', 'a', 'C', '10', '2']) await recordMove(n, 0.05);
      expect((await get('/records/list.json')).body).to.deep.equal({ moves: ['10', '2', 'C', 'a', 'b'] });
    });

    it('value.json answers {<name>: {<t>: {<motor>: [pos, speed]}}, length}; 404 for an unknown move', async () => {
      await recordMove('shape', 0.2, { motors: 'm1,m2' });
      const v = await get('/records/shape/value.json');
      expect(Object.keys(v.body)).to.deep.equal(['shape', 'length']);
      expect(v.body.length).to.equal(Object.keys(v.body.shape as object).length);
      expectError(await get('/records/nothing/value.json'), 404);
    });

    it('a move named "length" answers its trajectory under its name', async () => {
      await recordMove('length', 0.1, { motors: 'm1' });
      const v = await get('/records/length/value.json');
      expect(Object.keys(v.body)).to.deep.equal(['length']);
      expect(v.body.length).to.be.an('object');
    });
  });

  describe('play.json', () => {
    it('speed is a number or numeric string, default 1.0; 0 or not finite is 400', async () => {
      await recordMove('p', 0.3, { motors: 'm1' });
      for (const body of [undefined, {}, { speed: 1 }, { speed: '2' }, { speed: -1.5 }, { speed: ' 0.5 ' }]) {
        const r = await post('/records/p/play.json', body);
        expect(r.body, JSON.stringify(body)).to.deep.equal({ p: 'started replay' });
        const speed = body && 'speed' in body ? Number(body.speed) : 1;
        expect(s.records.replay('p')!.plan.speed).to.equal(speed);
      }
      const form = await post('/records/p/play.json', 'speed=3', {
        'content-type': 'application/x-www-form-urlencoded',
      });
      expect(form.status).to.equal(200);
      expect(s.records.replay('p')!.plan.speed).to.equal(3);
      for (const speed of [0, '0', -0, 'abc', '', null, true, [1], '1e999', 'Infinity', 'NaN', {}])
        expectError(await post('/records/p/play.json', { speed }), 400);
      expectError(await post('/records/p/play.json', 'nope'), 400);
      expect(s.records.replay('p')!.plan.speed).to.equal(3);
    });

    it('is 404 for an unknown move and 409 for a move being recorded', async () => {
      expectError(await post('/records/none/play.json', { speed: 1 }), 404);
      await post('/records/rec/record.json');
      expectError(await post('/records/rec/play.json', { speed: 1 }), 409);
      expect(s.records.isRecording('rec')).to.equal(true);
      expect(s.records.isPlaying('rec')).to.equal(false);
    });

    it('makes the motors of the move stiff and leaves the others alone', async () => {
      await recordMove('stiff', 0.3, { motors: ['m1', 'm4'] });
      for (const m of s.robot.motors) expect(m.commands.compliant).to.equal(true);
      await post('/records/stiff/play.json');
      await s.advance(0.1);
      const compliant = (await get('/motors/registers/compliant/list.json')).body.compliant;
      expect(compliant).to.deep.equal({ m1: false, m2: true, m3: true, m4: false, m5: true, m6: true });
    });

    it('playing a move that plays restarts it', async () => {
      await recordMove('re', 1, { motors: ['m1'] });
      await post('/records/re/play.json');
      await s.advance(0.5);
      const first = s.records.replay('re')!.timing.playStart!;
      await post('/records/re/play.json', { speed: 2 });
      await s.advance(0.1);
      const again = s.records.replay('re')!;
      expect(again.plan.speed).to.equal(2);
      expect(again.timing.playStart!).to.be.greaterThan(first);
      expect(again.running).to.equal(true);
      expect((await running()).filter((p) => p === '_re_player')).to.have.length(1);
    });

    it('a move with a motor this robot does not have is 409 and nothing moves', async () => {
      await fs.writeFile(
        path.join(dir, 'torso.record'),
        JSON.stringify({ framerate: 50, positions: { '0': { head_z: [0, 0] }, '0.02': { head_z: [1, 0] } } }),
      );
      const r = await post('/records/torso/play.json');
      expectError(r, 409);
      expect(r.body.details).to.include('head_z');
      expect(await primitives()).to.not.include('_torso_player');
    });
  });

  describe('stop.json', () => {
    it('stops a replay, is idempotent, and is 404 for an unknown move', async () => {
      await recordMove('st', 1, { motors: ['m1'] });
      expect((await post('/records/st/stop.json')).body).to.deep.equal({ st: 'stopped' });
      await post('/records/st/play.json');
      await s.advance(0.3);
      expect(s.records.isPlaying('st')).to.equal(true);
      expect((await post('/records/st/stop.json')).body).to.deep.equal({ st: 'stopped' });
      expect(s.records.isPlaying('st')).to.equal(false);
      expect((await post('/records/st/stop.json')).body).to.deep.equal({ st: 'stopped' });
      expectError(await post('/records/unknown/stop.json'), 404);
      // The motor holds where the replay left it.
      const goal = s.robot.motor('m1').commands.goalPosition;
      await s.advance(0.5);
      expect(s.robot.motor('m1').commands.goalPosition).to.equal(goal);
    });
  });

  describe('delete.json', () => {
    it('deletes a saved move from disk and memory and answers "deleted"; unknown is 404', async () => {
      await recordMove('gone', 0.2);
      await post('/records/gone/play.json');
      await s.advance(0.05);
      expect(await primitives()).to.include.members(['_gone_recorder', '_gone_player']);
      expect((await post('/records/gone/delete.json')).body).to.deep.equal({ gone: 'deleted' });
      expect(await files()).to.deep.equal([]);
      expect((await get('/records/list.json')).body).to.deep.equal({ moves: [] });
      expectError(await get('/records/gone/value.json'), 404);
      expectError(await post('/records/gone/play.json'), 404);
      expectError(await post('/records/gone/stop.json'), 404);
      expectError(await post('/records/gone/save.json'), 404);
      expectError(await post('/records/gone/delete.json'), 404);
      expect(await primitives()).to.not.include.members(['_gone_recorder', '_gone_player']);
    });

    it('delete during replay stops it; the motors hold where they are', async () => {
      await post('/records/dr/record.json', { motors: ['m1'] });
      await post('/sim/motors/m1/hand.json', { position: 60, duration: 2 });
      await s.advance(2);
      await post('/records/dr/save.json');
      await post('/records/dr/play.json', { speed: 1 });
      await s.advance(1.5); // travel back to the first frame, then part of the replay
      expect(s.records.isPlaying('dr')).to.equal(true);
      expect(await running()).to.include('_dr_player');
      expect((await post('/records/dr/delete.json')).body).to.deep.equal({ dr: 'deleted' });
      expect(s.records.isPlaying('dr')).to.equal(false);
      expect(await running()).to.not.include('_dr_player');
      expect(await primitives()).to.not.include('_dr_player');
      const held = s.robot.motor('m1').state.presentPosition;
      await s.advance(1);
      expect(s.robot.motor('m1').state.presentPosition).to.be.closeTo(held, 3);
      expect(s.robot.motor('m1').commands.compliant).to.equal(false);
      expect(await files()).to.deep.equal([]);
    });

    it('delete during recording stops it and nothing is saved', async () => {
      await post('/records/dx/record.json');
      await s.advance(0.2);
      expect(await running()).to.include('_dx_recorder');
      expect((await post('/records/dx/delete.json')).body).to.deep.equal({ dx: 'deleted' });
      expect(s.records.isRecording('dx')).to.equal(false);
      expect(await primitives()).to.not.include('_dx_recorder');
      expectError(await post('/records/dx/save.json'), 404);
      expectError(await get('/records/dx/value.json'), 404);
      expect(await files()).to.deep.equal([]);
    });
  });

  describe('recorder and player primitives', () => {
    it('_<name>_recorder and _<name>_player are listed once used, running while active', async () => {
      expect((await primitives()).filter((p) => p.startsWith('_'))).to.deep.equal([]);
      await post('/records/pr/record.json', { motors: 'm1' });
      expect(await primitives()).to.include('_pr_recorder');
      expect(await running()).to.include('_pr_recorder');
      await s.advance(0.5);
      await post('/records/pr/save.json');
      expect(await primitives()).to.include('_pr_recorder');
      expect(await running()).to.not.include('_pr_recorder');
      await post('/records/pr/play.json');
      expect(await running()).to.include('_pr_player');
      await s.advance(3);
      expect(await running()).to.not.include('_pr_player');
      expect(await primitives()).to.include('_pr_player');
      const robot = (await get('/robot.json')).body.primitives as { primitive: string; running: boolean }[];
      expect(robot.find((p) => p.primitive === '_pr_player')).to.include({ running: false });
    });
    it('a recording stopped through the primitives API is kept and saved by save.json', async () => {
      await post('/records/ps/record.json', { motors: 'm1' });
      await s.advance(0.3);
      expect((await get('/primitives/_ps_recorder/stop.json')).status).to.equal(200);
      const length = (await get('/records/ps/value.json')).body.length as number;
      await s.advance(0.3);
      expect((await get('/records/ps/value.json')).body.length).to.equal(length);
      expect((await post('/records/ps/save.json')).body).to.deep.equal({ ps: 'saved' });
      expect((await get('/records/ps/value.json')).body.length).to.equal(length);
      expectError(await post('/records/ps/save.json'), 409);
    });

    it('pausing the player freezes the replay; resuming continues it', async () => {
      await post('/records/pp/record.json', { motors: 'm1' });
      await post('/sim/motors/m1/hand.json', { position: 50, duration: 2 });
      await s.advance(2);
      await post('/records/pp/save.json');
      await post('/records/pp/play.json', { speed: -1 }); // starts where the recording ended: no travel
      await s.advance(1);
      expect((await get('/primitives/_pp_player/pause.json')).status).to.equal(200);
      await s.advance(0.04); // the frame posted before the pause still reaches the motor
      const goal = s.robot.motor('m1').commands.goalPosition;
      await s.advance(1);
      expect(s.robot.motor('m1').commands.goalPosition).to.be.closeTo(goal, 0.5);
      expect(await running()).to.include('_pp_player');
      expect((await get('/primitives/_pp_player/resume.json')).status).to.equal(200);
      await s.advance(0.5);
      expect(s.records.isPlaying('pp')).to.equal(true);
      await s.advance(1);
      expect(s.records.isPlaying('pp')).to.equal(false);
      const t = s.records.replay('pp')!.timing;
      expect(t.end! - t.playStart!).to.be.closeTo(3.04, 0.1); // 2 s of replay + 1.04 s paused
    });
  });

  describe('files dropped in by hand', () => {
    it('a corrupt file is skipped and reported by name; the others stay usable; it can be deleted', async () => {
      await recordMove('good', 0.2, { motors: 'm1' });
      await fs.writeFile(path.join(dir, 'broken.record'), '{"framerate": 50, "positions": {"0": {"m1": [1, ');
      await fs.writeFile(path.join(dir, 'empty.record'), '');
      await fs.writeFile(path.join(dir, 'notes.txt'), 'not a move');
      expect((await get('/records/list.json')).body).to.deep.equal({ moves: ['good'] });
      const v = await get('/records/broken/value.json');
      expectError(v, 409);
      expect(v.body.error).to.include('broken.record');
      expect(v.body.details).to.include('not valid JSON');
      expectError(await post('/records/broken/play.json'), 409);
      expectError(await post('/records/empty/play.json'), 409);
      expect((await get('/records/good/value.json')).status).to.equal(200);
      expect((await post('/records/broken/delete.json')).body).to.deep.equal({ broken: 'deleted' });
      expect(await files()).to.deep.equal(['empty.record', 'good.record', 'notes.txt']);
      // Recording under a corrupt file's name replaces it.
      await recordMove('empty', 0.1, { motors: 'm2' });
      expect((await get('/records/list.json')).body).to.deep.equal({ moves: ['empty', 'good'] });
    });

    it('a server starts with corrupt files in its records directory and warns about them', async () => {
      await s.close();
      await fs.writeFile(path.join(dir, 'bad.record'), '[1, 2, 3]');
      await fs.writeFile(
        path.join(dir, 'ok.record'),
        '{"framerate": 50, "positions": {"0": {"m1": [1, 0]}}}',
      );
      const warnings: string[] = [];
      s = await simServer('ergo-jr', {
        recordsDir: dir,
        logger: { info() {}, warn: (m) => warnings.push(m), error: (m) => warnings.push(m) },
      });
      expect(warnings.join('\n')).to.include('bad.record');
      expect((await get('/records/list.json')).body).to.deep.equal({ moves: ['ok'] });
    });
  });
});
