/**
 * Writes urdf/ergo-jr.urdf, urdf/torso.urdf and urdf/humanoid.urdf (deterministic: same inputs, same bytes).
 * Run: npx tsx urdf/generate.ts
 *
 * Kinematics and inertials are the numbers of docs/reference/robots.md 1.3, 2.3 and 3.4. Joint variable = RAW motor angle (docs/reference/robots.md 0, 10):
 * limits are the raw angleLimit of robots/<robot>.json, effort/velocity come from the servo model.
 * Visuals: a measured link is drawn as its collision polytope; the others as one servo-sized box covering the link
 * frame, its child joint origins and its centre of mass.
 * Collisions: where urdf/collision-fit.json measures a link's Poppy mesh (the Ergo Jr, the Humanoid, the Torso but its
 * spine; see fit-collisions.ts), the 26-sided polytope of those measurements (one per piece for a link measured in
 * pieces), written as urdf/meshes/<robot>/<link>.stl and cut back where it would overlap a generated box
 * (separateFromBoxes); elsewhere (the Torso's spine) a box around the link's child joints and centre of mass, leaving
 * out the link's own joint.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import RAPIER from '@dimforge/rapier3d-simd-compat';
import { writeStl } from '../src/urdf/stl.ts';
import { parseUrdf } from '../src/urdf/parse.ts';
import { initRapier } from '../src/sim/build-world.ts';
import { linkPoses } from '../src/sim/link-poses.ts';
import { overlapDepth, placeShape, shapeOf } from '../src/sim/collision-shapes.ts';
import { qconj, qrotate, type V3 } from '../src/sim/quat.ts';
import type { UrdfJoint } from '../src/urdf/types.ts';
import { DOP_DIRECTIONS, polytopeTriangles } from './polytope.ts';

/**
 * Reach (mm) of each link's mesh along the 26 polytope directions, per robot (urdf/fit-collisions.ts): one list, or
 * one per piece for a link measured in pieces.
 */
type CollisionFit = Record<string, Record<string, number[] | number[][]>>;
/** Each measured link's pieces, each its 26 reaches. */
type Pieces = Record<string, number[][]>;

const asPieces = (fit: Record<string, number[] | number[][]>): Pieces =>
  Object.fromEntries(Object.entries(fit).map(([link, r]) => [link, Array.isArray(r[0]) ? (r as number[][]) : [r as number[]]]));

type Triple = [number, number, number];

/** name, parent, child, origin xyz, origin rpy, axis (strings as in the Poppy URDFs, docs/reference/robots.md 1.3, 2.3, 3.4). */
type JointRow = readonly [string, string, string, string, string, string];
/** name, mass, COM xyz, inertia "ixx ixy ixz iyy iyz izz". */
type LinkRow = readonly [string, string, string, string];

interface MotorJson {
  name: string;
  model: string;
  angleLimit: [number, number];
}

interface RobotSpec {
  file: string;
  robotName: string;
  config: string;
  joints: readonly JointRow[];
  links: readonly LinkRow[];
  material: (link: string) => string;
  /**
   * The root link's collision box stops at its child joints instead of being padded past them: true where the root
   * link is a servo whose horn is the child joint (the Ergo Jr's m1 XL-320: its top face is the horn's plane).
   */
  rootStopsAtChildJoints?: boolean;
}

const ERGO_JOINTS: readonly JointRow[] = [
  ['m1', 'base_link', 'long_U', '0 0 0.0327993216120967', '-6.12303176911189E-17 0 0', '0 0 -1'],
  ['m2', 'long_U', 'section_1', '0 0 0.0240006783879033', '1.5707963267949 0 0', '-1 0 0'],
  ['m3', 'section_1', 'section_2', '0 0.054 0', '0 0 0', '-1 0 0'],
  ['m4', 'section_2', 'section_3', '0 0.0298217741221248 0', '3.14159265358979 0 0', '0 1 0'],
  ['m5', 'section_3', 'section_4', '0 -0.0151782258778753 -0.048', '-1.5707963267949 0 0', '-1 0 0'],
  ['m6', 'section_4', 'tip', '0 0.054 0', '1.5707963267949 1.5707963267949 0', '0 -1 0'],
];

const ERGO_LINKS: readonly LinkRow[] = [
  ['base_link', '0.0802410895423366', '-0.00273845833301537 0.00821639745723966 -0.0338977122062889', '0.00011430194806305 -1.74777682977282E-06 7.8063859003738E-06 0.000177560979735167 6.80763560469771E-06 7.51325469990478E-05'],
  ['long_U', '0.0042118228619085', '-0.00243058056226709 1.14505937431452E-07 0.0129312523306501', '5.78707668456099E-07 9.44283869977724E-12 -1.13587476220175E-07 1.25420346852677E-06 4.64830147251523E-12 9.27174545760678E-07'],
  ['section_1', '0.0201321844066136', '-0.000168296047337745 0.013441283142678 -3.36410230095056E-09', '6.51960684491032E-06 -5.35361387413197E-07 -5.67167110473808E-13 2.37206686086462E-06 -1.07202400036876E-12 7.46616268702629E-06'],
  ['section_2', '0.017821725151696', '0.000407772974186014 0.00840914919415664 -1.07672250595912E-09', '2.52304488643742E-06 -6.63873566658207E-08 -2.02107710451767E-13 1.64177128414312E-06 3.46919494425175E-13 2.86561030339994E-06'],
  ['section_3', '0.0201321844066136', '-0.000529269977744151 -0.0148172531686623 -0.0123545994437081', '5.58716321477767E-06 3.84615911021611E-09 3.80051502924447E-07 6.00831891375732E-06 9.50610838817802E-08 2.36437426368354E-06'],
  ['section_4', '0.0201321844066137', '-0.000168296047337745 0.013441283142678 -3.36410227452788E-09', '6.51960684491033E-06 -5.3536138741319E-07 -5.67167109549002E-13 2.37206686086462E-06 -1.07202399874137E-12 7.46616268702631E-06'],
  ['tip', '0.0164859649700598', '1.30842922607677E-09 0.000440812249500631 -0.00687616557228032', '2.21073012081829E-06 2.00704445336612E-13 2.61313974888777E-13 1.95245657563094E-06 5.52468772381494E-08 1.46932588043522E-06'],
];

// Torso head_y raw range is 0..50 deg where the Humanoid-derived URDF says -45..6: raw = q_old + 45 deg. With axis -x this is a
// rotation of the joint origin by +45 deg about x, so joint = raw.
const TORSO_HEAD_Y_ROLL = String(-0.349065850398866 + 0.785398163397448);

/** Chest, head and arms: identical in the Torso and Humanoid URDFs (docs/reference/robots.md 3.4). */
function upperBodyJoints(headYRoll: string): JointRow[] {
  return [
    ['bust_y', 'spine', 'bust_motors', '0 0.07985 0.00279999999999998', '0 0 0', '-1 0 0'],
    ['bust_x', 'bust_motors', 'chest', '0 0 0', '0 0 0', '0 0 1'],
    ['head_z', 'chest', 'neck', '0 0.084 0.00499999999999996', '0 0 0', '0 1 0'],
    ['head_y', 'neck', 'head', '0 0.0199999999999999 0', `${headYRoll} 0 0`, '-1 0 0'],
    ['l_shoulder_y', 'chest', 'l_shoulder', '0.0771000000000001 0.0499999999999999 0.00399999999999997', '-1.5707963267949 0 0', '1 0 0'],
    ['l_shoulder_x', 'l_shoulder', 'l_shoulder_motor', '0.0284 0 0', '3.14159265358979 0 1.5707963267949', '0 0 1'],
    ['l_arm_z', 'l_shoulder_motor', 'l_upper_arm', '0 0.03625 0.0185000000000001', '0 0 0', '0 1 0'],
    ['l_elbow_y', 'l_upper_arm', 'l_forearm', '0 0.11175 -0.00999999999999998', '0 0 0', '1 0 0'],
    ['r_shoulder_y', 'chest', 'r_shoulder', '-0.0770999999999999 0.0500000000000002 0.00400000000000003', '-1.5707963267949 0 0', '-1 0 0'],
    // Axis flipped from the original (0 0 -1): the motor turns the other way (pypot's reversed_motors), docs/reference/robots.md 10.
    ['r_shoulder_x', 'r_shoulder', 'r_shoulder_motor', '-0.0284 0 0', '3.14159265358979 0 -1.5707963267949', '0 0 1'],
    ['r_arm_z', 'r_shoulder_motor', 'r_upper_arm', '0 0.03625 0.0185000000000002', '0 0 0', '0 1 0'],
    ['r_elbow_y', 'r_upper_arm', 'r_forearm', '0 0.11175 -0.01', '0 0 0', '-1 0 0'],
  ];
}

const UPPER_BODY_LINKS: readonly LinkRow[] = [
  ['spine', '0.0926815106655512', '-2.40411891850495E-07 0.0288451667347867 -0.0100975118547382', '3.84763910015325E-05 -1.20593001730888E-09 -2.38589260905183E-10 2.7320514654861E-05 1.47490149318973E-06 3.26595211965373E-05'],
  ['bust_motors', '0.158876054570625', '3.50872416629779E-05 0.0105220286877652 -0.0174331453843439', '0.000100953683249293 -3.89105307189684E-07 9.71749941401585E-08 8.94288410563621E-05 -1.31738255727689E-06 4.26225972692235E-05'],
  ['chest', '0.262925523172723', '2.35256459143538E-06 0.0514948183080913 -0.0105463056982622', '0.000154597294293882 2.32304239504647E-08 -2.47140128362103E-08 0.000750952782458072 1.53530143139102E-06 0.000688549998744818'],
  ['neck', '0.00588496516988365', '-0.00147486363077957 0.00928455262636602 2.89600749219313E-06', '7.25596636570396E-07 -9.29944216419538E-08 2.01438227027406E-10 2.33535976458607E-06 1.55383710797264E-11 2.57395421284165E-06'],
  ['head', '0.188564323997503', '0.000557544173188459 0.0327437693305889 -0.0132545775103434', '0.000353329921483274 -2.17595216032547E-07 4.10678991843685E-06 0.000384587155295662 -2.16656424152966E-05 0.000396626339401006'],
  ['l_shoulder', '0.00843598968780806', '0.0105246491971973 0.00179805316216127 -0.00915201992957032', '3.39606863056539E-06 -4.79545875245114E-08 2.95435354929514E-08 3.56726082486902E-06 1.00382310579659E-08 1.84634806401887E-06'],
  ['l_shoulder_motor', '0.0828144098443214', '2.25562237481797E-07 0.0125756739553211 0.00859826040204853', '2.76486208811411E-05 1.32207552337974E-10 6.6889770978984E-10 1.64427853426986E-05 7.23401723852699E-07 2.26416351010788E-05'],
  ['l_upper_arm', '0.168140859572398', '3.30518731642866E-05 0.0628256242231928 -0.0106376043749558', '0.000280827719319256 6.03218629893559E-07 3.24530722833658E-09 4.23293519917111E-05 3.11052764904881E-06 0.000275916197869213'],
  ['l_forearm', '0.0486512481725727', '0.00691480023011085 0.10715758721324 0.00499021473883754', '0.000185803541823861 7.31763110936326E-06 -9.0080655878687E-08 1.51053240271383E-05 -1.35878077941956E-05 0.000182745910584552'],
  ['r_shoulder', '0.00848189714003649', '-0.0104970276721559 0.00172611065393897 -0.00916610067254806', '3.40574097306283E-06 4.48540328143448E-08 -3.01046953764439E-08 3.57001060355875E-06 1.1601962064402E-08 1.85571692853151E-06'],
  ['r_shoulder_motor', '0.0828144098443213', '2.25562237481797E-07 0.0125756739553211 0.00859826040204864', '2.76486208811411E-05 1.32207552352561E-10 6.68897709796528E-10 1.64427853426986E-05 7.23401723852708E-07 2.26416351010787E-05'],
  ['r_upper_arm', '0.16814085957724', '-3.32548713521223E-05 0.0628256242258387 -0.0106376027333001', '0.000280827719414285 -6.03127767269455E-07 -3.86325402336742E-09 4.23293497956197E-05 3.11054354485249E-06 0.00027591619563535'],
  ['r_forearm', '0.0486511084909604', '-0.00691618587524222 0.107157908858058 0.00498983982891094', '0.000185805096233415 -7.3225450436654E-06 9.10153472751173E-08 1.51060270748784E-05 -1.35866305828973E-05 0.000182748555542486'],
];

const TORSO_JOINTS: readonly JointRow[] = [
  ['abs_z', 'base', 'spine', '0 0 0.08965', '1.5708 1.1258E-18 0.018388', '0 1 0'],
  ...upperBodyJoints(TORSO_HEAD_Y_ROLL),
];

const TORSO_LINKS: readonly LinkRow[] = [
  ['base', '0.304441048219244', '-9.74926801495556E-06 0.0245809270022031 -0.0126310576435619', '0.000444379589701896 1.65486746667917E-08 -3.86276516415689E-09 0.00048561348802354 2.15649474149961E-05 0.000421911604661064'],
  ...UPPER_BODY_LINKS,
];

const HUMANOID_JOINTS: readonly JointRow[] = [
  ['r_hip_x', 'pelvis', 'r_hip', '-0.0225417390633467 0 0', '1.5707963267949 0 0', '0 0 -1'],
  ['r_hip_z', 'r_hip', 'r_hip_motor', '-0.0439986111539757 0 0.005', '0 0 0', '0 -1 0'],
  ['r_hip_y', 'r_hip_motor', 'r_thigh', '0 -0.024 0', '0 0 0', '-1 0 0'],
  ['r_knee_y', 'r_thigh', 'r_shin', '0 -0.182 0', '0 1.5707963267949 0', '0 0 -1'],
  ['r_ankle_y', 'r_shin', 'r_foot', '0 -0.18 0', '0 -1.5708 0', '-1 0 0'],
  ['l_hip_x', 'pelvis', 'l_hip', '0.0225417390633466 0 0', '1.5707963267949 0 0', '0 0 -1'],
  ['l_hip_z', 'l_hip', 'l_hip_motor', '0.0439986111539757 0 0.005', '0 0 0', '0 -1 0'],
  ['l_hip_y', 'l_hip_motor', 'l_thigh', '0 -0.024 0', '0 0 0', '1 0 0'],
  ['l_knee_y', 'l_thigh', 'l_shin', '0 -0.182 0', '0 1.5707963267949 0', '0 0 -1'],
  ['l_ankle_y', 'l_shin', 'l_foot', '0 -0.18 0', '0 -1.5708 0', '1 0 0'],
  ['abs_y', 'pelvis', 'abs_motors', '0 -0.017 0.061', '1.5707963267949 0 0', '-1 0 0'],
  ['abs_x', 'abs_motors', 'abdomen', '0 0 0', '0 0 0', '0 0 1'],
  ['abs_z', 'abdomen', 'spine', '0 0.0516374742048976 0', '0 0 0', '0 1 0'],
  ...upperBodyJoints('-0.349065850398866'),
];

const HUMANOID_LINKS: readonly LinkRow[] = [
  ['pelvis', '0.18520035953947', '-0.000134932459328483 -0.000399086261064929 0.00195556930608449', '0.000101804322229161 3.56589402562651E-08 -1.38613151054156E-05 0.000142404075398435 -3.50682832702007E-06 9.38193247222871E-05'],
  ['r_hip', '0.0843835237958419', '-0.0419310610774408 0.0190565121211527 -0.0049369159749795', '2.80785419197495E-05 -1.23046307113086E-06 6.6239556232755E-07 2.83383567782285E-05 -1.44609279432087E-06 2.15931686710985E-05'],
  ['r_hip_motor', '0.0831707898707576', '0.00012677211714017 -0.0228896110294103 -0.0134988950219984', '2.94087635631147E-05 -1.19904545841814E-08 -2.40263672865729E-07 3.59801748266375E-05 7.9755837503152E-07 2.29200602273928E-05'],
  ['r_thigh', '0.116386255838466', '0.0192501209789311 -0.140974172218775 0.000432765258959229', '0.000357762131890894 -4.71321103204108E-05 2.18885095933642E-06 5.14619739065129E-05 -5.54069244270054E-06 0.000370171570432626'],
  ['r_shin', '0.115582219792398', '-0.00150809388022299 -0.137041584549603 0.0228988594303728', '0.000397225397723862 -1.73262609639968E-05 1.32921239310872E-08 3.98086710206889E-05 -5.89721905441721E-07 0.000393657905933943'],
  ['r_foot', '0.0467879950319091', '0.0204293303781304 -0.0233359048261193 0.0268526073213802', '8.14403907813341E-05 1.79180509533517E-07 -2.42059026946486E-06 8.8648252995759E-05 -3.23018791598496E-06 1.79463752431845E-05'],
  ['l_hip', '0.084384314388701', '0.0419306472605077 0.0190563885809745 -0.00493699078761145', '2.80793467645287E-05 1.23086422338588E-06 -6.62398430684737E-07 2.83405782814578E-05 -1.44600299896268E-06 2.15947433435168E-05'],
  ['l_hip_motor', '0.0831707898707576', '-0.000127079593402107 -0.0228896103855824 -0.0134988950219984', '2.94087634441972E-05 1.14532470512781E-08 2.40221424306256E-07 3.59801683348766E-05 7.97560828147263E-07 2.29200536167144E-05'],
  ['l_thigh', '0.114854459344049', '-0.019252460356064 -0.142230931721003 0.000612323159069193', '0.000344974307251891 4.73949176309948E-05 -2.2011322605997E-06 5.11655383215627E-05 -3.3911468808746E-06 0.000357718491831138'],
  ['l_shin', '0.11558221959692', '-0.00150809145543363 -0.137041584769234 -0.0229033576380381', '0.000397225344473892 -1.7326274763791E-05 -3.52146929156471E-09 3.98086215785412E-05 5.50111227416849E-07 0.000393657903677591'],
  ['l_foot', '0.0468257348098641', '-0.020427799658059 -0.023322293418243 0.0268332758297585', '8.1463512692765E-05 -1.79215713282762E-07 2.42595321155028E-06 8.8658680494918E-05 -3.23538234039819E-06 1.7963767676241E-05'],
  ['abs_motors', '0.16766708386429', '-6.29779489192246E-05 0.0133591399673186 -0.0195687625589375', '0.000151720676825684 -2.41666285846992E-07 -2.06688911297549E-07 0.000131382009077746 -2.13904639264389E-06 6.52732386194484E-05'],
  ['abdomen', '0.0384110457457536', '4.70358640929572E-07 0.0445314260459549 -0.022296044885406', '5.9365236572053E-05 -8.257716306361E-11 -2.55036869156096E-10 5.98640694082658E-05 3.94818292640265E-07 2.35987614893539E-05'],
  ...UPPER_BODY_LINKS,
];

/** Servo body W x H x D (m) and URDF effort (N m) / velocity (rad/s) per model (docs/reference/dynamixel.md 8.4). */
const SERVOS: Record<string, { size: Triple; effort: number; velocity: number }> = {
  'XL-320': { size: [0.024, 0.036, 0.027], effort: 0.39, velocity: 11.9 },
  'AX-12': { size: [0.032, 0.05, 0.04], effort: 1.8, velocity: 10.0 },
  'AX-12A': { size: [0.032, 0.05, 0.04], effort: 1.8, velocity: 10.0 },
  'MX-28': { size: [0.036, 0.051, 0.036], effort: 3.1, velocity: 7.0 },
  'MX-64': { size: [0.0402, 0.0611, 0.041], effort: 7.3, velocity: 8.2 },
};

const COLORS: Record<string, string> = {
  white: '1 1 1 1',
  grey: '0.752941176470588 0.752941176470588 0.752941176470588 1',
  shell: '0.92 0.92 0.9 1',
  servo: '0.2 0.2 0.2 1',
};

const poppyMaterial = (link: string): string => (/_motors?$/.test(link) ? 'servo' : 'shell');

const ROBOTS: readonly RobotSpec[] = [
  {
    file: 'ergo-jr.urdf',
    robotName: 'PoppyErgoJr',
    config: 'ergo-jr.json',
    joints: ERGO_JOINTS,
    links: ERGO_LINKS,
    material: (link) => (link === 'long_U' ? 'white' : 'grey'),
    rootStopsAtChildJoints: true,
  },
  { file: 'torso.urdf', robotName: 'PoppyTorso', config: 'torso.json', joints: TORSO_JOINTS, links: TORSO_LINKS, material: poppyMaterial },
  {
    file: 'humanoid.urdf',
    robotName: 'PoppyHumanoid',
    config: 'humanoid.json',
    joints: HUMANOID_JOINTS,
    links: HUMANOID_LINKS,
    material: poppyMaterial,
  },
];

function triple(text: string): Triple {
  const parts = text.trim().split(/\s+/).map(Number);
  if (parts.length !== 3 || parts.some((n) => !Number.isFinite(n))) throw new Error(`bad triple "${text}"`);
  return parts as Triple;
}

/** Fixed decimals, no "-0". */
function fmt(n: number, digits = 4): string {
  const s = n.toFixed(digits);
  return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
}

function fmtRad(deg: number): string {
  return String((deg * Math.PI) / 180);
}

/** Box in the link frame around its frame origin, child joint origins and COM (leaf links: twice the COM), padded by the servo's thickness. */
function linkBox(row: LinkRow, childOrigins: readonly Triple[], servo: Triple): { center: Triple; size: Triple } {
  const com = triple(row[2]);
  const points: Triple[] = [[0, 0, 0], com, ...childOrigins];
  if (childOrigins.length === 0) points.push([2 * com[0], 2 * com[1], 2 * com[2]]);
  const pad = Math.min(...servo) / 2;
  const center: Triple = [0, 0, 0];
  const size: Triple = [0, 0, 0];
  for (const k of [0, 1, 2] as const) {
    const lo = Math.min(...points.map((p) => p[k])) - pad;
    const hi = Math.max(...points.map((p) => p[k])) + pad;
    center[k] = Number(fmt((lo + hi) / 2));
    size[k] = Number(fmt(hi - lo));
  }
  return { center, size };
}

/**
 * Collision box: around the COM and the child joint origins only (leaf links: the COM and twice it), padded by a
 * third of the servo's thickness. It leaves out the link's own joint origin, where the parent's box already is, so
 * that links two joints apart do not overlap by construction and can collide with each other.
 */
function collisionBox(row: LinkRow, childOrigins: readonly Triple[], servo: Triple): { center: Triple; size: Triple } {
  const com = triple(row[2]);
  const points: Triple[] = [com, ...childOrigins];
  if (childOrigins.length === 0) points.push([2 * com[0], 2 * com[1], 2 * com[2]]);
  const pad = Math.min(...servo) / 3;
  const center: Triple = [0, 0, 0];
  const size: Triple = [0, 0, 0];
  for (const k of [0, 1, 2] as const) {
    const lo = Math.min(...points.map((p) => p[k])) - pad;
    const hi = Math.max(...points.map((p) => p[k])) + pad;
    center[k] = Number(fmt((lo + hi) / 2));
    size[k] = Number(fmt(hi - lo));
  }
  return { center, size };
}

/**
 * A box no longer padded past the given joint origins along the axis each lies on (the child's box starts there).
 * The Ergo Jr's base padded 12 mm up into its long_U stopped m2 at -104 degrees against section_1, short of the
 * idle posture's -110 that the real robot takes.
 */
function boxStoppedAtJoints(
  box: { center: Triple; size: Triple },
  jointOrigins: readonly Triple[],
): { center: Triple; size: Triple } {
  const lo = [0, 1, 2].map((k) => box.center[k]! - box.size[k]! / 2);
  const hi = [0, 1, 2].map((k) => box.center[k]! + box.size[k]! / 2);
  for (const c of jointOrigins) {
    const k = [0, 1, 2].reduce((a, b) => (Math.abs(c[b]!) > Math.abs(c[a]!) ? b : a));
    if (c[k]! > 0) hi[k] = Math.min(hi[k]!, c[k]!);
    else lo[k] = Math.max(lo[k]!, c[k]!);
  }
  return {
    center: [0, 1, 2].map((k) => Number(fmt((lo[k]! + hi[k]!) / 2))) as Triple,
    size: [0, 1, 2].map((k) => Number(fmt(hi[k]! - lo[k]!))) as Triple,
  };
}

/** Writes a link's measured collision polytope (piece k of n) as STL; returns its path relative to the URDF. */
function writeCollisionMesh(dir: string, robot: string, link: string, reachMm: readonly number[], k: number, n: number): string {
  const relative = n === 1 ? `meshes/${robot}/${link}.stl` : `meshes/${robot}/${link}-${k + 1}.stl`;
  const triangles = polytopeTriangles(reachMm.map((mm) => mm / 1000));
  mkdirSync(path.join(dir, 'meshes', robot), { recursive: true });
  writeFileSync(path.join(dir, relative), writeStl(triangles, `${robot} ${link}: urdf/fit-collisions.ts`));
  return relative;
}

function generateUrdf(spec: RobotSpec, motors: readonly MotorJson[], fit: Pieces | undefined, dir: string): string {
  const motorByName = new Map(motors.map((m) => [m.name, m]));
  const servoOf = (joint: string): (typeof SERVOS)[string] => {
    const motor = motorByName.get(joint);
    if (!motor) throw new Error(`${spec.config}: no motor "${joint}"`);
    const servo = SERVOS[motor.model];
    if (!servo) throw new Error(`${spec.config}: unknown model ${motor.model}`);
    return servo;
  };
  const out: string[] = [];
  out.push('<?xml version="1.0" encoding="utf-8"?>');
  out.push(`<!-- Generated by urdf/generate.ts from the numeric facts of docs/reference/robots.md; joint angle = RAW motor angle. Do not edit by hand. -->`);
  out.push(`<robot name="${spec.robotName}">`);
  const used = [...new Set(spec.links.map((l) => spec.material(l[0])))];
  for (const m of used) out.push(`  <material name="${m}">`, `    <color rgba="${COLORS[m]}"/>`, '  </material>');
  for (const link of spec.links) {
    const name = link[0];
    const childJoints = spec.joints.filter((j) => j[1] === name);
    const parentJoint = spec.joints.find((j) => j[2] === name);
    const servoJoint = parentJoint ?? childJoints[0];
    if (!servoJoint) throw new Error(`link ${name} has no joint`);
    const box = linkBox(
      link,
      childJoints.map((j) => triple(j[3])),
      servoOf(servoJoint[0]).size,
    );
    const [ixx, ixy, ixz, iyy, iyz, izz] = link[3].split(' ');
    // The root link rests on the table: its collision box is its whole visual box (or stopped at its child joints).
    const hit = parentJoint
      ? collisionBox(
          link,
          childJoints.map((j) => triple(j[3])),
          servoOf(servoJoint[0]).size,
        )
      : spec.rootStopsAtChildJoints
        ? boxStoppedAtJoints(
            box,
            childJoints.map((j) => triple(j[3])),
          )
        : box;
    // A measured link looks and collides as its measured shape; the others look like a servo-sized box and collide
    // as a box that leaves out their own joint.
    const measured = fit?.[name];
    const meshFiles = measured?.map((r, k) => writeCollisionMesh(dir, spec.file.replace('.urdf', ''), name, r, k, measured.length));
    const zeroOrigin = '<origin xyz="0 0 0" rpy="0 0 0"/>';
    const shapes = (kind: 'visual' | 'collision', boxShape: { center: Triple; size: Triple }): string[] =>
      (meshFiles ?? [undefined]).flatMap((file) => [
        `    <${kind}>`,
        `      ${file ? zeroOrigin : `<origin xyz="${boxShape.center.map((v) => fmt(v)).join(' ')}" rpy="0 0 0"/>`}`,
        `      ${file ? `<geometry><mesh filename="${file}"/></geometry>` : `<geometry><box size="${boxShape.size.map((v) => fmt(v)).join(' ')}"/></geometry>`}`,
        ...(kind === 'visual' ? [`      <material name="${spec.material(name)}"/>`] : []),
        `    </${kind}>`,
      ]);
    out.push(
      `  <link name="${name}">`,
      '    <inertial>',
      `      <origin xyz="${link[2]}" rpy="0 0 0"/>`,
      `      <mass value="${link[1]}"/>`,
      `      <inertia ixx="${ixx}" ixy="${ixy}" ixz="${ixz}" iyy="${iyy}" iyz="${iyz}" izz="${izz}"/>`,
      '    </inertial>',
      ...shapes('visual', box),
      ...shapes('collision', hit),
      '  </link>',
    );
  }
  for (const [name, parent, child, xyz, rpy, axis] of spec.joints) {
    const motor = motorByName.get(name)!;
    const servo = servoOf(name);
    out.push(
      `  <joint name="${name}" type="revolute">`,
      `    <origin xyz="${xyz}" rpy="${rpy}"/>`,
      `    <parent link="${parent}"/>`,
      `    <child link="${child}"/>`,
      `    <axis xyz="${axis}"/>`,
      `    <limit lower="${fmtRad(motor.angleLimit[0])}" upper="${fmtRad(motor.angleLimit[1])}" effort="${servo.effort}" velocity="${servo.velocity}"/>`,
      '  </joint>',
    );
  }
  out.push('</robot>', '');
  return out.join('\n');
}

/** Gap (m) a measured shape keeps from a generated box it would otherwise meet within the joints' working range. */
const CLEARANCE = 0.001;
/** Samples per joint across its angle limits when checking a shape against a box two joints away. */
const RANGE_SAMPLES = 9;

/**
 * A measured polytope is cut back, plane by plane along the directions that face a generated box, until CLEARANCE
 * apart wherever it overlaps that box: at the zero pose, and for a box two joints away (the chest and the spine's
 * box, across the bust's two servos) over both joints' whole angle limits. The box stands in for a part whose true
 * shape it does not have: the real parts clear each other where the servos may take them, and meet beyond (the
 * chest on the spine is the limp bust's stop). Two measured shapes that overlap are left as they are: the world then
 * never lets them collide (PhysicsWorld's designed overlaps), as the meshes they come from fit into each other (the
 * head's base into the chest's neck opening).
 */
function separateFromBoxes(urdfText: string, fit: Pieces): Pieces {
  const urdf = parseUrdf(urdfText);
  const parentJoint = new Map(urdf.joints.map((j) => [j.child, j]));
  const ancestry = (link: string): string[] => {
    const joint = parentJoint.get(link);
    return joint ? [link, ...ancestry(joint.parent)] : [link];
  };
  /** The joints on the tree path between two links. */
  const jointsBetween = (a: string, b: string): UrdfJoint[] => {
    const up = ancestry(a);
    const down = ancestry(b);
    const common = up.find((l) => down.includes(l))!;
    const climb = (chain: string[]) => chain.slice(0, chain.indexOf(common)).map((l) => parentJoint.get(l)!);
    return [...climb(up), ...climb(down)];
  };
  const reach = Object.fromEntries(Object.entries(fit).map(([link, r]) => [link, r.map((piece) => piece.map((mm) => mm / 1000))]));
  const polytopeShape = (piece: readonly number[]) => ({
    shape: RAPIER.ColliderDesc.convexHull(Float32Array.from(polytopeTriangles(piece)))!.shape,
    p: [0, 0, 0] as V3,
    q: { x: 0, y: 0, z: 0, w: 1 },
  });
  const boxes = [...urdf.links.values()].filter((l) => !reach[l.name] && l.collisions.length > 0).map((l) => l.name);
  for (const [link, pieces] of Object.entries(reach))
    for (const piece of pieces)
    for (const other of boxes) {
      const between = jointsBetween(link, other);
      if (between.length < 2) continue; // a joint's two links never collide
      // The zero pose, and across the limits of two joints between (further apart, a contact is a real one).
      const poses = [linkPoses(urdf)];
      if (between.length === 2) {
        const [j1, j2] = between as [UrdfJoint, UrdfJoint];
        const at = (j: UrdfJoint, k: number) =>
          j.limit!.lower + ((j.limit!.upper - j.limit!.lower) * k) / (RANGE_SAMPLES - 1);
        for (let k1 = 0; k1 < RANGE_SAMPLES; k1++)
          for (let k2 = 0; k2 < RANGE_SAMPLES; k2++)
            poses.push(linkPoses(urdf, new Map([[j1.name, at(j1, k1)], [j2.name, at(j2, k2)]])));
      }
      const box = shapeOf(urdf.links.get(other)!.collisions[0]!);
      for (const pose of poses) {
        const b = placeShape(pose.get(other)!, box);
        for (let round = 0; ; round++) {
          if (round === 500) throw new Error(`${link} and ${other}: could not separate`);
          const a = placeShape(pose.get(link)!, polytopeShape(piece));
          const depth = overlapDepth(a, b);
          const hit = a.shape.contactShape(a.p, a.q, b.shape, b.p, b.q, CLEARANCE);
          if (depth === 0 && (!hit || hit.distance >= CLEARANCE - 1e-6)) break;
          const cut = depth > 0 ? Math.min(depth + CLEARANCE, 0.002) : CLEARANCE - hit!.distance;
          // Towards the box: the contact normal, or from centre to centre when Rapier gives none for a deep overlap.
          const n = hit ? hit.normal1 : { x: b.p.x - a.p.x, y: b.p.y - a.p.y, z: b.p.z - a.p.z };
          const local = qrotate(qconj(a.q), [n.x, n.y, n.z]);
          const length = Math.hypot(...local);
          DOP_DIRECTIONS.forEach((d, j) => {
            const facing = (d[0] * local[0] + d[1] * local[1] + d[2] * local[2]) / length;
            if (facing > 0.5) piece[j]! -= cut * facing;
          });
        }
      }
    }
  return Object.fromEntries(
    Object.entries(reach).map(([link, r]) => [link, r.map((piece) => piece.map((m) => Math.round(m * 1e5) / 100))]),
  );
}

async function main(): Promise<void> {
  await initRapier();
  const dir = import.meta.dirname;
  const fit = (JSON.parse(readFileSync(path.join(dir, 'collision-fit.json'), 'utf8')) as { robots: CollisionFit }).robots;
  for (const spec of ROBOTS) {
    const config = JSON.parse(readFileSync(path.join(dir, '..', 'robots', spec.config), 'utf8')) as { motors: MotorJson[] };
    const target = path.join(dir, spec.file);
    const measured = fit[spec.file.replace('.urdf', '')];
    const separated = measured && separateFromBoxes(generateUrdf(spec, config.motors, undefined, dir), asPieces(measured));
    writeFileSync(target, generateUrdf(spec, config.motors, separated, dir));
    console.log(`wrote ${path.relative(process.cwd(), target)}`);
  }
}

await main();
