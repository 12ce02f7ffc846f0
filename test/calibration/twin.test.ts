/** The twin runs with a calibration (--calibration): GET /calibration.json shows it, its servos follow it. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { defaultCalibration } from '../../src/calibration/defaults.ts';
import { saveCalibration } from '../../src/config/calibration.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { json, simServer, value } from '../helpers.ts';

describe('the twin with a calibration (--calibration)', function () {
  this.timeout(30000);
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'calib-twin-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('says {loaded: false} without one', async () => {
    const twin = await simServer('ergo-jr');
    try {
      const res = await twin.get('/calibration.json');
      expect(res.statusCode).to.equal(200);
      expect(json(res)).to.deep.equal({ loaded: false });
    } finally {
      await twin.close();
    }
  });

  it('shows the file it loaded, and its servos read the joint shifted by the offset', async () => {
    const config = await loadRobotConfig('ergo-jr');
    const cal = defaultCalibration(config, '/dev/ttyACM0', '2026-12-01T00:00:00Z');
    cal.motors.m2!.offset = { value: 3, sigma: 0.1 };
    const file = path.join(dir, 'ergo.json');
    await saveCalibration(file, cal);
    const plain = await simServer('ergo-jr');
    const twin = await simServer('ergo-jr', { calibration: file });
    try {
      const answer = json(await twin.get('/calibration.json'));
      expect(answer.loaded).to.equal(true);
      expect(answer.file).to.equal(file);
      expect((answer.calibration as typeof cal).motors.m2!.offset.value).to.equal(3);
      const a = (await value(plain, 'm2', 'present_position')) as number;
      const b = (await value(twin, 'm2', 'present_position')) as number;
      // m2 is indirect in the Ergo Jr's config: the user frame turns the raw offset's sign.
      expect(Math.abs(b - a)).to.be.closeTo(3, 0.3);
    } finally {
      await plain.close();
      await twin.close();
    }
  });

  it("refuses another robot's calibration at start, one line naming the problem", async () => {
    const torso = defaultCalibration(await loadRobotConfig('torso'));
    const file = path.join(dir, 'torso.json');
    await writeFile(file, JSON.stringify(torso));
    let err: unknown;
    await simServer('ergo-jr', { calibration: file }).catch((e: unknown) => (err = e));
    expect(err).to.be.instanceOf(ConfigError);
    expect((err as Error).message).to.equal(`${file}: robot: calibration of "torso", not of "ergo-jr"`);
  });
});
