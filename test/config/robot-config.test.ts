/** Robot configs: the three built-in ones validate and match docs/reference/robots.md 1.1, 2.1, 3.1; a config error names its field. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import {
  BUILTIN_ROBOTS,
  expandAlias,
  loadRobotConfig,
  parseRobotConfig,
  robotConfigPath,
} from '../../src/config/robot-config.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { jointStopsOf } from '../../src/sim/build-world.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';
import { ROBOTS } from '../http/facts.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SOURCE = '/configs/test-robot.json';

/** A small valid config to break one field at a time. */
function base(): Record<string, unknown> & {
  motors: Record<string, unknown>[];
  aliases: Record<string, string[]>;
  chains: Record<string, Record<string, unknown>>;
} {
  return {
    name: 'test',
    urdf: 'test.urdf',
    bus: { protocol: 1 },
    motors: [
      { name: 'a', id: 1, model: 'MX-28', orientation: 'direct', offset: 0, angleLimit: [-90, 90] },
      { name: 'b', id: 2, model: 'AX-12', orientation: 'indirect', offset: 10, angleLimit: [-45, 45] },
      { name: 'c', id: 3, model: 'XL-320', orientation: 'direct', offset: 0, angleLimit: [-150, 150] },
    ],
    aliases: { ab: ['a', 'b'], all: ['ab', 'c'] },
    chains: { arm: { motors: ['a', 'b'], endLink: 'tip_link', tip: [0, 0, 0.1] } },
  };
}

function configError(data: unknown): ConfigError {
  try {
    parseRobotConfig(data, SOURCE);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return err as ConfigError;
  }
  expect.fail('the config was accepted');
}

describe('robot configs', () => {
  for (const robot of ROBOTS) {
    it(`${robot.name}: validates and matches docs/reference/robots.md (order, ids, models, aliases)`, async () => {
      const cfg = await loadRobotConfig(robot.name);
      expect(cfg.source).to.equal(path.join(ROOT, 'robots', `${robot.name}.json`));
      expect(cfg.urdfPath).to.equal(path.join(ROOT, 'urdf', `${robot.name}.urdf`));
      expect(cfg.motors.map((m) => m.name)).to.deep.equal(robot.motors.map((f) => f.name));
      expect(cfg.motors.map((m) => m.id)).to.deep.equal(robot.motors.map((f) => f.id));
      expect(cfg.motors.map((m) => m.model)).to.deep.equal(robot.motors.map((f) => f.model));
      expect(Object.keys(cfg.aliases)).to.deep.equal(Object.keys(robot.aliases));
      for (const [alias, motors] of Object.entries(robot.aliases))
        expect(expandAlias(cfg, alias), alias).to.deep.equal(motors);
      // user limits = raw limits x orientation - offset, in the order of docs/reference/robots.md 1.1, 2.1, 3.1
      for (const m of cfg.motors) {
        const f = robot.motors.find((x) => x.name === m.name)!;
        const s = m.orientation === 'direct' ? 1 : -1;
        expect([m.angleLimit[0] * s - m.offset, m.angleLimit[1] * s - m.offset], m.name).to.deep.equal([
          f.lower,
          f.upper,
        ]);
      }
    });
  }

  it('robot-specific settings: Ergo Jr start-up, protocol and camera; Torso chains; Humanoid safe torso', async () => {
    const ergo = await loadRobotConfig('ergo-jr');
    expect(ergo.bus.protocol).to.equal(2);
    expect(ergo.startup.pid).to.deep.equal([4, 2, 0]);
    expect(ergo.startup.torqueLimit).to.equal(70);
    expect(ergo.startup.led).to.equal('off');
    expect(ergo.camera?.resolution).to.deep.equal([640, 480]);
    expect(ergo.markerDetector).to.equal(true);
    const torso = await loadRobotConfig('torso');
    expect(torso.bus.protocol).to.equal(1);
    expect(Object.keys(torso.chains)).to.deep.equal(['l_arm_chain', 'r_arm_chain']);
    expect(torso.markerDetector).to.equal(false);
    const humanoid = await loadRobotConfig('humanoid');
    expect(humanoid.startup.safeCompliant).to.deep.equal(['abs_y', 'abs_x', 'abs_z', 'bust_y', 'bust_x']);
    expect(Object.keys(humanoid.chains)).to.deep.equal([]);
    for (const cfg of [ergo, torso, humanoid]) expect(cfg.primitiveCombine).to.equal('sum');
  });

  it('built-in names resolve to robots/<name>.json; anything else is a path', () => {
    expect([...BUILTIN_ROBOTS]).to.deep.equal(['ergo-jr', 'torso', 'humanoid']);
    expect(robotConfigPath('torso')).to.equal(path.join(ROOT, 'robots/torso.json'));
    expect(robotConfigPath('/x/my.json')).to.equal('/x/my.json');
  });

  it('the small test config is valid (so each error below comes from the one broken field)', () => {
    const cfg = parseRobotConfig(base(), SOURCE);
    expect(cfg.urdfPath).to.equal('/configs/test.urdf');
    expect(expandAlias(cfg, 'all')).to.deep.equal(['a', 'b', 'c']);
    expect(cfg.chains.arm!.passive).to.deep.equal([]);
  });

  describe('errors name the file and the field', () => {
    const cases: [string, (c: ReturnType<typeof base>) => void, string, RegExp][] = [
      ['missing motor id', (c) => delete c.motors[1]!.id, 'motors.1.id', /number/],
      ['duplicate id', (c) => (c.motors[2]!.id = 1), 'motors.2.id', /duplicate motor id 1/],
      ['duplicate name', (c) => (c.motors[2]!.name = 'a'), 'motors.2.name', /duplicate motor name "a"/],
      ['bad model', (c) => (c.motors[0]!.model = 'MX-999'), 'motors.0.model', /MX-28/],
      ['bad orientation', (c) => (c.motors[0]!.orientation = 'sideways'), 'motors.0.orientation', /direct/],
      ['inverted limits', (c) => (c.motors[1]!.angleLimit = [45, -45]), 'motors.1.angleLimit', /lower/],
      ['id out of range', (c) => (c.motors[0]!.id = 300), 'motors.0.id', /252/],
      ['unknown motor key', (c) => (c.motors[0]!.speed = 3), 'motors.0', /speed/],
      ['unknown alias member', (c) => (c.aliases.ab = ['a', 'zz']), 'aliases.ab.1', /"zz"/],
      [
        'alias member "constructor"',
        (c) => (c.aliases.ab = ['a', 'constructor']),
        'aliases.ab.1',
        /constructor/,
      ],
      ['alias named as a motor', (c) => (c.aliases.a = ['b']), 'aliases.a', /also a motor/],
      ['empty alias', (c) => (c.aliases.none = []), 'aliases.none', /1/],
      ['unknown chain motor', (c) => (c.chains.arm!.motors = ['a', 'q']), 'chains.arm.motors.1', /"q"/],
      ['unknown passive motor', (c) => (c.chains.arm!.passive = ['w']), 'chains.arm.passive.0', /"w"/],
      ['bad protocol', (c) => (c.bus = { protocol: 3 }), 'bus.protocol', /./],
      ['no motors', (c) => (c.motors = []), 'motors', /./],
      ['unknown top-level key', (c) => (c.extra = 1), '(top level)', /extra/],
      ['torque limit over 100', (c) => (c.startup = { torqueLimit: 150 }), 'startup.torqueLimit', /100/],
      ['pose of an unknown motor', (c) => (c.startup = { pose: { zz: 3 } }), 'startup.pose.zz', /"zz"/],
      [
        'inverted joint stops',
        (c) => (c.world = { jointStops: { a: [20, -20] } }),
        'world.jointStops.a',
        /lower/,
      ],
      [
        'a joint stop past 180',
        (c) => (c.world = { jointStops: { a: [null, 200] } }),
        'world.jointStops.a.1',
        /180/,
      ],
      [
        'unknown self-collision',
        (c) => (c.world = { selfCollision: 'none' }),
        'world.selfCollision',
        /beyond/,
      ],
    ];
    for (const [what, edit, field, problem] of cases) {
      it(what, () => {
        const c = base();
        edit(c);
        const err = configError(c);
        expect(err.field).to.equal(field);
        expect(err.file).to.equal(SOURCE);
        expect(err.message).to.match(problem);
        expect(err.message.startsWith(`${SOURCE}: ${field}: `), err.message).to.equal(true);
        expect(err.message).to.not.include('\n');
      });
    }

    it('an alias cycle', () => {
      const c = base();
      c.aliases = { x: ['a', 'y'], y: ['b', 'x'] };
      const err = configError(c);
      expect(err.field).to.match(/^aliases\.[xy]$/);
      expect(err.message).to.include('cycle');
      expect(err.file).to.equal(SOURCE);
    });
  });

  it('loadRobotConfig: an unknown robot name, a missing file and broken JSON are ConfigErrors', async () => {
    const fails = async (robot: string) => {
      try {
        await loadRobotConfig(robot);
      } catch (err) {
        expect(err).to.be.instanceOf(ConfigError);
        return err as ConfigError;
      }
      expect.fail(`${robot} was accepted`);
    };
    const unknown = await fails('robby');
    expect(unknown.field).to.equal('--robot');
    expect(unknown.message).to.match(/robby.*ergo-jr, torso, humanoid/);
    const missing = await fails('/nowhere/robot.json');
    expect(missing.message).to.include('/nowhere/robot.json');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'poppy-config-'));
    try {
      const broken = path.join(dir, 'broken.json');
      await writeFile(broken, '{"name": "x",');
      const bad = await fails(broken);
      expect(bad.file).to.equal(broken);
      expect(bad.message).to.match(/not valid JSON/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const notConfig = await fails(path.join(ROOT, 'package.json'));
    expect(notConfig.file).to.equal(path.join(ROOT, 'package.json'));
  });

  it('a joint stop names a joint of the URDF, and is read in radians', async () => {
    const config = await loadRobotConfig('torso');
    const urdf = await loadUrdf(config.urdfPath);
    const stops = (jointStops: Record<string, [number | null, number | null]>) =>
      jointStopsOf({ ...config, world: { ...config.world, jointStops } }, urdf);
    expect(stops({ bust_y: [-90, null] }).get('bust_y')).to.deep.equal([-Math.PI / 2, null]);
    expect(() => stops({ knee: [-10, 10] }))
      .to.throw(ConfigError, /world\.jointStops\.knee: no joint "knee" in .*torso\.urdf/)
      .with.property('field', 'world.jointStops.knee');
  });
});
