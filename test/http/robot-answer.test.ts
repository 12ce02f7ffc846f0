/** /robot.json is written as text and cached per control tick and per API change: it must equal a fresh snapshot. */
import { expect } from 'chai';
import { motorSnapshot } from '../../src/robot/motor-registers.ts';
import { json, simServer, type TestServer } from '../helpers.ts';

describe('/robot.json text (src/http/robot-answer.ts)', function () {
  this.timeout(30000);
  let s: TestServer;
  beforeEach(async () => {
    s = await simServer('torso', { primitivesDir: 'examples/primitives' });
  });
  afterEach(() => s.close());

  const fresh = () =>
    JSON.stringify({ motors: s.robot.motors.map(motorSnapshot), primitives: s.primitives.listing() });

  it('is exactly JSON.stringify of a fresh snapshot, tick after tick', async () => {
    await s.post('/motors/goto.json', { motors: ['head_z', 'l_elbow_y'], positions: [20, -30], duration: 1 });
    for (let i = 0; i < 5; i++) {
      await s.advance(0.13);
      expect((await s.get('/robot.json')).body).to.equal(fresh());
    }
  });

  it('shows a change made through the API at once, without waiting for a tick', async () => {
    const before = json(await s.get('/robot.json')) as { motors: { name: string; compliant: boolean }[] };
    expect(before.motors.find((m) => m.name === 'head_z')!.compliant).to.equal(true);
    await s.post('/motors/head_z/registers/compliant/value.json', false);
    await s.post('/primitives/sinus/properties/amplitude/value.json', 5);
    const started = await s.get('/primitives/sinus/start.json');
    expect(started.statusCode).to.equal(200);
    const after = json(await s.get('/robot.json')) as {
      motors: { name: string; compliant: boolean }[];
      primitives: { primitive: string; running: boolean }[];
    };
    expect(after.motors.find((m) => m.name === 'head_z')!.compliant).to.equal(false);
    expect(after.primitives.find((p) => p.primitive === 'sinus')!.running).to.equal(true);
    expect((await s.get('/robot.json')).body).to.equal(fresh());
  });
});
