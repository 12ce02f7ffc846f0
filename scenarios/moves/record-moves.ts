/**
 * Makes the example moves of the scenarios by recording them on the twin: the motors are made stiff, follow
 * minimum-jerk gotos through the waypoints below while /records/<move>/record.json samples them at 50 Hz, and the
 * saved pypot .record file is written here. Our own data: re-run to regenerate.
 * Run: npx tsx scenarios/moves/record-moves.ts
 */
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openTwin } from '../../src/scenario/twin.ts';

/** [seconds, {motor: user degrees}]: each waypoint is reached by a goto of that duration. */
type Waypoints = [number, Record<string, number>][];

const MOVES: { robot: string; file: string; waypoints: Waypoints }[] = [
  {
    robot: 'ergo-jr',
    file: 'ergo-jr-wave.record',
    waypoints: [
      [0.8, { m1: 0, m2: -30, m3: -10, m4: 0, m5: -20, m6: 0 }],
      [0.7, { m4: 30, m6: -25 }],
      [0.7, { m4: -30, m6: 25 }],
      [0.7, { m4: 30, m6: -25 }],
      [0.7, { m4: -30, m6: 25 }],
      [0.9, { m1: 0, m2: -90, m3: 35, m4: 0, m5: 55, m6: -5 }],
    ],
  },
  {
    robot: 'torso',
    file: 'torso-two-arms.record',
    waypoints: [
      [
        1.2,
        {
          l_shoulder_x: 40,
          r_shoulder_x: -40,
          l_elbow_y: -60,
          r_elbow_y: 60,
          l_shoulder_y: -30,
          r_shoulder_y: -30,
        },
      ],
      [0.8, { l_shoulder_y: -70, r_shoulder_y: -70, head_z: 20 }],
      [0.8, { l_shoulder_y: -30, r_shoulder_y: -30, head_z: -20 }],
      [
        1.2,
        {
          l_shoulder_x: 0,
          r_shoulder_x: 0,
          l_elbow_y: 0,
          r_elbow_y: 0,
          l_shoulder_y: 0,
          r_shoulder_y: 0,
          head_z: 0,
        },
      ],
    ],
  },
];

const here = path.dirname(fileURLToPath(import.meta.url));

for (const { robot, file, waypoints } of MOVES) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'record-moves-'));
  const twin = await openTwin(robot, { recordsDir: dir });
  try {
    const motors = [...new Set(waypoints.flatMap(([, w]) => Object.keys(w)))];
    for (const m of motors) twin.robot.motor(m).set('compliant', false);
    await twin.advance(0.5);
    const name = path.basename(file, '.record');
    const answer = await twin.post(`/records/${name}/record.json`, { motors });
    if (answer.statusCode !== 200) throw new Error(answer.body);
    for (const [seconds, pose] of waypoints) {
      const targets = new Map(Object.entries(pose).map(([m, deg]) => [twin.robot.motor(m), deg]));
      let arrived = false;
      void twin.robot.goto(targets, seconds).done.then(() => (arrived = true));
      while (!arrived) await twin.advance(0.02);
    }
    await twin.advance(0.1);
    const saved = await twin.post(`/records/${name}/save.json`);
    if (saved.statusCode !== 200) throw new Error(saved.body);
    await copyFile(path.join(dir, file), path.join(here, file));
    console.log(`${robot}: ${file} (${motors.join(', ')})`);
  } finally {
    await twin.close();
    await rm(dir, { recursive: true, force: true });
  }
}
