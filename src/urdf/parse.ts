import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { UrdfGeometry, UrdfInertial, UrdfJoint, UrdfJointType, UrdfLink, UrdfRobot, UrdfShape, Vec3 } from './types.ts';
import { mulMat3, rpyToMatrix, transposeMat3, type Mat3 } from './transform.ts';
import { parseStl } from './stl.ts';

/** Reads a mesh file named by a URDF <mesh filename>: its bytes. */
export type MeshReader = (filename: string) => Uint8Array;

type XmlNode = Record<string, unknown>;
type Rgba = readonly [number, number, number, number];

const ATTR = '@_';
const ARRAY_TAGS = new Set(['link', 'joint', 'visual', 'collision', 'material']);
const JOINT_TYPES: readonly UrdfJointType[] = ['revolute', 'continuous', 'fixed', 'prismatic'];
const NUMBER_RE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: ATTR,
  parseAttributeValue: false,
  parseTagValue: false,
  isArray: (tagName, _path, _leaf, isAttribute) => !isAttribute && ARRAY_TAGS.has(tagName),
});

function isNode(v: unknown): v is XmlNode {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The single child element `tag` of `node`, if any (repeated elements: the first). */
function child(node: XmlNode, tag: string): XmlNode | undefined {
  const v = node[tag];
  const first = Array.isArray(v) ? (v[0] as unknown) : v;
  if (first === undefined) return undefined;
  // `<origin/>` parses to '' and carries no attribute.
  return isNode(first) ? first : {};
}

function children(node: XmlNode, tag: string): XmlNode[] {
  const v = node[tag];
  if (v === undefined) return [];
  const list = Array.isArray(v) ? (v as unknown[]) : [v];
  return list.map((item) => (isNode(item) ? item : {}));
}

function attr(node: XmlNode | undefined, name: string): string | undefined {
  const v = node?.[ATTR + name];
  return typeof v === 'string' ? v : undefined;
}

function parseNumber(text: string, where: string): number {
  const t = text.trim();
  if (!NUMBER_RE.test(t)) throw new Error(`URDF: ${where}: "${text}" is not a number`);
  const n = Number(t);
  if (!Number.isFinite(n)) throw new Error(`URDF: ${where}: "${text}" is not a finite number`);
  return n;
}

function parseNumbers(text: string, count: number, where: string): number[] {
  const parts = text.trim().split(/\s+/).filter((p) => p !== '');
  if (parts.length !== count) throw new Error(`URDF: ${where}: expected ${count} numbers, got "${text}"`);
  return parts.map((p) => parseNumber(p, where));
}

function parseVec3(text: string | undefined, fallback: Vec3, where: string): Vec3 {
  if (text === undefined) return fallback;
  const [x, y, z] = parseNumbers(text, 3, where) as [number, number, number];
  return [x, y, z];
}

function requiredNumber(node: XmlNode | undefined, name: string, where: string): number {
  const v = attr(node, name);
  if (v === undefined) throw new Error(`URDF: ${where}: missing attribute "${name}"`);
  return parseNumber(v, `${where} ${name}`);
}

function optionalNumber(node: XmlNode | undefined, name: string, fallback: number, where: string): number {
  const v = attr(node, name);
  return v === undefined ? fallback : parseNumber(v, `${where} ${name}`);
}

function parseOrigin(node: XmlNode, where: string): { xyz: Vec3; rpy: Vec3 } {
  const origin = child(node, 'origin');
  return {
    xyz: parseVec3(attr(origin, 'xyz'), [0, 0, 0], `${where} origin xyz`),
    rpy: parseVec3(attr(origin, 'rpy'), [0, 0, 0], `${where} origin rpy`),
  };
}

function parseRgba(text: string, where: string): Rgba {
  const [r, g, b, a] = parseNumbers(text, 4, where) as [number, number, number, number];
  return [r, g, b, a];
}

function parseInertial(node: XmlNode, where: string): UrdfInertial {
  const { xyz, rpy } = parseOrigin(node, where);
  const massNode = child(node, 'mass');
  if (!massNode) throw new Error(`URDF: ${where}: missing <mass>`);
  const mass = requiredNumber(massNode, 'value', `${where} mass`);
  if (mass < 0) throw new Error(`URDF: ${where}: negative mass ${mass}`);
  const inertiaNode = child(node, 'inertia');
  if (!inertiaNode) throw new Error(`URDF: ${where}: missing <inertia>`);
  const names = ['ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'] as const;
  const [ixx, ixy, ixz, iyy, iyz, izz] = names.map((n) => requiredNumber(inertiaNode, n, `${where} inertia`)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (rpy[0] === 0 && rpy[1] === 0 && rpy[2] === 0) return { mass, com: xyz, inertia: [ixx, ixy, ixz, iyy, iyz, izz] };
  // Express the tensor in the link frame: I_link = R I R^T.
  const r = rpyToMatrix(rpy[0], rpy[1], rpy[2]);
  const i: Mat3 = [ixx, ixy, ixz, ixy, iyy, iyz, ixz, iyz, izz];
  const l = mulMat3(mulMat3(r, i), transposeMat3(r));
  return { mass, com: xyz, inertia: [l[0], l[1], l[2], l[4], l[5], l[8]] };
}

function parseGeometry(
  node: XmlNode | undefined,
  where: string,
  readMesh: MeshReader | undefined,
  visual: boolean,
): UrdfGeometry | undefined {
  if (!node) throw new Error(`URDF: ${where}: missing <geometry>`);
  const box = child(node, 'box');
  if (box) return { kind: 'box', size: parseVec3(attr(box, 'size') ?? '', [0, 0, 0], `${where} box size`) };
  const cylinder = child(node, 'cylinder');
  if (cylinder) {
    return {
      kind: 'cylinder',
      radius: requiredNumber(cylinder, 'radius', `${where} cylinder`),
      length: requiredNumber(cylinder, 'length', `${where} cylinder`),
    };
  }
  const sphere = child(node, 'sphere');
  if (sphere) return { kind: 'sphere', radius: requiredNumber(sphere, 'radius', `${where} sphere`) };
  const mesh = child(node, 'mesh');
  if (mesh) {
    // Without a reader (URDF text alone), a mesh is left out.
    if (!readMesh) return undefined;
    const filename = attr(mesh, 'filename');
    if (!filename) throw new Error(`URDF: ${where}: <mesh> has no filename`);
    // A visual drawn from another format (COLLADA, OBJ) is left out: the view draws STL only, and what the robot
    // looks like must not keep it from starting.
    if (visual && !/\.stl$/i.test(filename)) return undefined;
    const scale = parseVec3(attr(mesh, 'scale'), [1, 1, 1], `${where} mesh scale`);
    try {
      return { kind: 'mesh', filename, triangles: parseStl(readMesh(filename), scale) };
    } catch (err) {
      throw new Error(`URDF: ${where}: mesh "${filename}": ${(err as Error).message}`, { cause: err });
    }
  }
  throw new Error(`URDF: ${where}: <geometry> has no box, cylinder, sphere or mesh`);
}

/** A visual (with its material, from the link's materials) or, without materials, a collision shape. */
function parseShape(
  node: XmlNode,
  where: string,
  materials: ReadonlyMap<string, Rgba> | undefined,
  readMesh: MeshReader | undefined,
): UrdfShape | undefined {
  const visual = materials !== undefined;
  const geometry = parseGeometry(child(node, 'geometry'), where, readMesh, visual);
  if (!geometry) return undefined;
  const { xyz, rpy } = parseOrigin(node, where);
  if (!materials) return { xyz, rpy, geometry };
  const material = child(node, 'material');
  if (!material) return { xyz, rpy, geometry };
  const color = attr(child(material, 'color'), 'rgba');
  if (color !== undefined) return { xyz, rpy, geometry, rgba: parseRgba(color, `${where} material color`) };
  const name = attr(material, 'name');
  const rgba = name === undefined ? undefined : materials.get(name);
  return rgba ? { xyz, rpy, geometry, rgba } : { xyz, rpy, geometry };
}

function parseLink(
  node: XmlNode,
  index: number,
  materials: ReadonlyMap<string, Rgba>,
  readMesh: MeshReader | undefined,
): UrdfLink {
  const name = attr(node, 'name');
  if (!name) throw new Error(`URDF: link #${index + 1} has no name`);
  const where = `link "${name}"`;
  const inertialNode = child(node, 'inertial');
  const inertial = inertialNode ? parseInertial(inertialNode, `${where} inertial`) : undefined;
  const visuals = children(node, 'visual')
    .map((v, i) => parseShape(v, `${where} visual #${i + 1}`, materials, readMesh))
    .filter((s): s is UrdfShape => s !== undefined);
  const collisions = children(node, 'collision')
    .map((c, i) => parseShape(c, `${where} collision #${i + 1}`, undefined, readMesh))
    .filter((s): s is UrdfShape => s !== undefined);
  return inertial ? { name, inertial, visuals, collisions } : { name, visuals, collisions };
}

function parseJoint(node: XmlNode, index: number, links: ReadonlyMap<string, UrdfLink>): UrdfJoint {
  const name = attr(node, 'name');
  if (!name) throw new Error(`URDF: joint #${index + 1} has no name`);
  const where = `joint "${name}"`;
  const typeText = attr(node, 'type');
  if (typeText === undefined) throw new Error(`URDF: ${where}: missing type`);
  const type = JOINT_TYPES.find((t) => t === typeText);
  if (!type) throw new Error(`URDF: ${where}: unsupported type "${typeText}" (expected ${JOINT_TYPES.join(', ')})`);
  const parent = attr(child(node, 'parent'), 'link');
  if (!parent) throw new Error(`URDF: ${where}: missing <parent link="...">`);
  const childLink = attr(child(node, 'child'), 'link');
  if (!childLink) throw new Error(`URDF: ${where}: missing <child link="...">`);
  if (!links.has(parent)) throw new Error(`URDF: ${where}: parent link "${parent}" does not exist`);
  if (!links.has(childLink)) throw new Error(`URDF: ${where}: child link "${childLink}" does not exist`);
  if (parent === childLink) throw new Error(`URDF: ${where}: parent and child are the same link "${parent}"`);
  const { xyz, rpy } = parseOrigin(node, where);
  const rawAxis = parseVec3(attr(child(node, 'axis'), 'xyz'), [1, 0, 0], `${where} axis`);
  const n = Math.hypot(...rawAxis);
  if (type !== 'fixed' && !(n > 0)) throw new Error(`URDF: ${where}: axis is zero`);
  const axis: Vec3 = n > 0 ? [rawAxis[0] / n, rawAxis[1] / n, rawAxis[2] / n] : rawAxis;
  const limitNode = child(node, 'limit');
  if (!limitNode) {
    if (type === 'revolute' || type === 'prismatic') throw new Error(`URDF: ${where}: a ${type} joint needs a <limit>`);
    return { name, type, parent, child: childLink, xyz, rpy, axis };
  }
  const lw = `${where} limit`;
  const bounded = type === 'revolute' || type === 'prismatic';
  const lower = bounded ? optionalNumber(limitNode, 'lower', 0, lw) : -Infinity;
  const upper = bounded ? optionalNumber(limitNode, 'upper', 0, lw) : Infinity;
  if (lower > upper) throw new Error(`URDF: ${where}: limit lower ${lower} is above upper ${upper}`);
  const limit = { lower, upper, effort: requiredNumber(limitNode, 'effort', lw), velocity: requiredNumber(limitNode, 'velocity', lw) };
  return { name, type, parent, child: childLink, xyz, rpy, axis, limit };
}

/** Checks that the joints form one tree and returns its root link. */
function findRoot(links: ReadonlyMap<string, UrdfLink>, joints: readonly UrdfJoint[]): string {
  const parentJoint = new Map<string, UrdfJoint>();
  for (const j of joints) {
    const other = parentJoint.get(j.child);
    if (other) throw new Error(`URDF: link "${j.child}" is the child of two joints, "${other.name}" and "${j.name}"`);
    parentJoint.set(j.child, j);
  }
  const roots = [...links.keys()].filter((l) => !parentJoint.has(l));
  if (roots.length > 1) throw new Error(`URDF: more than one root link (no parent joint): ${roots.map((r) => `"${r}"`).join(', ')}`);
  for (const start of links.keys()) {
    const seen: string[] = [];
    let link: string | undefined = start;
    while (link !== undefined) {
      const i = seen.indexOf(link);
      if (i >= 0) {
        const cycle = seen.slice(i).map((l) => `"${parentJoint.get(l)!.name}"`);
        throw new Error(`URDF: joints ${cycle.join(', ')} form a cycle through link "${link}"`);
      }
      seen.push(link);
      link = parentJoint.get(link)?.parent;
    }
  }
  const root = roots[0];
  if (root === undefined) throw new Error('URDF: no root link');
  return root;
}

/**
 * Parses and validates URDF text. Throws an Error naming the offending link or joint. Meshes are read with readMesh
 * (loadUrdf reads them beside the file): collision meshes as STL, visual ones when STL (others are not drawn);
 * without it they are left out.
 */
export function parseUrdf(xmlText: string, readMesh?: MeshReader): UrdfRobot {
  const valid = XMLValidator.validate(xmlText);
  if (valid !== true) throw new Error(`URDF: invalid XML at line ${valid.err.line}, column ${valid.err.col}: ${valid.err.msg}`);
  const doc: unknown = parser.parse(xmlText);
  const robot = isNode(doc) ? child(doc, 'robot') : undefined;
  if (!robot) throw new Error('URDF: no <robot> element');
  const name = attr(robot, 'name');
  if (!name) throw new Error('URDF: <robot> has no name');

  const materials = new Map<string, Rgba>();
  for (const m of children(robot, 'material')) {
    const mName = attr(m, 'name');
    const color = attr(child(m, 'color'), 'rgba');
    if (mName && color !== undefined) materials.set(mName, parseRgba(color, `material "${mName}" color`));
  }

  const links = new Map<string, UrdfLink>();
  children(robot, 'link').forEach((node, i) => {
    const link = parseLink(node, i, materials, readMesh);
    if (links.has(link.name)) throw new Error(`URDF: duplicate link "${link.name}"`);
    links.set(link.name, link);
  });
  if (links.size === 0) throw new Error('URDF: no <link>');

  const jointNames = new Set<string>();
  const joints = children(robot, 'joint').map((node, i) => {
    const joint = parseJoint(node, i, links);
    if (jointNames.has(joint.name)) throw new Error(`URDF: duplicate joint "${joint.name}"`);
    jointNames.add(joint.name);
    return joint;
  });

  return { name, root: findRoot(links, joints), links, joints };
}

/**
 * Where a URDF's mesh file is: "package://<package>/<path>" is looked for from the URDF's folder up (a ROS package
 * keeps its URDF in a subfolder, as Poppy's robots/ beside meshes/), "file://" is a path, anything else is relative
 * to the URDF's folder.
 */
export function meshPath(urdfFile: string, filename: string): string {
  const dir = path.dirname(path.resolve(urdfFile));
  const direct = filename.startsWith('file://') ? filename.slice('file://'.length) : undefined;
  if (direct !== undefined || !filename.startsWith('package://')) {
    const p = direct ?? path.resolve(dir, filename);
    if (!existsSync(p)) throw new Error(`not found (looked at ${p})`);
    return p;
  }
  const inPackage = filename.slice('package://'.length);
  const withoutPackage = inPackage.split('/').slice(1).join('/');
  const tried: string[] = [];
  for (let up = dir, level = 0; level < 4; level++, up = path.dirname(up)) {
    for (const candidate of [inPackage, withoutPackage]) {
      if (!candidate) continue;
      const p = path.join(up, candidate);
      if (existsSync(p)) return p;
      tried.push(p);
    }
  }
  throw new Error(`not found (looked at ${tried.join(', ')})`);
}

/** Reads and parses a URDF file, with its meshes. */
export async function loadUrdf(file: string): Promise<UrdfRobot> {
  const text = await readFile(file, 'utf8');
  try {
    // A file named twice (a link's visual and collision) is read once.
    const read = new Map<string, Uint8Array>();
    return parseUrdf(text, (filename) => {
      let bytes = read.get(filename);
      if (!bytes) read.set(filename, (bytes = readFileSync(meshPath(file, filename))));
      return bytes;
    });
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`, { cause: err });
  }
}
