import { existsSync, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { RobotError } from '../../src/core/errors.ts';
import {
  type Move,
  MoveFormatError,
  createMove,
  parseMoveFile,
  serializeMove,
} from '../../src/records/move.ts';
import { CorruptMoveError, RecordStore } from '../../src/records/store.ts';

const PYPOT_FILE = new URL('./fixtures/pypot-wave.record', import.meta.url);
const DEAD_PID = 2147483646; // above any Linux pid_max: never a live process

function makeMove(seed: number, motors = ['m1', 'm2'], frames = 5): Move {
  return createMove(
    50,
    Array.from({ length: frames }, (_, i) => ({
      t: i * 0.02,
      positions: Object.fromEntries(
        motors.map((m, j) => [m, [seed + i + j / 10, seed * 2] as [number, number]]),
      ),
    })),
  );
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

async function expectCode(p: Promise<unknown>, code: string): Promise<RobotError> {
  const err = await rejection(p);
  expect(err).to.be.instanceOf(RobotError);
  expect((err as RobotError).code).to.equal(code);
  return err as RobotError;
}

class Warnings {
  readonly messages: string[] = [];
  warn(msg: string): void {
    this.messages.push(msg);
  }
}

describe('records/store', () => {
  let root: string;
  let dir: string;

  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'poppy-records-'));
    dir = path.join(root, 'records');
  });

  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  const tempFiles = async () => (await fs.readdir(dir)).filter((f) => f.endsWith('.tmp'));

  it('creates its directory recursively on open', async () => {
    const nested = path.join(root, 'a', 'b', 'records');
    const store = new RecordStore(nested);
    await store.open();
    expect((await fs.stat(nested)).isDirectory()).to.equal(true);
    expect(await store.list()).to.deep.equal([]);
  });

  it('saves, loads, lists sorted, checks existence and deletes', async () => {
    const store = new RecordStore(dir);
    for (const name of ['b', 'a', 'C', '10', '9', 'a.b-c_d']) await store.save(name, makeMove(name.length));
    expect(await store.list()).to.deep.equal(['10', '9', 'C', 'a', 'a.b-c_d', 'b']);
    expect(await store.load('a.b-c_d')).to.deep.equal(makeMove(7));
    expect(await fs.readFile(path.join(dir, 'b.record'), 'utf8')).to.equal(serializeMove(makeMove(1)));
    expect(await store.exists('b')).to.equal(true);
    await store.delete('b');
    expect(await store.exists('b')).to.equal(false);
    expect(await store.list()).to.deep.equal(['10', '9', 'C', 'a', 'a.b-c_d']);
    await expectCode(store.load('b'), 'not_found');
    await expectCode(store.delete('b'), 'not_found');
    expect(await tempFiles()).to.deep.equal([]);
  });

  it('replaces a saved move entirely, motor list included', async () => {
    const store = new RecordStore(dir);
    await store.save('wave', makeMove(1, ['m1', 'm2', 'm3'], 10));
    await store.save('wave', makeMove(2, ['m6'], 2));
    const back = await store.load('wave');
    expect(back.motors).to.deep.equal(['m6']);
    expect(back).to.deep.equal(makeMove(2, ['m6'], 2));
  });

  it('lists and loads a move file written by pypot and dropped into the directory', async () => {
    await fs.mkdir(dir);
    await fs.copyFile(PYPOT_FILE, path.join(dir, 'wave.record'));
    const store = new RecordStore(dir);
    expect(await store.list()).to.deep.equal(['wave']);
    const move = await store.load('wave');
    expect(move.motors).to.deep.equal(['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
    expect(move.frames).to.have.length(6);
    expect(move.frames[0]!.t).to.equal(1.9073486328125e-5);
  });

  it('ignores files whose name is not a move name, and other files', async () => {
    await fs.mkdir(dir);
    const text = serializeMove(makeMove(1));
    for (const f of [
      '.hidden.record',
      'a b.record',
      '-x.record',
      'notes.txt',
      'ok.record.bak',
      'ok.record',
    ]) {
      await fs.writeFile(path.join(dir, f), text);
    }
    const store = new RecordStore(dir);
    expect(await store.list()).to.deep.equal(['ok']);
    const files = (await store.problems()).map((p) => p.file);
    expect(files).to.deep.equal(['-x.record', '.hidden.record', 'a b.record']);
  });

  describe('corrupt files', () => {
    const corrupt: Record<string, string> = {
      'empty.record': '',
      'truncated.record': '{"framerate": 50, "positions": {"0.0": {"m1": [1.5, 0',
      'types.record': '{"framerate": 50, "positions": {"0.0": {"m1": ["1.5", 0]}}}',
    };

    async function setUp(warnings?: Warnings): Promise<RecordStore> {
      const store = new RecordStore(dir, warnings);
      await store.save('good1', makeMove(1));
      await store.save('zgood2', makeMove(2));
      for (const [file, text] of Object.entries(corrupt)) await fs.writeFile(path.join(dir, file), text);
      return store;
    }

    it('are reported by name and do not hide the other moves', async () => {
      const store = await setUp();
      expect(await store.list()).to.deep.equal(['good1', 'zgood2']);
      const problems = await store.problems();
      expect(problems.map((p) => p.file)).to.deep.equal(['empty.record', 'truncated.record', 'types.record']);
      expect(problems[0]!.reason).to.include('empty');
      expect(problems[1]!.reason).to.include('not valid JSON');
      expect(problems[2]!.reason).to.include('positions["0.0"].m1').and.include('position "1.5"');
    });

    it('load with a typed error naming the file and the reason', async () => {
      const store = await setUp();
      for (const name of ['empty', 'truncated', 'types']) {
        const err = await rejection(store.load(name));
        expect(err).to.be.instanceOf(CorruptMoveError);
        const e = err as CorruptMoveError;
        expect(e.file).to.equal(`${name}.record`);
        expect(e.message).to.include(`"${name}.record"`).and.include(e.reason);
        expect(e.tip).to.not.equal('');
      }
      expect(await store.load('good1')).to.deep.equal(makeMove(1));
      // a corrupt move still exists, so it can be deleted or replaced through the API
      expect(await store.exists('types')).to.equal(true);
      await store.delete('types');
      await store.save('empty', makeMove(3));
      expect(await store.list()).to.deep.equal(['empty', 'good1', 'zgood2']);
      expect((await store.problems()).map((p) => p.file)).to.deep.equal(['truncated.record']);
    });

    it('warn once per file version', async () => {
      const warnings = new Warnings();
      const store = await setUp(warnings);
      await Promise.all([store.list(), store.list(), store.problems()]);
      await store.list();
      await rejection(store.load('types'));
      expect(warnings.messages).to.have.length(3);
      expect(warnings.messages.join('\n')).to.include('"empty.record"').and.include('"truncated.record"');
      await fs.writeFile(path.join(dir, 'types.record'), '{"framerate": 50}'); // a new version, still bad
      await store.list();
      expect(warnings.messages).to.have.length(4);
      expect(warnings.messages[3]).to.include('"types.record"').and.include('missing "positions"');
      await fs.writeFile(path.join(dir, 'types.record'), serializeMove(makeMove(4))); // repaired
      expect(await store.list()).to.include('types');
      expect(warnings.messages).to.have.length(4);
    });

    it('a directory named like a move is a problem, not a crash', async () => {
      const store = await setUp();
      await fs.mkdir(path.join(dir, 'folder.record'));
      expect(await store.list()).to.deep.equal(['good1', 'zgood2']);
      expect((await store.problems()).find((p) => p.file === 'folder.record')?.reason).to.include(
        'regular file',
      );
      expect(await rejection(store.load('folder'))).to.be.instanceOf(CorruptMoveError);
    });
  });

  describe('names', () => {
    const bad = ['../x', 'a/b', '.hidden', '', 'x'.repeat(65), 'a b', '../../etc/passwd', '/abs', 'a\0b'];

    it('are checked before anything touches the disk', async () => {
      const store = new RecordStore(dir);
      await store.open();
      for (const name of bad) {
        await expectCode(store.save(name, makeMove(1)), 'bad_request');
        await expectCode(store.load(name), 'bad_request');
        await expectCode(store.delete(name), 'bad_request');
        await expectCode(store.exists(name), 'bad_request');
      }
      expect(await fs.readdir(root)).to.deep.equal(['records']);
      expect(await fs.readdir(dir)).to.deep.equal([]);
      expect(existsSync(path.join(root, 'x.record'))).to.equal(false);
    });

    it('bad move data is refused before writing', async () => {
      const store = new RecordStore(dir);
      await store.open();
      const nan: Move = {
        framerate: 50,
        motors: ['m1'],
        frames: [{ t: 0, positions: new Map([['m1', [NaN, 0]]]) }],
      };
      expect(await rejection(store.save('nan', nan))).to.be.instanceOf(MoveFormatError);
      expect(await fs.readdir(dir)).to.deep.equal([]);
    });
  });

  describe('atomic saves', () => {
    it('temp files left by a crash are never listed and are removed by open()', async () => {
      const store = new RecordStore(dir);
      await store.save('walk', makeMove(1));
      const half = serializeMove(makeMove(2)).slice(0, 40);
      const stale = [
        `.walk.record.${DEAD_PID}.0123456789abcdef.tmp`,
        `.new.record.${process.pid}.fedcba9876543210.tmp`, // same pid, e.g. pid 1 in a container after restart
      ];
      const foreign = ['.notes.tmp', 'walk.record.tmp', `.live.record.${process.ppid}.00112233aabbccdd.tmp`];
      for (const f of [...stale, ...foreign]) await fs.writeFile(path.join(dir, f), half);

      expect(await store.list()).to.deep.equal(['walk']);
      expect(await store.problems()).to.deep.equal([]);

      const warnings = new Warnings();
      const reopened = new RecordStore(dir, warnings);
      await reopened.open();
      const left = await fs.readdir(dir);
      for (const f of stale) expect(left).to.not.include(f);
      for (const f of foreign) expect(left).to.include(f); // not ours, or a live server's save in progress
      expect(warnings.messages).to.have.length(2);
      expect(await reopened.load('walk')).to.deep.equal(makeMove(1));
    });

    it('a failed save leaves the old state and no temp file', async () => {
      const store = new RecordStore(dir);
      await store.save('keep', makeMove(1));
      await fs.mkdir(path.join(dir, 'blocked.record'));
      await fs.writeFile(path.join(dir, 'blocked.record', 'x'), 'x'); // rename over a non-empty dir fails
      const err = await expectCode(store.save('blocked', makeMove(2)), 'internal');
      expect(err.message).to.include('"blocked"');
      expect(await tempFiles()).to.deep.equal([]);
      expect(await store.list()).to.deep.equal(['keep']);
      // the store still works afterwards
      await store.save('blocked2', makeMove(3));
      expect(await store.list()).to.deep.equal(['blocked2', 'keep']);
    });

    it('concurrent saves of one name apply in call order and leave one whole file', async () => {
      const store = new RecordStore(dir);
      const moves = Array.from({ length: 12 }, (_, i) => makeMove(i, ['m1', 'm2', 'm3'], 20 + i));
      await Promise.all(moves.map((m) => store.save('same', m)));
      expect(await store.load('same')).to.deep.equal(moves[11]);
      expect(await tempFiles()).to.deep.equal([]);
    });

    it('concurrent saves from two stores (two processes) never mix files', async () => {
      const a = new RecordStore(dir);
      const b = new RecordStore(dir);
      await Promise.all([a.open(), b.open()]);
      const moves = Array.from({ length: 16 }, (_, i) => makeMove(i, ['m1', 'm2'], 50 + 7 * i));
      await Promise.all(moves.map((m, i) => (i % 2 ? a : b).save('same', m)));
      const text = await fs.readFile(path.join(dir, 'same.record'), 'utf8');
      const back = parseMoveFile(text, 'same.record');
      expect(moves.some((m) => serializeMove(m) === text)).to.equal(true);
      expect(moves).to.deep.include(back);
      expect(await tempFiles()).to.deep.equal([]);
    });

    it('a reader never sees a partly written file', async () => {
      const store = new RecordStore(dir);
      const big = (seed: number) => makeMove(seed, ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'], 1500);
      await store.save('big', big(0));
      let saving = true;
      let reads = 0;
      const reader = (async () => {
        while (saving) {
          parseMoveFile(await fs.readFile(path.join(dir, 'big.record'), 'utf8'), 'big.record'); // throws if partial
          reads++;
        }
      })();
      for (let i = 1; i <= 6; i++) await store.save('big', big(i));
      saving = false;
      await reader;
      expect(reads).to.be.greaterThan(0);
      expect(await store.load('big')).to.deep.equal(big(6));
    });

    it('a delete called after a save wins even when both are in flight', async () => {
      const store = new RecordStore(dir);
      await store.save('x', makeMove(1));
      await Promise.all([store.save('x', makeMove(2)), store.delete('x')]);
      expect(await store.exists('x')).to.equal(false);
      expect(await store.list()).to.deep.equal([]);
    });
  });
});
