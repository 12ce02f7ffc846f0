/**
 * The real bus's own routes, served by the REST server on the real backend with its bus side in this process on the
 * in-memory binding (no socat): /bus/health.json's read mode and per-motor error conditions, and
 * POST /bus/motors/<motor>/reboot.json (2.0 only).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { emulateBus } from '../../src/emulator/emulator.ts';
import type { Faults } from '../../src/emulator/bus.ts';
import { memoryBinding } from '../../src/emulator/memory-binding.ts';
import { inProcessBus } from '../../src/real/bus-host.ts';
import { type RobotServer, createRobotServer } from '../../src/server.ts';
import { until } from '../helpers.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'poppy-bus-routes-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

async function serve(
  robot: string,
  faults: Partial<Faults> = {},
): Promise<{
  server: RobotServer;
  emulated: Awaited<ReturnType<typeof emulateBus>>;
  close(): Promise<void>;
}> {
  const emulated = await emulateBus({ robot, speed: 'manual', faults });
  const server = await createRobotServer({
    backend: 'real',
    robot,
    real: { serial: '/dev/mem0', busHost: inProcessBus(memoryBinding({ '/dev/mem0': emulated.bus })) },
    recordsDir: path.join(tmp, `${robot}-${Date.now()}`),
  });
  return {
    server,
    emulated,
    async close() {
      await server.close();
      await emulated.close();
    },
  };
}

interface Health {
  read_mode: string;
  motors: { name: string; id: number; online: boolean; errors: string[]; read: string }[];
}

describe('the real bus routes (in-memory bus)', function () {
  this.timeout(20000);

  it('health says how each motor is read, and what its servo reports; reboot brings a servo in alert back', async () => {
    const { server, emulated, close } = await serve('ergo-jr', { nosync: new Set([6]) });
    try {
      const get = async () =>
        (await server.app.inject({ method: 'GET', url: '/bus/health.json' })).json() as Health;
      const health = await get();
      expect(health.read_mode).to.equal('sync');
      expect(health.motors.map((m) => m.read)).to.deep.equal([
        'sync',
        'sync',
        'sync',
        'sync',
        'sync',
        'single',
      ]);
      emulated.bus.faults.errorBits.set(3, 0x80);
      const m3 = async () => (await get()).motors.find((m) => m.name === 'm3')!;
      await until('m3 to report its alert', async () =>
        (await m3()).errors.includes('hardware_alert') ? true : undefined,
      );
      expect((await m3()).online).to.equal(true);
      const res = await server.app.inject({ method: 'POST', url: '/bus/motors/m3/reboot.json' });
      expect(res.statusCode, res.body).to.equal(200);
      expect(res.json()).to.deep.equal({ motor: 'm3', id: 3, rebooted: true });
      await until('m3 to report no error', async () => ((await m3()).errors.length === 0 ? true : undefined));
      const unknown = await server.app.inject({ method: 'POST', url: '/bus/motors/nope/reboot.json' });
      expect(unknown.statusCode, unknown.body).to.equal(404);
    } finally {
      await close();
    }
  });

  it('reboot on protocol 1.0 is a 400 that says why', async () => {
    const { server, close } = await serve('torso');
    try {
      const res = await server.app.inject({ method: 'POST', url: '/bus/motors/abs_z/reboot.json' });
      expect(res.statusCode).to.equal(400);
      expect(JSON.stringify(res.json())).to.match(/protocol 1\.0, which has no reboot instruction/);
      expect(
        ((await server.app.inject({ method: 'GET', url: '/bus/health.json' })).json() as Health).read_mode,
      ).to.equal('bulk');
    } finally {
      await close();
    }
  });
});
