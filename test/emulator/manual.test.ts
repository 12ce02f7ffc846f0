/**
 * The bus emulator against the servos' e-manuals (issue 28), over a real pseudo-terminal, one check per point:
 * the Moving flag, the baud register's power-on value, checksum/CRC error replies, REG_WRITE/ACTION, REBOOT (2.0),
 * Data Length Error (2.0), the Angle Limit bit (1.0), id and baud changes taking effect, BULK_WRITE (2.0) and the
 * XL-320's EEPROM lock with torque on. The physics behind the servos moves only when a test advances it.
 */
import { expect } from 'chai';
import { type RunningEmulator, startEmulator } from '../../src/emulator/emulator.ts';
import { type Packet, encodeInstruction, instructions } from '../../src/dynamixel/packet.ts';
import { SerialLink } from '../../src/real/link.ts';

/** One exchange: the status packet of `id`, or undefined when it stays silent. */
async function ask(link: SerialLink, bytes: Uint8Array, id: number): Promise<Packet | undefined> {
  // 100 ms: a servo answers within one, but this test shares two cores with the rest of the suite.
  return (await link.transact(bytes, [id], 100)).packets.get(id);
}

/** A read that must be answered: asked again once if its reply was late (a loaded machine), as the driver does. */
async function mustRead(link: SerialLink, bytes: Uint8Array, id: number): Promise<Packet> {
  const reply = (await ask(link, bytes, id)) ?? (await ask(link, bytes, id));
  if (!reply) throw new Error(`servo ${id} did not answer twice`);
  return reply;
}

async function openLink(path: string, protocol: 1 | 2, baud = 1_000_000): Promise<SerialLink> {
  const link = new SerialLink({ path, baud, protocol, timeoutMs: 30 });
  await link.open();
  return link;
}

describe('bus emulator as the e-manuals say: XL-320, protocol 2.0 (Ergo Jr)', function () {
  this.timeout(20000);
  let emulator: RunningEmulator;
  let link: SerialLink;
  const P = 2;
  before(async () => {
    emulator = await startEmulator({ robot: 'ergo-jr', speed: 'manual' });
    link = await openLink(emulator.path, P);
  });
  after(async () => {
    await link?.close();
    await emulator?.close();
  });
  const byte = async (id: number, address: number) =>
    (await mustRead(link, instructions.read(P, id, address, 1), id)).params[0];
  const word = async (id: number, address: number) => {
    const p = (await mustRead(link, instructions.read(P, id, address, 2), id)).params;
    return p[0]! | (p[1]! << 8);
  };

  it('1. Moving (49) reads 1 while the servo turns towards its goal and 0 once it is there', async () => {
    const start = await word(1, 37);
    expect((await ask(link, instructions.write(P, 1, 24, [1]), 1))!.error).to.equal(0);
    expect(await byte(1, 49), 'holding still').to.equal(0);
    await ask(link, instructions.write(P, 1, 30, [(start + 200) & 0xff, (start + 200) >> 8]), 1);
    await emulator.sim.advance(0.1);
    expect(await byte(1, 49), 'mid-move').to.equal(1);
    await emulator.sim.advance(3);
    expect(Math.abs((await word(1, 37)) - (start + 200))).to.be.below(10);
    expect(await byte(1, 49), 'arrived').to.equal(0);
    await ask(link, instructions.write(P, 1, 24, [0]), 1);
  });

  it('2. the baud register reads 3 (1 Mbps) on a 1 Mbps bus', async () => {
    expect(await byte(2, 4)).to.equal(3);
  });

  it('3. an instruction with a bad CRC is answered with the CRC error (3)', async () => {
    const bad = instructions.read(P, 2, 37, 2);
    bad[bad.length - 1]! ^= 0xff;
    const reply = await ask(link, bad, 2);
    expect(reply?.error).to.equal(3);
    expect(reply?.params.length).to.equal(0);
  });

  it('4. REG_WRITE is held until ACTION; REBOOT clears a hardware alert and comes back with torque off', async () => {
    expect((await ask(link, instructions.regWrite(P, 3, 25, [2]), 3))!.error).to.equal(0);
    expect(await byte(3, 25), 'LED before ACTION').to.equal(0);
    expect(await byte(3, 47), 'Registered Instruction').to.equal(1);
    await link.transact(instructions.action(P), []);
    expect(await byte(3, 25), 'LED after ACTION').to.equal(2);
    expect(await byte(3, 47)).to.equal(0);
    // A hardware alert: bit 7 in every status, torque off, a torque-on write does not take.
    await ask(link, instructions.write(P, 3, 24, [1]), 3);
    emulator.bus.faults.errorBits.set(3, 0x80);
    const alerted = await ask(link, instructions.write(P, 3, 24, [1]), 3);
    expect(alerted!.error & 0x80).to.equal(0x80);
    expect(await byte(3, 24), 'torque in alert').to.equal(0);
    expect(await byte(3, 50), 'Hardware Error Status').to.not.equal(0);
    expect((await ask(link, instructions.reboot(3), 3))!.error).to.equal(0x80);
    const after = await ask(link, instructions.read(P, 3, 24, 2), 3);
    expect(after!.error, 'no alert after the reboot').to.equal(0);
    expect([...after!.params], 'torque and LED back to their power-on values').to.deep.equal([0, 0]);
    expect((await ask(link, instructions.write(P, 3, 24, [1]), 3))!.error).to.equal(0);
    expect(await byte(3, 24), 'torque on again').to.equal(1);
    await ask(link, instructions.write(P, 3, 24, [0]), 3);
  });

  it('5. a 1-byte write into the 2-byte goal position is a Data Length Error (5) and changes nothing', async () => {
    const goal = await word(4, 30);
    expect((await ask(link, instructions.write(P, 4, 30, [(goal + 7) & 0xff]), 4))!.error).to.equal(5);
    expect(await word(4, 30)).to.equal(goal);
  });

  it('7. an id write takes effect: the reply comes from the old id, then only the new one answers', async () => {
    const reply = await ask(link, instructions.write(P, 5, 3, [20]), 5);
    expect(reply?.error).to.equal(0);
    expect(await ask(link, instructions.ping(P, 5), 5), 'old id').to.equal(undefined);
    expect((await ask(link, instructions.ping(P, 20), 20))?.params[0], 'new id: model 350').to.equal(
      350 & 0xff,
    );
    await ask(link, instructions.write(P, 20, 3, [5]), 20);
    expect(await ask(link, instructions.ping(P, 5), 5)).to.not.equal(undefined);
  });

  it('8. BULK_WRITE writes each servo its own item', async () => {
    await link.transact(
      instructions.bulkWrite([
        { id: 1, address: 25, data: [4] },
        { id: 2, address: 32, data: [100, 0] },
      ]),
      [],
    );
    expect(await byte(1, 25)).to.equal(4);
    expect(await word(2, 32)).to.equal(100);
  });

  it('8. XL-320: an EEPROM write with torque on is an Access Error (7); with torque off it takes', async () => {
    await ask(link, instructions.write(P, 6, 24, [1]), 6);
    expect((await ask(link, instructions.write(P, 6, 5, [10]), 6))!.error).to.equal(7);
    expect(await byte(6, 5)).to.equal(250);
    await ask(link, instructions.write(P, 6, 24, [0]), 6);
    expect((await ask(link, instructions.write(P, 6, 5, [10]), 6))!.error).to.equal(0);
    expect(await byte(6, 5)).to.equal(10);
  });

  it('8. a baud write takes effect: the servo answers at the new rate only', async () => {
    expect((await ask(link, instructions.write(P, 4, 4, [1]), 4))!.error, 'acknowledged at 1 Mbps').to.equal(
      0,
    );
    expect(await ask(link, instructions.ping(P, 4), 4), 'silent at 1 Mbps').to.equal(undefined);
    await link.close();
    const slow = await openLink(emulator.path, P, 57_600);
    try {
      expect(await ask(slow, instructions.ping(P, 4), 4), 'answers at 57600').to.not.equal(undefined);
      expect(await ask(slow, instructions.ping(P, 3), 3), 'the others stay at 1 Mbps').to.equal(undefined);
      await ask(slow, instructions.write(P, 4, 4, [3]), 4);
    } finally {
      await slow.close();
      link = await openLink(emulator.path, P);
    }
    expect(await ask(link, instructions.ping(P, 4), 4), 'back at 1 Mbps').to.not.equal(undefined);
  });
});

describe('bus emulator as the e-manuals say: AX-12A and MX-28, protocol 1.0 (Torso)', function () {
  this.timeout(20000);
  let emulator: RunningEmulator;
  let link: SerialLink;
  const P = 1;
  // The Torso's head_z is an AX-12A (id 36), abs_z an MX-28 (id 33).
  const AX = 36;
  const MX = 33;
  before(async () => {
    emulator = await startEmulator({ robot: 'torso', speed: 'manual' });
    link = await openLink(emulator.path, P);
  });
  after(async () => {
    await link?.close();
    await emulator?.close();
  });
  const read = async (id: number, address: number, length: number) =>
    mustRead(link, instructions.read(P, id, address, length), id);

  it('2. the MX-28 baud register reads 1 (1 Mbps) on a 1 Mbps bus, as does the AX-12A', async () => {
    expect((await read(MX, 4, 1)).params[0]).to.equal(1);
    expect((await read(AX, 4, 1)).params[0]).to.equal(1);
  });

  it('3. an instruction with a bad checksum is answered with the Checksum error bit (0x10)', async () => {
    const bad = instructions.ping(P, MX);
    bad[bad.length - 1]! ^= 0x01;
    expect((await ask(link, bad, MX))?.error).to.equal(0x10);
  });

  it('4. REG_WRITE is held until ACTION; ACTION with nothing held is an Instruction Error (0x40)', async () => {
    expect((await ask(link, instructions.regWrite(P, MX, 25, [1]), MX))!.error).to.equal(0);
    expect((await read(MX, 25, 1)).params[0]).to.equal(0);
    expect((await read(MX, 44, 1)).params[0], 'Registered').to.equal(1);
    expect((await ask(link, instructions.action(P, MX), MX))!.error).to.equal(0);
    expect((await read(MX, 25, 1)).params[0]).to.equal(1);
    expect((await ask(link, instructions.action(P, MX), MX))!.error).to.equal(0x40);
  });

  it('6. a goal outside the CW/CCW angle limits sets the Angle Limit bit (0x02) and is not taken', async () => {
    await ask(link, instructions.write(P, AX, 6, [0, 1, 0, 3]), AX); // limits 256..768
    const goal = (await read(AX, 30, 2)).params;
    expect((await ask(link, instructions.write(P, AX, 30, [0x10, 0x03]), AX))!.error).to.equal(0x02); // 784
    const now = await read(AX, 30, 2);
    expect([...now.params]).to.deep.equal([...goal]);
    expect(now.error, 'the bit stays until a goal inside the limits').to.equal(0x02);
    expect((await ask(link, instructions.write(P, AX, 30, [0x00, 0x02]), AX))!.error).to.equal(0); // 512
    expect((await read(AX, 30, 2)).error).to.equal(0);
  });

  it('7. an id write takes effect after its reply', async () => {
    expect((await ask(link, instructions.write(P, AX, 3, [100]), AX))!.error).to.equal(0);
    expect(await ask(link, instructions.ping(P, AX), AX)).to.equal(undefined);
    expect(await ask(link, instructions.ping(P, 100), 100)).to.not.equal(undefined);
    await ask(link, instructions.write(P, 100, 3, [AX]), 100);
    expect(await ask(link, instructions.ping(P, AX), AX)).to.not.equal(undefined);
  });

  it("an unknown instruction (pypot's USB2AX SYNC_READ 0x84) is an Instruction Error from the servo it names", async () => {
    expect((await ask(link, encodeInstruction(P, MX, 0x84, [36, 2]), MX))?.error).to.equal(0x40);
  });
});
