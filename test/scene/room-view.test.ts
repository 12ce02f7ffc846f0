/**
 * Every robot's camera sees a world with structure (issue 33): at its start pose, after it slumps, and at ten
 * seeded random poses, the realistic frame has contrast and edges, where an empty world gave a flat field or a
 * plain gradient.
 */
import { expect } from 'chai';
import { BUILTIN_ROBOTS, loadRobotConfig } from '../../src/config/robot-config.ts';
import type { Frame } from '../../src/core/backend.ts';
import { mulberry32 } from '../../src/core/prng.ts';
import { SimBackend } from '../../src/sim/backend.ts';
import { loadUrdf } from '../../src/urdf/parse.ts';

/** Grey-level spread and the share of pixels on an edge (a step of more than 12 grey levels to a neighbour). */
export function structure(frame: Frame): { std: number; edges: number } {
  const { width, height, rgb } = frame;
  const grey = new Float32Array(width * height);
  let sum = 0;
  for (let i = 0; i < grey.length; i++) {
    grey[i] = 0.299 * rgb[i * 3]! + 0.587 * rgb[i * 3 + 1]! + 0.114 * rgb[i * 3 + 2]!;
    sum += grey[i]!;
  }
  const mean = sum / grey.length;
  let variance = 0;
  let edges = 0;
  for (let y = 0; y < height - 1; y++)
    for (let x = 0; x < width - 1; x++) {
      const i = y * width + x;
      variance += (grey[i]! - mean) ** 2;
      if (Math.abs(grey[i + 1]! - grey[i]!) + Math.abs(grey[i + width]! - grey[i]!) > 12) edges++;
    }
  return { std: Math.sqrt(variance / grey.length), edges: edges / grey.length };
}

function expectStructure(frame: Frame, what: string): void {
  const s = structure(frame);
  expect(s.std, `${what}: grey-level spread`).to.be.above(10);
  expect(s.edges, `${what}: share of edge pixels`).to.be.above(0.004);
}

describe('the twin camera sees a room (realistic frames)', function () {
  this.timeout(120_000);

  it('a plain gradient and a flat field fail the structure check', () => {
    const width = 64,
      height = 48;
    const gradient = new Uint8Array(width * height * 3).map((_, i) => 214 - Math.floor(i / (width * 3)));
    expect(structure({ width, height, rgb: gradient }).edges).to.equal(0);
    expect(structure({ width, height, rgb: new Uint8Array(width * height * 3).fill(120) }).std).to.equal(0);
  });

  for (const robot of BUILTIN_ROBOTS) {
    it(`${robot}: start pose, slumped, and ten random poses`, async () => {
      const config = await loadRobotConfig(robot);
      const urdf = await loadUrdf(config.urdfPath);
      const sim = new SimBackend({ config, urdf, speed: 'manual' });
      await sim.open();
      try {
        const camera = sim.camera!;
        await camera.prepare();
        expect(camera.realistic).to.equal(true);
        expectStructure(camera.render(), 'start pose');
        await sim.advance(2);
        expectStructure(camera.render(), 'slumped');
        // Random poses within the joint limits; one that presses the lens against the robot's body or the table
        // (half the picture nearer than 10 cm, where the fixed-focus lens blurs by 3.5 px and more: a real camera
        // sees a blur there too) is drawn again, a few times at most.
        const rand = mulberry32(33);
        let blocked = 0;
        for (let k = 0; k < 10;) {
          const pose = new Map(
            config.motors.map((m) => [m.id, m.angleLimit[0] + rand() * (m.angleLimit[1] - m.angleLimit[0])]),
          );
          sim.simulation.setPose(pose);
          const frame = camera.render();
          if (camera.lastExposure!.medianDepth < 0.1) {
            blocked++;
            continue;
          }
          expectStructure(frame, `random pose ${k} ${JSON.stringify([...pose])}`);
          k++;
        }
        expect(blocked, 'poses with the lens against the body').to.be.below(10);
      } finally {
        await sim.close();
      }
    });
  }
});
