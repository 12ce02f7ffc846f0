/** Robots as users hold them, for shadow mode's tests and soak: which joints are limp, where hands and gotos go. */

/** A robot as users hold it, user degrees: the pose it stands in, its limp joints' hand ranges, the gotos' ranges. */
export interface HoldPlan {
  readonly robot: string;
  readonly stand: Readonly<Record<string, number>>;
  readonly hand: Readonly<Record<string, readonly [number, number]>>;
  readonly gotos: Readonly<Record<string, readonly [number, number]>>;
}

export const ERGO_JR_HELD: HoldPlan = {
  robot: 'ergo-jr',
  stand: { m1: 0, m2: 0, m3: 0, m4: 0, m5: 0, m6: 0 },
  hand: { m4: [-60, 60], m5: [-40, 40], m6: [-40, 40] },
  gotos: { m1: [-40, 40], m2: [-40, 10], m3: [-30, 30] },
};

export const TORSO_HELD: HoldPlan = {
  robot: 'torso',
  stand: Object.fromEntries(
    ['abs_z', 'bust_y', 'bust_x', 'head_z', 'head_y', 'l_shoulder_y', 'l_shoulder_x', 'l_arm_z', 'l_elbow_y']
      .concat(['r_shoulder_y', 'r_shoulder_x', 'r_arm_z', 'r_elbow_y'])
      .map((m) => [m, 0]),
  ),
  hand: {
    head_z: [-40, 40],
    head_y: [-15, 15],
    l_shoulder_y: [-60, 0],
    l_shoulder_x: [5, 30],
    l_arm_z: [-30, 30],
    // Bent further with the arm hanging, the forearm meets the table.
    l_elbow_y: [0, 25],
  },
  gotos: {
    abs_z: [-30, 30],
    bust_y: [-10, 10],
    bust_x: [-10, 10],
    r_shoulder_y: [-60, 0],
    r_shoulder_x: [-30, -5],
    r_arm_z: [-30, 30],
    r_elbow_y: [10, 70],
  },
};
