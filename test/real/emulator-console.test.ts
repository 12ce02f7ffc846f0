/** The emulator's fault console (`--console`): each line changes the faults it names and leaves the others. */
import { expect } from 'chai';
import { EmulatedBus, noFaults } from '../../src/emulator/bus.ts';
import { applyFaultLine } from '../../src/emulator/main.ts';

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
    expect(applyFaultLine(b, 'clear')).to.match(/drop=0,corrupt=0,latency=0,missing=none,error=none/);
    expect(b.faults.missing.size).to.equal(0);
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
