/**
 * STL files (binary or ASCII) as a triangle list: x, y, z of three corners per triangle, scaled (URDF meshes are in
 * the mesh's own unit times the <mesh scale>, metres for the Poppy files).
 */

const HEADER = 80;
const BINARY_TRIANGLE = 50;

/** Parses STL bytes. Throws on a truncated binary file or a file with no triangles. */
export function parseStl(bytes: Uint8Array, scale: readonly [number, number, number] = [1, 1, 1]): Float32Array {
  const triangles = isBinary(bytes) ? binaryTriangles(bytes) : asciiTriangles(bytes);
  if (triangles.length === 0) throw new Error('STL: no triangles');
  for (let i = 0; i < triangles.length; i++) triangles[i]! *= scale[i % 3]!;
  return triangles;
}

/**
 * Binary when the size matches the triangle count in the header (ASCII files start with "solid", but so do some
 * binary ones, whose 80-byte header is free text).
 */
function isBinary(bytes: Uint8Array): boolean {
  if (bytes.length < HEADER + 4) return false;
  const count = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(HEADER, true);
  if (bytes.length === HEADER + 4 + count * BINARY_TRIANGLE) return true;
  const start = new TextDecoder().decode(bytes.subarray(0, 5));
  if (start !== 'solid') throw new Error(`STL: binary file of ${bytes.length} bytes does not hold its ${count} triangles`);
  return false;
}

function binaryTriangles(bytes: Uint8Array): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = view.getUint32(HEADER, true);
  const out = new Float32Array(count * 9);
  for (let t = 0; t < count; t++) {
    // Each record: normal (3 floats, recomputed by whoever needs it), 3 corners, 2 attribute bytes.
    const at = HEADER + 4 + t * BINARY_TRIANGLE + 12;
    for (let k = 0; k < 9; k++) out[t * 9 + k] = view.getFloat32(at + 4 * k, true);
  }
  return out;
}

function asciiTriangles(bytes: Uint8Array): Float32Array {
  const text = new TextDecoder().decode(bytes);
  const corners: number[] = [];
  for (const m of text.matchAll(/vertex\s+(\S+)\s+(\S+)\s+(\S+)/g)) {
    const xyz = [m[1], m[2], m[3]].map(Number);
    if (xyz.some((v) => !Number.isFinite(v))) throw new Error(`STL: bad vertex "${m[0]}"`);
    corners.push(...xyz);
  }
  if (corners.length % 9 !== 0) throw new Error('STL: a facet does not have three vertices');
  return Float32Array.from(corners);
}

/** Binary STL bytes of a triangle list (the tests' meshes; a generator's output). */
export function writeStl(triangles: Float32Array | readonly number[], header = 'generated'): Uint8Array {
  if (triangles.length % 9 !== 0) throw new Error('STL: triangles must be 9 numbers each');
  const count = triangles.length / 9;
  const bytes = new Uint8Array(HEADER + 4 + count * BINARY_TRIANGLE);
  bytes.set(new TextEncoder().encode(header.slice(0, HEADER)));
  const view = new DataView(bytes.buffer);
  view.setUint32(HEADER, count, true);
  for (let t = 0; t < count; t++) {
    const p = (k: number) => triangles[t * 9 + k]!;
    const u = [p(3) - p(0), p(4) - p(1), p(5) - p(2)];
    const v = [p(6) - p(0), p(7) - p(1), p(8) - p(2)];
    const n = [u[1]! * v[2]! - u[2]! * v[1]!, u[2]! * v[0]! - u[0]! * v[2]!, u[0]! * v[1]! - u[1]! * v[0]!];
    const length = Math.hypot(n[0]!, n[1]!, n[2]!) || 1;
    const at = HEADER + 4 + t * BINARY_TRIANGLE;
    for (let k = 0; k < 3; k++) view.setFloat32(at + 4 * k, n[k]! / length, true);
    for (let k = 0; k < 9; k++) view.setFloat32(at + 12 + 4 * k, p(k), true);
  }
  return bytes;
}
