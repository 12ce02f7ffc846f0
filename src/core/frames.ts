/**
 * The one place that owns the three angle frames of a motor (docs/reference/robots.md 0):
 * - raw (deg): what the servo's position register means; 0 = middle of the encoder range.
 * - user (deg): what REST exposes. user = raw * s - offset, s = +1 (direct) or -1 (indirect).
 * - joint (rad): the URDF joint variable. joint = raw in radians (our URDFs are written so that no axis flip is needed).
 */

export type Orientation = 'direct' | 'indirect';

export interface AngleFrame {
  readonly orientation: Orientation;
  /** Degrees. */
  readonly offset: number;
}

const DEG = Math.PI / 180;

export function sign(frame: AngleFrame): 1 | -1 {
  return frame.orientation === 'direct' ? 1 : -1;
}

export function rawToUser(frame: AngleFrame, rawDeg: number): number {
  return rawDeg * sign(frame) - frame.offset;
}

export function userToRaw(frame: AngleFrame, userDeg: number): number {
  return (userDeg + frame.offset) * sign(frame);
}

/** Speeds, loads: oriented but not offset. */
export function orientRaw(frame: AngleFrame, rawValue: number): number {
  return rawValue * sign(frame);
}

export function userToJoint(frame: AngleFrame, userDeg: number): number {
  return userToRaw(frame, userDeg) * DEG;
}

export function jointToUser(frame: AngleFrame, jointRad: number): number {
  return rawToUser(frame, jointRad / DEG);
}

export function degToRad(deg: number): number {
  return deg * DEG;
}

export function radToDeg(rad: number): number {
  return rad / DEG;
}
