import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { RobotError } from '../../src/core/errors.ts';
import {
  type Move,
  MoveFormatError,
  assertMoveName,
  createMove,
  moveDuration,
  moveToJson,
  parseMoveFile,
  sampleMove,
  serializeMove,
  validMoveName,
} from '../../src/records/move.ts';

const PYPOT_FILE = new URL('./fixtures/pypot-wave.record', import.meta.url);
// Written by Python's json.dump(..., indent=2) as pypot's Move.save does: float time keys in repr form
// (first one in exponent notation), -0.0 speeds, motors m1..m6. Values: see expectedPosition().
const PYPOT_TIMES = [
  1.9073486328125e-5, 0.020021915435791016, 0.04004502296447754, 0.06010198593139648, 0.08012199401855469,
  0.10016512870788574,
];
function expectedPosition(motorIndex: number, frame: number): number {
  return motorIndex === 2 ? 0 : -20 + 2.5 * frame * (motorIndex + 1) + motorIndex;
}

function frame(t: number, positions: Record<string, [number, number]>) {
  return { t, positions };
}

function expectFormatError(fn: () => unknown, ...fragments: string[]): MoveFormatError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught, 'expected a MoveFormatError').to.be.instanceOf(MoveFormatError);
  const err = caught as MoveFormatError;
  expect(err.code).to.equal('bad_request');
  for (const f of fragments) expect(err.message).to.include(f);
  return err;
}

describe('records/move', () => {
  describe('move names', () => {
    it('accepts names matching the contract regex', () => {
      for (const name of ['a', 'Z', '0', 'walk_1', 'A.b-c', 'a..b', 'x'.repeat(64), 'move.record']) {
        expect(validMoveName(name), name).to.equal(true);
        expect(() => assertMoveName(name)).not.to.throw();
      }
    });

    it('rejects other names with badRequest and a tip', () => {
      const bad: unknown[] = [
        '',
        '../x',
        'a/b',
        '.hidden',
        'x'.repeat(65),
        'a b',
        '-x',
        '_x',
        'a\\b',
        'é',
        'a\n',
        5,
        null,
      ];
      for (const name of bad) {
        expect(validMoveName(name), String(name)).to.equal(false);
        try {
          assertMoveName(name);
          expect.fail(`accepted ${String(name)}`);
        } catch (err) {
          expect(err).to.be.instanceOf(RobotError);
          expect((err as RobotError).code).to.equal('bad_request');
          expect((err as RobotError).tip).to.include('64');
        }
      }
    });
  });

  describe('serialize / parse', () => {
    // A Map, so "__proto__" is a real motor name; "1" and "10" are keys JSON.parse would reorder.
    const row = (values: Array<[number, number]>) =>
      new Map(['b', 'a', '__proto__', '1', '10'].map((m, i) => [m, values[i]!] as const));
    const tricky = (): Move =>
      createMove(50, [
        {
          t: 0.3,
          positions: row([
            [0.1 + 0.2, -0],
            [1e21, 5e-324],
            [1, 2],
            [3, 4],
            [5, 6],
          ]),
        },
        {
          t: 1e-7,
          positions: row([
            [-1, 2],
            [3, -4],
            [5, 6],
            [7, 8],
            [9, 10],
          ]),
        },
        {
          t: 0,
          positions: row([
            [-0, 0],
            [0, 0],
            [0, 0],
            [0, 0],
            [0, 0],
          ]),
        },
      ]);

    it('round-trips exactly', () => {
      const move = tricky();
      const text = serializeMove(move);
      const back = parseMoveFile(text, 'trip.record');
      expect(back).to.deep.equal(move);
      expect(serializeMove(back)).to.equal(text);
      // and through a different JSON layout (pypot's indent=2)
      expect(parseMoveFile(JSON.stringify(JSON.parse(text), null, 2), 'x')).to.deep.equal(move);
    });

    it('builds a canonical move: frames by time, motors by name, -0 as 0', () => {
      const move = tricky();
      expect(move.frames.map((f) => f.t)).to.deep.equal([0, 1e-7, 0.3]);
      expect(move.motors).to.deep.equal(['1', '10', '__proto__', 'a', 'b']);
      expect(Object.is(move.frames[2]!.positions.get('b')![1], 0)).to.equal(true);
      expect(Object.is(move.frames[0]!.positions.get('b')![0], 0)).to.equal(true);
      expect(move.frames[2]!.positions.get('__proto__')).to.deep.equal([1, 2]);
    });

    it('writes time keys as decimal text that parses back to the same number', () => {
      const json = moveToJson(tricky());
      expect(Object.keys(json.positions)).to.deep.equal(['0', '1e-7', '0.3']);
      expect(json.framerate).to.equal(50);
      expect(json.positions['0.3']!['a']).to.deep.equal([1e21, 5e-324]);
    });

    it('refuses to serialize a move with non-finite numbers or a wrong motor list', () => {
      const nan = {
        framerate: 50,
        motors: ['m1'],
        frames: [{ t: 0, positions: new Map([['m1', [NaN, 0] as const]]) }],
      };
      expectFormatError(() => serializeMove(nan), 'position NaN is not a finite number');
      const good = createMove(50, [frame(0, { m1: [1, 2] })]);
      expectFormatError(() => serializeMove({ ...good, motors: ['m1', 'm2'] }), '"motors"');
      expectFormatError(() => serializeMove({ ...good, framerate: 0 }), 'framerate');
    });

    it('serializes an empty move and reads it back', () => {
      const empty = createMove(50, []);
      expect(parseMoveFile(serializeMove(empty), 'e')).to.deep.equal(empty);
      expect(empty.motors).to.deep.equal([]);
    });
  });

  describe('a file written by pypot', () => {
    const text = readFileSync(PYPOT_FILE, 'utf8');

    it('parses with float repr time keys, in time order', () => {
      const move = parseMoveFile(text, 'pypot-wave.record');
      expect(move.framerate).to.equal(50);
      expect(move.motors).to.deep.equal(['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
      expect(move.frames.map((f) => f.t)).to.deep.equal(PYPOT_TIMES);
      for (let i = 0; i < PYPOT_TIMES.length; i++) {
        for (let j = 0; j < 6; j++) {
          expect(move.frames[i]!.positions.get(`m${j + 1}`)![0]).to.equal(expectedPosition(j, i));
        }
      }
      expect(Object.is(move.frames[0]!.positions.get('m1')![1], 0)).to.equal(true); // -0.0 read as 0
      expect(move.frames[3]!.positions.get('m2')).to.deep.equal([expectedPosition(1, 3), -250]);
      expect(moveDuration(move)).to.equal(0.10016512870788574);
    });

    it('sorts frames whose keys come in any order (Python 2 dicts were unordered)', () => {
      const doc = JSON.parse(text) as { framerate: number; positions: Record<string, unknown> };
      const keys = Object.keys(doc.positions).reverse();
      const shuffled = {
        framerate: 50,
        positions: Object.fromEntries(keys.map((k) => [k, doc.positions[k]])),
      };
      expect(parseMoveFile(JSON.stringify(shuffled), 'x')).to.deep.equal(parseMoveFile(text, 'x'));
    });

    it('samples with linear interpolation between the two nearest frames', () => {
      const move = parseMoveFile(text, 'pypot-wave.record');
      const [t0, t1, t2] = PYPOT_TIMES as [number, number, number];
      expect(sampleMove(move, t1).get('m4')).to.deep.equal([expectedPosition(3, 1), -500]);
      const mid = sampleMove(move, t1 + (t2 - t1) / 4);
      expect(mid.get('m4')![0]).to.be.closeTo(expectedPosition(3, 1) + 0.25 * 10, 1e-9);
      expect(mid.get('m4')![1]).to.be.closeTo(-500, 1e-9);
      const first = sampleMove(move, (t0 + t1) / 2);
      expect(first.get('m6')![0]).to.be.closeTo(-15 + 7.5, 1e-9);
      expect(first.get('m6')![1]).to.be.closeTo(-375, 1e-9); // between -0 and -750
      expect([...mid.keys()]).to.deep.equal(['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
    });
  });

  describe('sampleMove / moveDuration', () => {
    const move = createMove(50, [
      frame(0.5, { m1: [10, 1], m2: [0, 0] }),
      frame(1.5, { m1: [30, 3], m2: [-10, 0] }),
      frame(1, { m1: [20, 2], m2: [-100, 0] }),
    ]);

    it('interpolates linearly', () => {
      expect(sampleMove(move, 0.75).get('m1')).to.deep.equal([15, 1.5]);
      expect(sampleMove(move, 1.25).get('m2')).to.deep.equal([-55, 0]);
      expect(sampleMove(move, 1).get('m1')).to.deep.equal([20, 2]);
      expect(sampleMove(move, 1.4).get('m1')![0]).to.be.closeTo(28, 1e-12);
    });

    it('clamps before the first and after the last frame', () => {
      expect(sampleMove(move, 0).get('m1')).to.deep.equal([10, 1]);
      expect(sampleMove(move, -5).get('m2')).to.deep.equal([0, 0]);
      expect(sampleMove(move, 99).get('m1')).to.deep.equal([30, 3]);
      expect(sampleMove(move, Infinity).get('m2')).to.deep.equal([-10, 0]);
      expect(() => sampleMove(move, NaN)).to.throw(RangeError);
    });

    it('handles one-frame and empty moves', () => {
      const one = createMove(50, [frame(0.2, { m1: [7, 0] })]);
      expect(sampleMove(one, 0).get('m1')).to.deep.equal([7, 0]);
      expect(sampleMove(one, 1).get('m1')).to.deep.equal([7, 0]);
      expect(moveDuration(one)).to.equal(0.2);
      const empty = createMove(50, []);
      expect(sampleMove(empty, 1).size).to.equal(0);
      expect(moveDuration(empty)).to.equal(0);
    });

    it('gives the time of the last frame as duration', () => {
      expect(moveDuration(move)).to.equal(1.5);
    });
  });

  describe('strict parsing', () => {
    const ok = (positions: unknown, extra: Record<string, unknown> = {}) =>
      JSON.stringify({ framerate: 50, positions, ...extra });
    const cases: Array<[string, string, string[]]> = [
      ['empty file', '', ['empty']],
      ['blank file', ' \n', ['empty']],
      ['truncated JSON', '{"framerate": 50, "positions": {"0.0": {"m1": [1', ['not valid JSON']],
      ['not an object', '[1, 2]', ['expected a JSON object, got a list']],
      ['missing framerate', '{"positions": {}}', ['missing "framerate"']],
      ['missing positions', '{"framerate": 50}', ['missing "positions"']],
      ['framerate string', '{"framerate": "50", "positions": {}}', ['"framerate" must be', '"50"']],
      ['framerate zero', '{"framerate": 0, "positions": {}}', ['"framerate" must be']],
      ['unknown key', ok({}, { name: 'x' }), ['unexpected key "name"']],
      ['old list format', ok([{ m1: 1 }]), ['old pypot format']],
      ['positions null', ok(null), ['"positions" must be an object', 'null']],
      ['time key text', ok({ abc: { m1: [1, 2] } }), ['positions["abc"]', 'time key']],
      ['negative time', ok({ '-0.1': { m1: [1, 2] } }), ['positions["-0.1"]']],
      ['Infinity time', ok({ Infinity: { m1: [1, 2] } }), ['positions["Infinity"]']],
      ['hex time', ok({ '0x10': { m1: [1, 2] } }), ['positions["0x10"]']],
      ['spaced time', ok({ ' 1': { m1: [1, 2] } }), ['positions[" 1"]']],
      ['overflowing time', ok({ '1e400': { m1: [1, 2] } }), ['positions["1e400"]', 'not finite']],
      ['frame not object', ok({ '0.0': [1, 2] }), ['positions["0.0"]', 'got a list']],
      ['bare number', ok({ '0.0': { m1: 5 } }), ['positions["0.0"].m1', 'expected [position, speed], got 5']],
      ['one number', ok({ '0.0': { m1: [5] } }), ['positions["0.0"].m1', 'got 1 item(s)']],
      ['three numbers', ok({ '0.0': { m1: [5, 1, 2] } }), ['got 3 item(s)']],
      ['string position', ok({ '0.0': { m1: ['5', 1] } }), ['positions["0.0"].m1', 'position "5"']],
      ['null speed', ok({ '0.0': { m1: [5, null] } }), ['speed null']],
      ['empty motor name', ok({ '0.0': { '': [5, 1] } }), ['empty motor name']],
      [
        'missing motor',
        ok({ '0.0': { m1: [1, 0], m2: [1, 0] }, '0.02': { m1: [1, 0] } }),
        ['positions["0.02"]', '"m2" missing'],
      ],
      [
        'extra motor',
        ok({ '0.0': { m1: [1, 0] }, '0.02': { m1: [1, 0], m7: [1, 0] } }),
        ['positions["0.02"]', '"m7" is not in the first frame'],
      ],
      ['same time twice', ok({ '0.0': { m1: [1, 0] }, '0': { m1: [2, 0] } }), ['"0"', '"0.0"', 'same time']],
    ];
    for (const [title, text, fragments] of cases) {
      it(`rejects: ${title}`, () => {
        const err = expectFormatError(() => parseMoveFile(text, 'bad.record'), 'bad.record: ', ...fragments);
        expect(err.source).to.equal('bad.record');
        expect(err.message).to.equal(`bad.record: ${err.reason}`);
      });
    }

    it('accepts exponent and integer time keys', () => {
      const move = parseMoveFile(
        ok({ '2': { m1: [1, 0] }, '1e-05': { m1: [0, 0] }, '.5': { m1: [3, 0] } }),
        'x',
      );
      expect(move.frames.map((f) => f.t)).to.deep.equal([1e-5, 0.5, 2]);
    });
  });
});
