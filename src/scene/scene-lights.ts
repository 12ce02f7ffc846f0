/**
 * The physical picture's light: the scene's ambient and point lights gathered in camera space, and the light they
 * bring to a point of a surface (Lambert; lamps fall off with the square of the distance, softened by their size).
 */
import * as THREE from 'three';

/** A lamp of intensity 1 lights a surface facing it this far away to white (inverse square around it). */
const LAMP_REFERENCE = 1.5;
/** A lamp is a panel, not a point: its light stays finite next to it (squared size, m^2). */
const LAMP_SIZE2 = 0.3 * 0.3;

/** The scene's lights in camera space (linear colour x intensity). */
export interface Lights {
  ambient: [number, number, number];
  points: { x: number; y: number; z: number; r: number; g: number; b: number }[];
}

/** A surface point in camera space (z = -d) and the light reaching it, per channel, written by `lightPoint`. */
export interface LitPoint {
  x: number;
  y: number;
  d: number;
  lr: number;
  lg: number;
  lb: number;
}

const lampPosition = new THREE.Vector3();

export function collectLights(scene: THREE.Object3D, camera: THREE.Camera): Lights {
  const lights: Lights = { ambient: [0, 0, 0], points: [] };
  let any = false;
  scene.traverseVisible((object) => {
    if (object instanceof THREE.AmbientLight) {
      any = true;
      lights.ambient[0] += object.color.r * object.intensity;
      lights.ambient[1] += object.color.g * object.intensity;
      lights.ambient[2] += object.color.b * object.intensity;
    } else if (object instanceof THREE.PointLight) {
      any = true;
      const p = lampPosition
        .setFromMatrixPosition(object.matrixWorld)
        .applyMatrix4(camera.matrixWorldInverse);
      const k = object.intensity * LAMP_REFERENCE * LAMP_REFERENCE;
      lights.points.push({
        x: p.x,
        y: p.y,
        z: p.z,
        r: object.color.r * k,
        g: object.color.g * k,
        b: object.color.b * k,
      });
    }
  });
  // A scene without lights is seen in plain white light.
  if (!any) lights.ambient = [1, 1, 1];
  return lights;
}

/** The light reaching `v` on a surface of unit normal (nx, ny, nz), into its lr lg lb. */
export function lightPoint(v: LitPoint, nx: number, ny: number, nz: number, lights: Lights): void {
  let r = lights.ambient[0],
    g = lights.ambient[1],
    b = lights.ambient[2];
  const vz = -v.d;
  for (const l of lights.points) {
    const dx = l.x - v.x,
      dy = l.y - v.y,
      dz = l.z - vz;
    const d2 = dx * dx + dy * dy + dz * dz;
    const cos = (nx * dx + ny * dy + nz * dz) / Math.sqrt(d2);
    if (cos <= 0) continue;
    const k = cos / (d2 + LAMP_SIZE2);
    r += l.r * k;
    g += l.g * k;
    b += l.b * k;
  }
  v.lr = r;
  v.lg = g;
  v.lb = b;
}
