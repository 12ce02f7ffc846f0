/**
 * The import-boundary rule: the rooms of src/ stand on floors, and a module imports only from its own room or from
 * a room on a lower floor, so no import runs back up and no two rooms import each other. The floors are listed in
 * ROOM_FLOORS (and drawn in docs/architecture.md); a new room gets its floor here.
 */
import path from 'node:path';

/** Floor per room of src/ (a folder, or a top-level file). Lower floors know nothing of higher ones. */
export const ROOM_FLOORS = {
  dynamixel: 1,
  urdf: 1,
  core: 2,
  config: 3,
  vision: 3,
  real: 4,
  robot: 4,
  ik: 4,
  scene: 4,
  sim: 5,
  primitives: 5,
  emulator: 6,
  records: 6,
  lab: 6,
  shadow: 6,
  calibration: 7,
  http: 7,
  ui: 8,
  service: 8,
  'server.ts': 9,
  scenario: 10,
  classroom: 10,
  'main.ts': 11,
};

/** The room of a path under `srcDir`, or undefined outside src/. */
function roomOf(file, srcDir) {
  const rel = path.relative(srcDir, file);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
  return rel.split(path.sep)[0];
}

/** @type {import('eslint').Rule.RuleModule} */
const importsPointDown = {
  meta: {
    type: 'problem',
    docs: { description: 'imports between the rooms of src/ point down a floor, never up or sideways' },
    schema: [],
    messages: {
      up: '{{from}} (floor {{fromFloor}}) may not import {{to}} (floor {{toFloor}}): imports point down a floor (eslint/layers.js, docs/architecture.md)',
      unknown: "the room '{{room}}' has no floor: give it one in eslint/layers.js ROOM_FLOORS",
    },
  },
  create(context) {
    const srcDir = path.join(context.cwd, 'src');
    const file = context.filename;
    const from = roomOf(file, srcDir);
    if (from === undefined) return {};
    const check = (node, spec) => {
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const to = roomOf(path.resolve(path.dirname(file), spec), srcDir);
      if (to === undefined || to === from) return;
      for (const room of [from, to]) {
        if (!(room in ROOM_FLOORS)) return context.report({ node, messageId: 'unknown', data: { room } });
      }
      const fromFloor = ROOM_FLOORS[from];
      const toFloor = ROOM_FLOORS[to];
      if (toFloor >= fromFloor)
        context.report({ node, messageId: 'up', data: { from, to, fromFloor, toFloor } });
    };
    const fromSource = (node) => node.source && check(node.source, node.source.value);
    return {
      ImportDeclaration: fromSource,
      ExportNamedDeclaration: fromSource,
      ExportAllDeclaration: fromSource,
      ImportExpression: (node) => node.source.type === 'Literal' && check(node.source, node.source.value),
    };
  },
};

export default { rules: { 'imports-point-down': importsPointDown } };
