/**
 * The vertices of a COLLADA (.dae) scene, placed where its scene puts them, in metres: what urdf/fit-collisions.ts
 * measures of the Ergo Jr's meshes (only vertices matter to a bounding polytope or a convex hull).
 */
import { XMLParser } from 'fast-xml-parser';

type XmlNode = Record<string, unknown>;
/** A 4x4 transform, row-major as COLLADA writes it (column vectors). */
type Mat4 = readonly number[];

const IDENTITY4: Mat4 = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1];
const ARRAYS = new Set(['node', 'geometry', 'source', 'input', 'instance_geometry', 'instance_node', 'visual_scene', 'matrix']);

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  parseTagValue: false,
  parseAttributeValue: false,
  isArray: (tag, _path, _leaf, isAttribute) => !isAttribute && ARRAYS.has(tag),
});

const list = (v: unknown): XmlNode[] => (Array.isArray(v) ? (v as XmlNode[]) : []);
const text = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'object' && v ? String((v as XmlNode)['#text'] ?? '') : '');
const numbers = (v: unknown): number[] => text(v).trim().split(/\s+/).filter(Boolean).map(Number);

function mul(a: Mat4, b: Mat4): Mat4 {
  const out: number[] = [];
  for (let r = 0; r < 4; r++) for (let c = 0; c < 4; c++) out.push([0, 1, 2, 3].reduce((s, k) => s + a[r * 4 + k]! * b[k * 4 + c]!, 0));
  return out;
}

/** Every vertex position (x, y, z, ...) of every geometry the default scene instantiates, in metres. */
export function colladaVertices(xml: string): number[] {
  const root = (parser.parse(xml) as XmlNode).COLLADA as XmlNode | undefined;
  if (!root) throw new Error('not a COLLADA document');
  const asset = root.asset as XmlNode | undefined;
  const unit = Number((asset?.unit as XmlNode | undefined)?.['@_meter'] ?? 1);
  const up = text(asset?.up_axis).trim() || 'Y_UP';
  if (up !== 'Z_UP') throw new Error(`COLLADA ${up}: only Z_UP is read (as URDF tools read these meshes)`);
  const byId = new Map<string, XmlNode>();
  const index = (nodes: XmlNode[]) => {
    for (const n of nodes) {
      if (typeof n['@_id'] === 'string') byId.set(n['@_id'], n);
      index(list(n.node));
    }
  };
  index(list((root.library_nodes as XmlNode | undefined)?.node));
  const scenes = list((root.library_visual_scenes as XmlNode | undefined)?.visual_scene);
  for (const s of scenes) index(list(s.node));
  const geometries = new Map(list((root.library_geometries as XmlNode | undefined)?.geometry).map((g) => [g['@_id'] as string, g]));

  const positions = (id: string): number[] => {
    const mesh = geometries.get(id)?.mesh as XmlNode | undefined;
    if (!mesh) throw new Error(`COLLADA: no mesh geometry #${id}`);
    const input = list((mesh.vertices as XmlNode | undefined)?.input).find((i) => i['@_semantic'] === 'POSITION');
    const sourceId = String(input?.['@_source'] ?? '').replace(/^#/, '');
    const source = list(mesh.source).find((s) => s['@_id'] === sourceId);
    const values = numbers(source?.float_array);
    if (!source || values.length % 3 !== 0) throw new Error(`COLLADA: geometry #${id} has no XYZ positions`);
    return values;
  };

  const out: number[] = [];
  const visit = (node: XmlNode, parent: Mat4, depth: number) => {
    if (depth > 64) throw new Error('COLLADA: nodes nested too deep (a cycle?)');
    for (const tag of ['translate', 'rotate', 'scale', 'lookat', 'skew'])
      if (tag in node) throw new Error(`COLLADA: <${tag}> is not read (only <matrix>)`);
    let m = parent;
    for (const matrix of list(node.matrix)) {
      const values = numbers(matrix);
      if (values.length !== 16) throw new Error('COLLADA: a <matrix> without 16 numbers');
      m = mul(m, values);
    }
    for (const g of list(node.instance_geometry)) {
      const p = positions(String(g['@_url']).replace(/^#/, ''));
      for (let i = 0; i < p.length; i += 3)
        for (let r = 0; r < 3; r++) out.push(unit * (m[r * 4]! * p[i]! + m[r * 4 + 1]! * p[i + 1]! + m[r * 4 + 2]! * p[i + 2]! + m[r * 4 + 3]!));
    }
    for (const i of list(node.instance_node)) {
      const target = byId.get(String(i['@_url']).replace(/^#/, ''));
      if (!target) throw new Error(`COLLADA: no node ${String(i['@_url'])}`);
      visit(target, m, depth + 1);
    }
    for (const child of list(node.node)) visit(child, m, depth + 1);
  };
  const sceneUrl = String(((root.scene as XmlNode | undefined)?.instance_visual_scene as XmlNode | undefined)?.['@_url'] ?? '');
  const scene = scenes.find((s) => `#${String(s['@_id'])}` === sceneUrl) ?? scenes[0];
  if (!scene) throw new Error('COLLADA: no visual scene');
  for (const n of list(scene.node)) visit(n, IDENTITY4, 0);
  return out;
}
