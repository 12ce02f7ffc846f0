/**
 * The bus process's I/O at its cheapest, still exact: the sync loop's clock (one timer a wait, never early, aborted at
 * once), the link's queue of transactions and its replies through a read buffer the port reuses (split one byte per
 * chunk, a motor missing), and serialport's binding on a real pty (reads into one buffer, writes straight to the
 * descriptor) passing every byte in order both ways.
 */
import { expect } from 'chai';
import { isAbortError } from '../../src/core/clock.ts';
import { Instruction, encodeStatus, instructions } from '../../src/dynamixel/packet.ts';
import { TimeoutError } from '../../src/dynamixel/errors.ts';
import { openPty } from '../../src/emulator/pty.ts';
import { SerialLink } from '../../src/real/link.ts';
import { type SerialBinding, nodeSerialBinding } from '../../src/real/serial-binding.ts';
import { TimerClock } from '../../src/real/timer-clock.ts';

const turn = () => new Promise((r) => setImmediate(r));

describe('the bus loop clock (TimerClock)', () => {
  it('wakes at or after the time asked, never before, and not much later', async () => {
    const clock = new TimerClock();
    for (const ms of [0.3, 1, 2.5, 7, 13.7, 20]) {
      const t = clock.now() + ms / 1000;
      await clock.sleepUntil(t);
      const late = (clock.now() - t) * 1000;
      expect(late, `${ms} ms`).to.be.at.least(0);
      expect(late, `${ms} ms`).to.be.below(50);
    }
  });

  it('a time already due still waits for a later turn of the event loop', async () => {
    const clock = new TimerClock();
    let woke = false;
    const wait = clock.sleepUntil(clock.now() - 1).then(() => (woke = true));
    expect(woke).to.equal(false);
    await wait;
    expect(woke).to.equal(true);
  });

  it('an abort ends every wait on its signal at once (AbortError), and only those', async () => {
    const clock = new TimerClock();
    const stop = new AbortController();
    const other = new AbortController();
    const t0 = performance.now();
    const waits = [clock.sleep(5, stop.signal), clock.sleepUntil(clock.now() - 1, stop.signal)].map((p) =>
      p.then(
        () => 'resolved',
        (err: unknown) => (isAbortError(err) ? 'aborted' : String(err)),
      ),
    );
    const unrelated = clock.sleep(0.01, other.signal);
    stop.abort();
    expect(await Promise.all(waits)).to.deep.equal(['aborted', 'aborted']);
    expect(performance.now() - t0, 'aborted at once (ms)').to.be.below(1000);
    await unrelated;
    let after: unknown;
    await clock.sleep(0.01, stop.signal).catch((err: unknown) => (after = err));
    expect(isAbortError(after), 'a wait on an aborted signal').to.equal(true);
  });
});

/**
 * A port whose replies come one byte per chunk, through one buffer it overwrites for the next byte (as the tty
 * binding's read buffer): `answer` gives the status packets for each packet written.
 */
function bytewiseBinding(answer: (packet: Uint8Array) => Uint8Array[]): {
  binding: SerialBinding;
  log: string[];
} {
  const log: string[] = [];
  const binding: SerialBinding = {
    async open() {
      let listener: ((chunk: Uint8Array) => void) | undefined;
      const shared = new Uint8Array(1);
      let n = 0;
      return {
        write(bytes) {
          const i = n++;
          log.push(`write ${i}`);
          const reply = answer(bytes).flatMap((p) => [...p]);
          if (!reply.length) log.push(`replied ${i}`);
          void (async () => {
            for (let k = 0; k < reply.length; k++) {
              await turn();
              if (k === reply.length - 1) log.push(`replied ${i}`);
              shared[0] = reply[k]!;
              listener?.(shared.subarray(0, 1));
              shared[0] = 0xee; // the byte is gone once the listener returns
            }
          })();
          return Promise.resolve();
        },
        onData(l) {
          listener = l;
        },
        async close() {},
      };
    },
  };
  return { binding, log };
}

const BLOCK = [1, 2, 3, 4, 5, 6];
const syncRead = (ids: number[]) => instructions.syncRead(37, BLOCK.length, ids);

describe('the serial link: its queue, and replies in pieces through a reused buffer', () => {
  it('parses a sync read whose replies come one byte per chunk, each chunk overwritten after it is taken', async () => {
    const { binding } = bytewiseBinding(() =>
      [1, 2, 3].map((id) =>
        encodeStatus(
          2,
          id,
          0,
          BLOCK.map((b) => b * id),
        ),
      ),
    );
    const link = new SerialLink({ path: 'bytes', baud: 1_000_000, protocol: 2, binding });
    await link.open();
    const r = await link.transact(syncRead([1, 2, 3]), [1, 2, 3], 1000);
    expect(r.errors.size).to.equal(0);
    for (const id of [1, 2, 3])
      expect([...r.packets.get(id)!.params]).to.deep.equal(BLOCK.map((b) => b * id));
    expect(link.stats.received).to.equal(3 * (11 + BLOCK.length));
    await link.close();
  });

  it('a motor that does not answer times out after the others answered; they keep their replies', async () => {
    const { binding } = bytewiseBinding(() => [1, 3].map((id) => encodeStatus(2, id, 0, BLOCK)));
    const link = new SerialLink({ path: 'bytes', baud: 1_000_000, protocol: 2, binding });
    await link.open();
    const t0 = performance.now();
    const r = await link.transact(syncRead([1, 2, 3]), [1, 2, 3], 30);
    expect(performance.now() - t0, 'waited for the timeout (ms)').to.be.at.least(29);
    expect([...r.packets.keys()].sort()).to.deep.equal([1, 3]);
    expect(r.errors.get(2)).to.be.instanceOf(TimeoutError);
    expect(r.errors.get(2)!.message).to.equal('motor 2 did not answer');
    await link.close();
  });

  it('runs transactions asked at once one after the other, in order: each is sent once the one before has ended', async () => {
    const { binding, log } = bytewiseBinding((packet) =>
      packet[7] === Instruction.syncWrite ? [] : [encodeStatus(2, packet[4]!, 0, [packet[4]!])],
    );
    const link = new SerialLink({ path: 'bytes', baud: 1_000_000, protocol: 2, binding });
    await link.open();
    const order: string[] = [];
    const all = [
      link.transact(instructions.ping(2, 1), [1], 1000).then(() => order.push('ping 1')),
      link.transact(instructions.syncWrite(2, 25, 1, [[1, [2]]]), [], 1000).then(() => order.push('write')),
      link.transact(instructions.ping(2, 2), [2], 1000).then(() => order.push('ping 2')),
    ];
    await Promise.all(all);
    expect(order).to.deep.equal(['ping 1', 'write', 'ping 2']);
    expect(log).to.deep.equal(['write 0', 'replied 0', 'write 1', 'replied 1', 'write 2', 'replied 2']);
    expect(link.stats.transactions).to.equal(3);
    await link.close();
  });

  it('a port that refuses the bytes fails that transaction alone: the next one still runs', async () => {
    let calls = 0;
    const binding: SerialBinding = {
      async open() {
        let listener: ((chunk: Uint8Array) => void) | undefined;
        return {
          write(bytes) {
            if (calls++ === 0) throw new Error('refused');
            const reply = encodeStatus(2, bytes[4]!, 0, [3]);
            setImmediate(() => listener?.(reply));
            return Promise.resolve();
          },
          onData(l) {
            listener = l;
          },
          async close() {},
        };
      },
    };
    const link = new SerialLink({ path: 'refusing', baud: 1_000_000, protocol: 2, binding });
    await link.open();
    const first = link.transact(instructions.ping(2, 1), [1], 1000);
    const second = link.transact(instructions.ping(2, 2), [2], 1000);
    let refused: unknown;
    await first.catch((err: unknown) => (refused = err));
    expect(String(refused)).to.match(/refused/);
    expect((await second).packets.has(2)).to.equal(true);
    await link.close();
  });
});

describe("serialport's binding on a pty: reads into one buffer, writes straight to the descriptor", function () {
  this.timeout(20000);

  it('passes every byte, in order, both ways', async () => {
    const wire = await openPty();
    const port = await nodeSerialBinding.open({ path: wire.path, baudRate: 1_000_000, lock: true });
    try {
      const toDevice: number[] = [];
      wire.onData((bytes) => toDevice.push(...bytes));
      const fromDevice: number[] = [];
      port.onData((chunk) => fromDevice.push(...chunk)); // copied: the chunk is the binding's until it returns
      const sent: number[] = [];
      for (let i = 0; i < 50; i++) {
        const packet = Uint8Array.from({ length: 1 + (i % 40) }, (_, k) => (i * 7 + k) & 0xff);
        sent.push(...packet);
        await port.write(packet);
      }
      const replies: number[] = [];
      for (let i = 0; i < 40; i++) {
        const chunk = Uint8Array.from({ length: 1 + ((i * 13) % 90) }, (_, k) => (i * 11 + k * 3) & 0xff);
        replies.push(...chunk);
        wire.write(chunk);
        if (i % 3 === 0) await turn();
      }
      const end = performance.now() + 5000;
      while ((toDevice.length < sent.length || fromDevice.length < replies.length) && performance.now() < end)
        await new Promise((r) => setTimeout(r, 5));
      expect(toDevice).to.deep.equal(sent);
      expect(fromDevice).to.deep.equal(replies);
    } finally {
      await port.close();
      await wire.close();
    }
  });
});
