/**
 * The run's rig on the real backend (src/calibration/real-rig.ts), its bus side in this process on the in-memory
 * binding: each sample's read comes after its writes, in the cycle that sends them, and no two samples share a
 * cycle; a settle is its count of cycles; a stop ends a wait at once; a loop rate that is not a whole number of
 * cycles per sample gets no such rig.
 */
import { expect } from 'chai';
import { cycleRig, perCycleLog } from '../../src/calibration/real-rig.ts';
import { type MotorLog, SAMPLE } from '../../src/calibration/run.ts';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { emulateBus } from '../../src/emulator/emulator.ts';
import { memoryBinding } from '../../src/emulator/memory-binding.ts';
import { RealBackend } from '../../src/real/backend.ts';
import { inProcessBus } from '../../src/real/bus-host.ts';

describe("a calibration run's rig on the real backend", function () {
  this.timeout(30000);

  it('paces the samples by the bus cycles, each read after its writes', async () => {
    const config = await loadRobotConfig('ergo-jr');
    const emulated = await emulateBus({ robot: 'ergo-jr', speed: 'manual' });
    const real = new RealBackend({
      config,
      serial: '/dev/mem0',
      busHost: inProcessBus(memoryBinding({ '/dev/mem0': emulated.bus })),
    });
    try {
      await real.open();
      real.start();
      expect(cycleRig(real, 30, 3, new AbortController().signal), '0.6 cycle a sample').to.equal(undefined);
      const stop = new AbortController();
      const paced = cycleRig(real, 50, 3, stop.signal)!;
      const rig = paced.rig;
      // As a run begins: every joint told its pose, a settle, every joint read (no sample of the log).
      await rig.bus.write('goal_position', new Map([[3, 390]]));
      await rig.wait(0.3);
      await rig.bus.read([1, 2, 3, 4, 5, 6], 'present_position');
      await rig.wait(SAMPLE);
      const from = real.cycles;
      for (let k = 0; k < 10; k++) {
        const goal = 400 + 10 * k;
        await rig.bus.write('goal_position', new Map([[3, goal]]));
        expect((await rig.bus.read([3], 'goal_position')).get(3), `sample ${k}`).to.equal(goal);
        await rig.wait(SAMPLE);
      }
      const samples = real.cycles - from;
      expect(samples, 'a cycle at least per sample').to.be.at.least(10);
      // Rebuilt on the cycles that sent each sample's writes: every command in order, a cycle apart at least.
      const cmd = (goal: number) => ({ goal, torqueOn: true, torqueLimit: 1023 });
      const nominal: MotorLog = {
        motor: 'm3',
        id: 3,
        pose: {},
        t: [...Array(10).keys()].map((k) => k * SAMPLE),
        command: [...Array(10).keys()].map((k) => cmd(400 + 10 * k)),
        position: Array(10).fill(0) as number[],
        segments: [['all', 0, 10 * SAMPLE]],
        start: 0,
      };
      const rebuilt = paced.rebuild(nominal);
      expect(rebuilt.t.length).to.be.at.least(10);
      // From the first sample's cycle to the last's: the settle before them is not in it.
      expect(rebuilt.t.length, 'cycles of the samples only').to.be.at.most(samples);
      expect(rebuilt.command[0]!.goal).to.equal(400);
      expect([...new Set(rebuilt.command.map((c) => c.goal))]).to.deep.equal(
        nominal.command.map((c) => c.goal),
      );
      const settled = real.cycles;
      await rig.wait(0.2);
      expect(real.cycles - settled, 'a 0.2 s wait is 10 cycles').to.be.at.least(10);
      const waiting = rig.wait(1.5);
      stop.abort();
      const err = await waiting.then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err?.name).to.equal('AbortError');
      expect(rig.stopped?.()).to.equal(true);
      paced.close();
    } finally {
      await real.close();
      await emulated.close();
    }
  });

  it('rebuilds a log on the cycles: a slipped sample holds the command before, the segments move with it', () => {
    const cmd = (goal: number) => ({ goal, torqueOn: true, torqueLimit: 1023 });
    const log: MotorLog = {
      motor: 'm3',
      id: 3,
      pose: {},
      t: [0, 0.02, 0.04, 0.06],
      command: [cmd(0), cmd(1), cmd(2), cmd(3)],
      position: [10, 11, 12, 13],
      segments: [
        ['a', 0, 0.04],
        ['b', 0.04, 0.08],
      ],
      start: 0,
    };
    // Sample 2 slipped a cycle (sent in cycle 104, not 103); cycle 105 gave no reading.
    const readings = new Map([
      [101, 20],
      [102, 21],
      [103, 22],
      [104, 23],
    ]);
    const out = perCycleLog(log, [101, 102, 104, 105], readings);
    expect(out.t.map((t) => Math.round(t / SAMPLE))).to.deep.equal([0, 1, 2, 3, 4]);
    expect(out.command.map((c) => c.goal)).to.deep.equal([0, 1, 1, 2, 3]);
    expect(out.position).to.deep.equal([20, 21, 22, 23, 23]);
    expect(
      out.segments.map(([n, a, b]) => [n, Math.round(a / SAMPLE), Math.round(b / SAMPLE)]),
    ).to.deep.equal([
      ['a', 0, 3],
      ['b', 3, 5],
    ]);
  });
});
