/**
 * The emulator's console (`--console`): each fault line changes the faults it names and leaves the others; a hand line
 * moves joints with the sim's hand.
 */
import { expect } from 'chai';
import { loadRobotConfig } from '../../src/config/robot-config.ts';
import { EmulatedBus, noFaults } from '../../src/emulator/bus.ts';
import { applyFaultLine, applyHandLine } from '../../src/emulator/main.ts';
import { SimBackend } from '../../src/sim/backend.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';

describe('emulator fault console lines', () => {
  const bus = () => new EmulatedBus({ protocol: 2, baud: 1_000_000, servos: new Map(), faults: noFaults() });

  it('a fault list changes only the faults it names; clear resets them all; status says what is in force', () => {
    const b = bus();
    expect(applyFaultLine(b, 'drop=0.1,missing=3+4')).to.match(/faults drop=0.1,corrupt=0,.*missing=3\+4/);
    expect(applyFaultLine(b, 'error=2:0x20')).to.match(/drop=0.1,.*missing=3\+4,error=2:0x20/);
    expect(b.faults.dropRate).to.equal(0.1);
    expect([...b.faults.missing]).to.deep.equal([3, 4]);
    expect(applyFaultLine(b, '  status ')).to.match(
      /^faults .*; 0 instructions, 0 replies, 0 dropped, 0 corrupted$/,
    );
    expect(applyFaultLine(b, 'deaf=3:2+5:1')).to.match(/,deaf=3:2\+5:1,/);
    expect([...b.faults.deaf]).to.deep.equal([
      [3, 2],
      [5, 1],
    ]);
    expect(applyFaultLine(b, 'clear')).to.match(
      /drop=0,corrupt=0,latency=0,missing=none,error=none,.*deaf=none/,
    );
    expect(b.faults.missing.size).to.equal(0);
    expect(b.faults.deaf.size).to.equal(0);
    expect(applyFaultLine(b, '')).to.equal('');
  });

  it('a bad line says why and changes nothing', () => {
    const b = bus();
    applyFaultLine(b, 'latency=2');
    expect(applyFaultLine(b, 'drop=2')).to.match(/^error: drop=2: must be a number from 0 to 1/);
    expect(applyFaultLine(b, 'volume=11')).to.match(/^error: unknown fault "volume"/);
    expect(b.faults.dropRate).to.equal(0);
    expect(b.faults.latencyMs).to.equal(2);
  });
});

describe('emulator physical fault lines', () => {
  const bus = () => new EmulatedBus({ protocol: 2, baud: 1_000_000, servos: new Map(), faults: noFaults() });

  it('block, weak, push and offset change per id; <id>:off takes one away; clear takes all', () => {
    const b = bus();
    expect(applyFaultLine(b, 'block=2@30,weak=3:0.4')).to.match(
      /block=2@30,weak=3:0.4,push=none,offset=none/,
    );
    expect(applyFaultLine(b, 'block=4@-10+5@12.5,push=6:-0.2,offset=1:8')).to.match(
      /block=2@30\+4@-10\+5@12.5,weak=3:0.4,push=6:-0.2,offset=1:8/,
    );
    expect(applyFaultLine(b, 'block=4@off,weak=3:off')).to.match(/block=2@30\+5@12.5,weak=none,/);
    expect([...b.faults.block.keys()]).to.deep.equal([2, 5]);
    applyFaultLine(b, 'clear');
    expect(b.faults.block.size + b.faults.weak.size + b.faults.push.size + b.faults.offset.size).to.equal(0);
  });

  it('a malformed physical fault says why and changes nothing, even the parts of the line before it', () => {
    const b = bus();
    applyFaultLine(b, 'block=2@30');
    for (const [text, why] of [
      ['weak=3:1.5', /weak=1.5: must be a number from 0 to 1/],
      ['block=3:30', /block=3:30: write block=<id>@<deg> or block=<id>@off/],
      ['push=1:0.1,offset=x:3', /offset=x: must be a number/],
      ['offset=1:400', /must be a number from -180 to 180/],
      ['block=300@10', /must be a number from 0 to 252/],
    ] as const) {
      expect(applyFaultLine(b, text), text)
        .to.match(/^error: /)
        .and.to.match(why);
    }
    expect([...b.faults.block]).to.deep.equal([[2, 30]]);
    expect(b.faults.push.size + b.faults.weak.size + b.faults.offset.size).to.equal(0);
  });
});

describe('emulator hand lines', function () {
  this.timeout(20000);
  let sim: SimBackend;
  before(async () => {
    const config = await loadRobotConfig('ergo-jr');
    sim = new SimBackend({ config, urdf: await loadUrdf(config.urdfPath), speed: 'manual' });
    await sim.open();
  });
  after(() => sim?.close());
  const ids = new Set([1, 2, 3, 4, 5, 6]);
  const angle = (name: string) => (sim.jointAngles().get(name)! * 180) / Math.PI;

  it('hand=<id>@<deg>:<s> drags limp joints to raw angles, then lets go', async () => {
    expect(applyHandLine(sim.simulation.hand, ids, 'hand=1@30:1+4@-40:1.2')).to.equal(
      'hand 1@30:1+4@-40:1.2',
    );
    await sim.advance(0.5);
    expect(sim.simulation.hand.holding().sort()).to.deep.equal([1, 4]);
    await sim.advance(1);
    expect(angle('m1')).to.be.closeTo(30, 3);
    expect(angle('m4')).to.be.closeTo(-40, 3);
    expect(sim.simulation.hand.holding(), 'let go after its seconds').to.deep.equal([]);
  });

  it('hand=<id>@off and hand=off let go; a bad line or an unknown motor says why and moves nothing', async () => {
    applyHandLine(sim.simulation.hand, ids, 'hand=1@0:5+2@10:5');
    await sim.advance(0.1);
    expect(applyHandLine(sim.simulation.hand, ids, 'hand=1@off')).to.equal('hand 1@off');
    expect(sim.simulation.hand.holding()).to.deep.equal([2]);
    expect(applyHandLine(sim.simulation.hand, ids, 'hand=off')).to.equal('hand off');
    expect(sim.simulation.hand.holding()).to.deep.equal([]);
    for (const [line, why] of [
      ['hand=7@10:1', /no motor 7 \(1, 2, 3, 4, 5, 6\)/],
      ['hand=1@10', /write hand=<id>@<deg>:<seconds>/],
      ['hand=1@400:1', /deg -360 to 360/],
      ['hand=1@10:0', /0 < seconds <= 60/],
    ] as const)
      expect(applyHandLine(sim.simulation.hand, ids, line), line).to.match(why);
    expect(applyHandLine(sim.simulation.hand, ids, 'hand=2@10:1+7@0:1')).to.match(/^error: hand=7@0:1/);
    expect(sim.simulation.hand.holding(), 'a line with a bad part moves nothing').to.deep.equal([]);
    expect(applyHandLine(sim.simulation.hand, ids, 'drop=0.1')).to.equal(undefined);
  });
});
