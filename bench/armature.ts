/** `npm run bench -- armature`: the armature probe of src/lab/armature-probe.ts as a table. */
import { pathToFileURL } from 'node:url';
import { type ChainMode, referenceJoint1, runChain, runPendulum } from '../src/lab/armature-probe.ts';
import { OFF_AXIS_ARMATURE_SHARE } from '../src/sim/build-world.ts';

export async function runArmatureBench(): Promise<void> {
  console.log(
    '\n== Armature: a light 4-joint XL-320 chain, joint 1 sent 60 degrees, then joint 0 (bench/armature.ts) ==',
  );
  const ref = referenceJoint1(0.5);
  console.log(
    `      one-joint reference: ${ref[49]!.toFixed(1)} / ${ref[99]!.toFixed(1)} / ${ref[199]!.toFixed(1)} deg at 0.1 / 0.2 / 0.4 s, peak ${Math.max(...ref).toFixed(1)}`,
  );
  console.log(
    `      ${'joints'.padEnd(18)} ${'off-axis'.padStart(8)}  ${'at 0.1 / 0.2 / 0.4 s'.padStart(22)} ${'peak'.padStart(6)} ${'RMS vs ref'.padStart(10)}  ${'worst after joint 0'.padStart(19)}`,
  );
  const runs: [ChainMode, number][] = [
    ['impulse', 0],
    ['impulse', 0.01],
    ['impulse', OFF_AXIS_ARMATURE_SHARE],
    ['impulse', 0.1],
    ['impulse', 1],
    ['multibody-motor', 0],
    ['multibody-torque', 0],
  ];
  for (const [mode, share] of runs) {
    const r = await runChain(mode, share);
    console.log(
      `      ${mode.padEnd(18)} ${`${(share * 100).toFixed(0)} %`.padStart(8)}  ${r.at
        .map((a) => a.toFixed(1))
        .join(' / ')
        .padStart(
          22,
        )} ${r.peak.toFixed(1).padStart(6)} ${r.rms.toFixed(1).padStart(10)}  ${r.worstAfterBase.toFixed(0).padStart(19)}${mode === 'impulse' && share === OFF_AXIS_ARMATURE_SHARE ? '   <- the twin' : ''}`,
    );
  }
  for (const mode of ['impulse', 'multibody'] as const) {
    const p = await runPendulum(mode);
    console.log(`      pendulum, ${mode} joint: angular acceleration ${p.ratio.toFixed(3)}x m g l / I`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runArmatureBench();
