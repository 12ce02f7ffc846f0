/** The calibration file: a valid one round-trips through the atomic write; a bad one is refused in one line. */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { defaultCalibration } from '../../src/calibration/defaults.ts';
import {
  loadCalibration,
  parseCalibration,
  saveCalibration,
  servoParamsOf,
} from '../../src/config/calibration.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { ConfigError } from '../../src/core/errors.ts';

describe('calibration file', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'calib-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes atomically and loads back what it wrote, servo parameters by id', async () => {
    const config = await loadRobotConfig('ergo-jr');
    const cal = defaultCalibration(config, '/dev/ttyACM0', '2026-12-01T10:00:00Z');
    cal.motors.m1!.offset = { value: 2.5, sigma: 0.05 };
    const file = path.join(dir, 'ergo.json');
    await saveCalibration(file, cal);
    expect((await readdir(dir)).filter((f) => f.endsWith('.tmp'))).to.deep.equal([]);
    const back = await loadCalibration(file, config);
    expect(back).to.deep.equal(cal);
    expect(servoParamsOf(back).get(1)!.offsetDeg).to.equal(2.5);
  });

  /** One broken thing at a time: the path set (or deleted, undefined) and what the one-line message must say. */
  const cases: [string, string[], unknown, RegExp][] = [
    ['another robot', ['robot'], 'torso', /robot: calibration of "torso", not of "ergo-jr"/],
    ['an unknown motor', ['motors', 'm9'], 'M1', /motors\.m9: unknown motor/],
    ['a wrong id', ['motors', 'm2', 'id'], 7, /motors\.m2\.id: is 7/],
    ['a wrong type', ['motors', 'm1', 'offset', 'value'], '3', /motors\.m1\.offset\.value/],
    ['a missing field', ['motors', 'm3', 'armature'], undefined, /motors\.m3\.armature/],
    ['a missing bus', ['bus'], undefined, /bus/],
    ['an unknown field', ['extra'], 1, /\(top level\)/],
  ];
  for (const [what, at, value, message] of cases)
    it(`refuses ${what} with one line naming the problem`, async () => {
      const config = await loadRobotConfig('ergo-jr');
      const cal = structuredClone(defaultCalibration(config)) as unknown as Record<string, unknown>;
      let node = cal;
      for (const key of at.slice(0, -1)) node = node[key] as Record<string, unknown>;
      if (value === undefined) delete node[at.at(-1)!];
      else node[at.at(-1)!] = value === 'M1' ? structuredClone(cal.motors as object)['m1' as never] : value;
      let err: unknown;
      try {
        parseCalibration(cal, config, 'cal.json');
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(ConfigError);
      expect((err as Error).message).to.match(message);
      expect((err as Error).message).to.match(/^cal\.json: /);
      expect((err as Error).message).not.to.contain('\n');
    });

  it('refuses a file that is not JSON, naming the file', async () => {
    const config = await loadRobotConfig('ergo-jr');
    const file = path.join(dir, 'bad.json');
    await writeFile(file, '{ nope');
    let err: unknown;
    await loadCalibration(file, config).catch((e: unknown) => (err = e));
    expect((err as Error).message).to.match(/bad\.json: \(file\): not valid JSON/);
  });
});
