/**
 * `npm run bench -- fidelity`: the identification testbench per servo model, twin vs a one-joint reference
 * integration of the published model (docs/reference/servo-models.md), as a table.
 */
import {
  FIDELITY_MODELS,
  measure,
  modelFigures,
  runReference,
  runTwin,
  trajectoryRms,
  type Figures,
} from '../src/lab/fidelity.ts';
import {
  HOLD_ANGLES,
  HOLD_LIMITS,
  REFERENCE,
  ROBOT_LINKS,
  TWIN,
  drop,
  hold,
  noLoadStep,
} from '../src/lab/drop-hold.ts';

type Row = Omit<Figures, 'rms'>;

const COLUMNS: [keyof Row, string, number][] = [
  ['noLoadSpeed', 'no-load deg/s', 0],
  ['stallTorque', 'stall N.m', 3],
  ['speedAtHalfStall', '50% stall deg/s', 0],
  ['overshoot', 'overshoot deg', 2],
  ['settling', 'settling s', 3],
  ['holdError', 'hold error deg', 2],
  ['dropTime', 'drop s', 3],
];

export async function runFidelityBench(): Promise<void> {
  console.log(
    '\n== Servo fidelity: pendulum on one servo, twin (Rapier + servo model) vs reference (the equations) ==',
  );
  for (const model of FIDELITY_MODELS) {
    const twin = await measure(model, (load, p) => runTwin(model, load, p));
    const ref = await measure(model, (load, p) => runReference(model, load, p));
    const info = modelFigures(model);
    console.log(
      `\n${model} (${info.source}; motor line: stall ${info.stall.toFixed(3)} N.m, no-load ${info.noLoadDegS.toFixed(0)} deg/s)`,
    );
    console.log(
      `      ${'figure'.padEnd(18)} ${'twin'.padStart(10)} ${'reference'.padStart(10)}   ${'diff'.padEnd(8)} ${'datasheet'.padStart(10)}`,
    );
    const percent = (a: number, b: number) => `${(((a - b) / Math.abs(b)) * 100).toFixed(1)} %`;
    // The datasheet is the yardstick of a derived model; a measured one shows how far the real servo is from it.
    const datasheet: Partial<Record<keyof Row, number>> = {
      noLoadSpeed: info.datasheet.noLoadDegS,
      stallTorque: info.datasheet.stallTorque,
    };
    for (const [key, label, digits] of COLUMNS) {
      const t = twin[key];
      const r = ref[key];
      const diff =
        key === 'overshoot' || key === 'settling'
          ? `${(t - r).toFixed(2)} ${key === 'overshoot' ? 'deg' : 's'}`
          : percent(t, r);
      const d = datasheet[key];
      console.log(
        `      ${label.padEnd(18)} ${t.toFixed(digits).padStart(10)} ${r.toFixed(digits).padStart(10)}   ${diff.padEnd(8)} ${d === undefined ? '' : `${d.toFixed(digits).padStart(10)} (twin ${percent(t, d)})`}`.trimEnd(),
      );
    }
    const rms = await trajectoryRms(model);
    console.log(
      `      trajectory RMS twin vs reference (deg): lift-and-drop ${rms.liftAndDrop.toFixed(2)}, step ${rms.step.toFixed(2)}, sine ${rms.sine.toFixed(2)}, chirp ${rms.chirp.toFixed(2)}`,
    );
  }
}

/** Drop, hold and no-load step on links sized like the robots' own (src/lab/drop-hold.ts): twin, reference, ratio. */
export async function runDropHoldBench(): Promise<void> {
  const cell = (t: number, r: number, d = 1) =>
    `${t.toFixed(d).padStart(7)} ${r.toFixed(d).padStart(7)} ${(Number.isFinite(r) && r !== 0 ? (t / r).toFixed(3) : '-').padStart(6)}`;
  console.log('\n== Drop (limp from horizontal), no-load step: twin, reference, ratio ==');
  console.log(
    `      ${'model'.padEnd(7)} ${'link'.padEnd(34)} ${'final deg off hanging'.padEnd(22)} ${'fall 90->45 s'.padEnd(22)} ${'peak deg/s'.padEnd(22)} no-load step deg/s`,
  );
  for (const model of FIDELITY_MODELS) {
    const link = ROBOT_LINKS[model];
    const t = await drop(model, TWIN);
    const r = await drop(model, REFERENCE);
    console.log(
      `      ${model.padEnd(7)} ${`${link.name} ${link.mass} kg at ${link.length} m`.padEnd(34)} ${cell(t.final, r.final)} ${cell(t.fallTime, r.fallTime, 3)} ${cell(t.peakSpeed, r.peakSpeed, 0)} ${cell(await noLoadStep(model, TWIN), await noLoadStep(model, REFERENCE), 0)}`,
    );
  }
  console.log(
    '\n== Hold at a torque limit: where the link ends, deg off hanging (twin, reference, ratio) ==',
  );
  console.log(
    `      ${'model'.padEnd(7)} ${'limit'.padEnd(6)} ${HOLD_ANGLES.map((a) => `goal ${a}`.padEnd(23)).join(' ')}`,
  );
  for (const model of FIDELITY_MODELS)
    for (const limit of HOLD_LIMITS) {
      const cells: string[] = [];
      for (const angle of HOLD_ANGLES)
        cells.push(
          cell(await hold(model, TWIN, limit, angle), await hold(model, REFERENCE, limit, angle), 2),
        );
      console.log(`      ${model.padEnd(7)} ${`${limit} %`.padEnd(6)} ${cells.join(' ')}`);
    }
}
