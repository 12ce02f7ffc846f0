/** Packets byte for byte against the ROBOTIS e-manual examples (docs/reference/dynamixel.md 8.1, 8.2), and the streaming parser. */
import { expect } from 'chai';
import {
  Instruction,
  PacketParser,
  crc16,
  encodeStatus,
  instructions,
  stuff,
  unstuff,
} from '../../src/dynamixel/packet.ts';
import { StatusError, decodeErrorByte } from '../../src/dynamixel/errors.ts';

const hex = (s: string) => Uint8Array.from(s.split(/\s+/).map((b) => parseInt(b, 16)));
const show = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, '0').toUpperCase()).join(' ');

describe('Dynamixel protocol 1.0 packets', () => {
  it('encodes the e-manual instruction examples byte for byte', () => {
    expect(show(instructions.ping(1, 1))).to.equal('FF FF 01 02 01 FB');
    expect(show(instructions.read(1, 1, 0x2b, 1))).to.equal('FF FF 01 04 02 2B 01 CC');
    expect(show(instructions.write(1, 1, 0x0c, [0x64, 0xaa]))).to.equal('FF FF 01 05 03 0C 64 AA DC');
    expect(
      show(
        instructions.syncWrite(1, 0x1e, 4, [
          [0, [0x10, 0x00, 0x50, 0x01]],
          [1, [0x20, 0x02, 0x60, 0x03]],
        ]),
      ),
    ).to.equal('FF FF FE 0E 83 1E 04 00 10 00 50 01 01 20 02 60 03 67');
    expect(
      show(
        instructions.bulkRead(1, [
          { id: 1, address: 0x1e, length: 2 },
          { id: 2, address: 0x24, length: 2 },
        ]),
      ),
    ).to.equal('FF FF FE 09 92 00 02 01 1E 02 02 24 1D');
  });

  it('encodes the e-manual status examples, and parses them back', () => {
    expect(show(encodeStatus(1, 1, 0))).to.equal('FF FF 01 02 00 FC');
    expect(show(encodeStatus(1, 1, 0, [0x20]))).to.equal('FF FF 01 03 00 20 DB');
    expect(show(encodeStatus(1, 1, 0x24))).to.equal('FF FF 01 02 24 D8');
    const parser = new PacketParser(1, true);
    const [a, b] = parser.push(hex('FF FF 01 03 00 20 DB FF FF 01 02 24 D8'));
    expect(a).to.deep.include({ id: 1, error: 0 });
    expect([...a!.params]).to.deep.equal([0x20]);
    expect(b!.error).to.equal(0x24);
    expect(decodeErrorByte(1, b!.error)).to.deep.equal(['overheating', 'overload']);
    expect(new StatusError(1, 1, 0x24).message).to.equal('servo 1 reports overheating, overload');
  });

  it('parses instruction packets on the servo side', () => {
    const [p] = new PacketParser(1, false).push(hex('FF FF 01 04 02 2B 01 CC'));
    expect(p).to.deep.include({ id: 1, instruction: Instruction.read });
    expect([...p!.params]).to.deep.equal([0x2b, 0x01]);
  });
});

describe('Dynamixel protocol 2.0 packets', () => {
  it('encodes the e-manual instruction examples byte for byte', () => {
    expect(show(instructions.ping(2, 1))).to.equal('FF FF FD 00 01 03 00 01 19 4E');
    expect(show(instructions.read(2, 1, 132, 4))).to.equal('FF FF FD 00 01 07 00 02 84 00 04 00 1D 15');
    expect(show(instructions.syncRead(132, 4, [1, 2]))).to.equal(
      'FF FF FD 00 FE 09 00 82 84 00 04 00 01 02 CE FA',
    );
    expect(show(instructions.read(2, 1, 37, 2))).to.equal('FF FF FD 00 01 07 00 02 25 00 02 00 2D 95');
  });

  it('encodes and parses the e-manual ping status', () => {
    expect(show(encodeStatus(2, 1, 0, [0x06, 0x04, 0x26]))).to.equal(
      'FF FF FD 00 01 07 00 55 00 06 04 26 65 5D',
    );
    const [p] = new PacketParser(2, true).push(hex('FF FF FD 00 01 07 00 55 00 06 04 26 65 5D'));
    expect(p).to.deep.include({ id: 1, error: 0, instruction: 0x55 });
    expect([...p!.params]).to.deep.equal([0x06, 0x04, 0x26]);
  });

  it('CRC-16 is the e-manual one (poly 0x8005, init 0)', () => {
    expect(crc16(hex('FF FF FD 00 01 03 00 01'))).to.equal(0x4e19);
  });

  it('stuffs FF FF FD in the payload and the parser removes it after checking the CRC', () => {
    expect(stuff([0x03, 0xff, 0xff, 0xfd, 0x01])).to.deep.equal([0x03, 0xff, 0xff, 0xfd, 0xfd, 0x01]);
    expect([...unstuff([0x03, 0xff, 0xff, 0xfd, 0xfd, 0x01])]).to.deep.equal([0x03, 0xff, 0xff, 0xfd, 0x01]);
    // Data that holds FF FF FD FD itself comes back whole, as every run of FDs after FF FF does.
    for (const data of [
      [0xff, 0xff, 0xfd, 0xfd],
      [0xff, 0xff, 0xfd, 0xfd, 0xfd, 0x01],
      [0x01, 0xff, 0xff, 0xfd, 0xff, 0xff, 0xfd, 0xfd],
    ])
      expect([...unstuff(stuff(data))], show(Uint8Array.from(data))).to.deep.equal(data);
    const packet = instructions.write(2, 3, 0x40, [0xff, 0xff, 0xfd, 0x07]);
    // LEN counts the stuffed byte: 1 inst + 2 addr + 5 data + 2 CRC.
    expect(packet[5]).to.equal(10);
    const [p] = new PacketParser(2, false).push(packet);
    expect([...p!.params]).to.deep.equal([0x40, 0x00, 0xff, 0xff, 0xfd, 0x07]);
    const [q] = new PacketParser(2, true).push(encodeStatus(2, 3, 0, [0xff, 0xff, 0xfd, 0xfd, 0x02]));
    expect([...q!.params]).to.deep.equal([0xff, 0xff, 0xfd, 0xfd, 0x02]);
  });

  it('decodes the error byte as an error number plus the alert bit', () => {
    expect(decodeErrorByte(2, 0x04)).to.deep.equal(['data_range']);
    expect(decodeErrorByte(2, 0x80)).to.deep.equal(['hardware_alert']);
    expect(new StatusError(3, 2, 0x84).refused).to.equal(true);
    expect(new StatusError(3, 2, 0x80).refused).to.equal(false);
  });
});

describe('Streaming parser', () => {
  for (const protocol of [1, 2] as const) {
    it(`protocol ${protocol}: resynchronises after garbage, corrupt packets and split reads`, () => {
      const good = [encodeStatus(protocol, 5, 0, [1, 2, 3]), encodeStatus(protocol, 6, 0, [0xff, 0xff])];
      const corrupt = encodeStatus(protocol, 7, 0, [9]);
      corrupt[corrupt.length - 1]! ^= 0x5a;
      const stream = Uint8Array.from([
        0x00,
        0xff,
        0x13,
        ...corrupt,
        0xff,
        ...good[0]!,
        0xff,
        0xff,
        0xff,
        ...good[1]!,
      ]);
      // Every split point of the stream gives the same two packets.
      for (let cut = 0; cut <= stream.length; cut++) {
        const parser = new PacketParser(protocol, true);
        const got = [...parser.push(stream.slice(0, cut)), ...parser.push(stream.slice(cut))];
        expect(
          got.map((p) => [p.id, ...p.params]),
          `cut at ${cut}`,
        ).to.deep.equal([
          [5, 1, 2, 3],
          [6, 0xff, 0xff],
        ]);
        expect(parser.issues.some((i) => i.kind === 'checksum')).to.equal(true);
      }
      // Byte by byte, too.
      const parser = new PacketParser(protocol, true);
      const got = [...stream].flatMap((b) => parser.push(Uint8Array.of(b)));
      expect(got.map((p) => p.id)).to.deep.equal([5, 6]);
    });

    it(`protocol ${protocol}: a packet and a partial one keep their bytes when the read buffer is reused`, () => {
      // As a port reads into one Buffer again and again (a Buffer's slice() is a view, not a copy).
      const read = Buffer.alloc(64);
      const whole = encodeStatus(protocol, 5, 0, [1, 2, 3]);
      const next = encodeStatus(protocol, 6, 0, [4, 5]);
      const cut = 4;
      read.set(whole);
      read.set(next.subarray(0, cut), whole.length);
      const parser = new PacketParser(protocol, true);
      const [first] = parser.push(read.subarray(0, whole.length + cut));
      read.fill(0xee);
      read.set(next.subarray(cut));
      const [second] = parser.push(read.subarray(0, next.length - cut));
      read.fill(0xee);
      expect([first!.id, ...first!.params]).to.deep.equal([5, 1, 2, 3]);
      expect([second!.id, ...second!.params]).to.deep.equal([6, 4, 5]);
    });
  }
});
