/** Records that tell the truth: unreadable move files are listed with their reason; primitives-API recordings are kept. */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { json, simServer, type TestServer } from '../helpers.ts';

describe('records: honest answers', function () {
  this.timeout(30000);
  let dir: string;
  let s: TestServer;

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'poppy-honest-'));
    await fs.writeFile(path.join(dir, 'broken.record'), '{"framerate": 50, "positions": ');
    s = await simServer('ergo-jr', { recordsDir: dir });
  });
  afterEach(async () => {
    await s.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('GET /records/problems.json lists a move file that cannot be read, with the reason; list.json leaves it out', async () => {
    expect(json(await s.get('/records/list.json'))).to.deep.equal({ moves: [] });
    const { problems } = json(await s.get('/records/problems.json')) as {
      problems: { file: string; reason: string }[];
    };
    expect(problems.map((p) => p.file)).to.deep.equal(['broken.record']);
    expect(problems[0]!.reason).to.be.a('string').and.not.equal('');
    expect((await s.get('/records/broken/value.json')).statusCode).to.equal(409);
  });

  it('a recording restarted through /primitives/_<move>_recorder/start.json is kept, then saved by save.json', async () => {
    expect((await s.post('/records/wave/record.json', { motors: ['m1'] })).statusCode).to.equal(200);
    await s.advance(0.2);
    expect((await s.post('/records/wave/save.json')).statusCode).to.equal(200);
    const first = (json(await s.get('/records/wave/value.json')).length as number) ?? 0;
    // Recorded again through the primitives API, for longer, and stopped there.
    expect(json(await s.get('/primitives/_wave_recorder/start.json'))).to.deep.equal({
      _wave_recorder: 'started',
    });
    await s.advance(0.6);
    expect(json(await s.get('/primitives/_wave_recorder/stop.json'))).to.deep.equal({
      _wave_recorder: 'stopped',
    });
    const kept = json(await s.get('/records/wave/value.json')).length as number;
    expect(kept, 'the new recording, not the saved one').to.be.above(first + 10);
    expect(json(await s.post('/records/wave/save.json'))).to.deep.equal({ wave: 'saved' });
    const saved = JSON.parse(await fs.readFile(path.join(dir, 'wave.record'), 'utf8')) as {
      positions: Record<string, unknown>;
    };
    expect(Object.keys(saved.positions)).to.have.lengthOf(kept);
  });
});
