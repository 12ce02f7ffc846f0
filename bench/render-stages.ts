/**
 * `npx tsx bench/render-stages.ts [frames]`: the realistic 640x480 frame of the vision bench (a card at 0.25 m,
 * turned 17 degrees) stage by stage, CPU median per stage (this process, all threads) over N frames: a still view
 * (each frame draws only new noise), the card turning a little every frame (the rectangle it covers is drawn
 * again), then the robot's base turning a little every frame (the camera moves: everything is drawn again).
 */
import { loadRobotConfig } from '../src/config/robot-config.ts';
import { Rasterizer } from '../src/scene/rasterizer.ts';
import { CameraModel } from '../src/scene/camera-model.ts';
import { PngEncoder } from '../src/vision/png.ts';
import { userToJoint } from '../src/core/frames.ts';
import { ergoJrView } from '../test/vision/views.ts';

const n = Number(process.argv[2] ?? 100);
const view = await ergoJrView({ realistic: true });
const config = await loadRobotConfig('ergo-jr');
const [width, height] = config.camera!.resolution;
const raster = new Rasterizer(width, height);
const model = new CameraModel(width, height, config.camera!.fov, config.camera!.fps, config.camera!.realism!);
const scene = view.camera.scene;
const png = new PngEncoder();
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (a: number[]) => a.sort((x, y) => x - y)[a.length >> 1]!;

const angles = new Map(config.motors.map((m) => [m.name, userToJoint(m, view.pose[m.name] ?? 0)]));
const base = angles.get('m1')!;
const cases = {
  'still view': () => {},
  'card turning every frame': (i: number) => {
    view.hold('tetris', { distance: 0.25, yaw: 0.3 + (i % 2) * 0.01 });
  },
  'base turning every frame (camera moving)': (i: number) => {
    angles.set('m1', base + (i % 2) * 0.002);
    scene.setJointAngles(angles);
  },
};
for (const [name, move] of Object.entries(cases)) {
  view.hold('tetris', { distance: 0.25, yaw: 0.3 });
  angles.set('m1', base);
  scene.setJointAngles(angles);
  const stages: Record<string, number[]> = { raster: [], model: [], png: [], total: [] };
  let bytes = 0;
  for (let i = 0; i < n + 5; i++) {
    move(i);
    const t0 = cpu();
    const image = raster.renderLinear(scene.scene, scene.camera!, model.renderFocal);
    const t1 = cpu();
    const frame = model.capture(image, i);
    const t2 = cpu();
    bytes = png.encode(frame).length;
    const t3 = cpu();
    if (i < 5) continue;
    stages.raster!.push(t1 - t0);
    stages.model!.push(t2 - t1);
    stages.png!.push(t3 - t2);
    stages.total!.push(t3 - t0);
  }
  console.log(`${name}:`);
  for (const [k, v] of Object.entries(stages)) console.log(`  ${k.padEnd(8)} ${median(v).toFixed(2)} ms`);
  console.log(`  png ${bytes} bytes; focus blur ${model.lastExposure!.focusBlur.toFixed(2)} px`);
}
