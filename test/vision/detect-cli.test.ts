/** `npm run detect -- picture`: the detector on PNG and JPEG files, as a user runs it on their camera's frames. */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import jpeg from 'jpeg-js';
import { detectMarkers } from '../../src/vision/detect.ts';
import { encodePng } from '../../src/vision/png.ts';
import { ergoJrView } from './views.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

function detect(...files: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/vision/detect-cli.ts', ...files], {
      cwd: ROOT,
      env: { ...process.env, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The corners printed on a marker's line, as numbers. */
function corners(line: string): number[] {
  const part = line.slice(line.indexOf('corners'), line.indexOf('centre'));
  return [...part.matchAll(/-?\d+\.\d/g)].map((m) => Number(m[0]));
}

describe('npm run detect', function () {
  this.timeout(60000);
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'detect-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints the ids and corners found in a PNG and in a JPEG', async () => {
    const view = await ergoJrView();
    view.hold('lapin', { distance: 0.3, x: 0.04, roll: 0.4 });
    const frame = view.camera.render();
    const [truth] = detectMarkers(frame);
    expect(truth!.name).to.equal('lapin');
    const png = path.join(dir, 'view.png');
    const jpg = path.join(dir, 'view.jpg');
    await writeFile(png, encodePng(frame));
    const rgba = new Uint8Array(frame.width * frame.height * 4);
    for (let p = 0; p < frame.width * frame.height; p++) {
      rgba.set(frame.rgb.subarray(p * 3, p * 3 + 3), p * 4);
      rgba[p * 4 + 3] = 255;
    }
    await writeFile(jpg, jpeg.encode({ data: rgba, width: frame.width, height: frame.height }, 85).data);
    const out = await detect(png, jpg);
    expect(out.code, out.stderr).to.equal(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines[0]).to.equal(`${png}: 640x480, 1 marker`);
    expect(lines[1]).to.contain(`id ${truth!.id} (lapin)`);
    expect(corners(lines[1]!)).to.deep.equal(truth!.corners.flat().map((v) => Number(v.toFixed(1))));
    expect(lines[2]).to.equal(`${jpg}: 640x480, 1 marker`);
    expect(lines[3]).to.contain(`id ${truth!.id} (lapin)`);
    // JPEG moves the edges a little, not the corners' places.
    corners(lines[3]!).forEach((v, k) => expect(v).to.be.closeTo(truth!.corners.flat()[k]!, 1.5));
  });

  it('says so when a picture has no marker', async () => {
    const view = await ergoJrView();
    const file = path.join(dir, 'empty.png');
    await writeFile(file, encodePng(view.camera.render()));
    const out = await detect(file);
    expect(out.code).to.equal(0);
    expect(out.stdout.trim()).to.equal(`${file}: 640x480, 0 markers`);
  });

  it('stops with one line for a file that is not a picture, a damaged one, or a missing one', async () => {
    const text = path.join(dir, 'notes.jpg');
    await writeFile(text, 'these are my notes, not a photo\n');
    const broken = path.join(dir, 'broken.png');
    await writeFile(
      broken,
      Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), Buffer.alloc(40, 7)]),
    );
    for (const [file, message] of [
      [text, `error: ${text} is not a PNG or JPEG picture`],
      [broken, `error: ${broken} is a damaged PNG picture`],
      [path.join(dir, 'missing.png'), `error: cannot read ${path.join(dir, 'missing.png')}`],
    ] as const) {
      const out = await detect(file);
      expect(out.code).to.equal(2);
      expect(out.stdout).to.equal('');
      expect(out.stderr.trim().split('\n')).to.have.length(1);
      expect(out.stderr).to.contain(message);
    }
  });
});
