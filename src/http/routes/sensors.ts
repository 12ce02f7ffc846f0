/**
 * /sensors (docs/reference/rest-api.md 2.2 and 4.3, docs/reference/contract.md 3): the camera and the marker detector, on any backend that has
 * a camera. Every sensor register is read-only.
 */
import type { Camera, Frame } from '../../core/backend.ts';
import { notFound, readOnly } from '../../core/errors.ts';
import { normalisedPosition } from '../../vision/detect.ts';
import { MARKER_CODES, markerName } from '../../vision/marker.ts';
import { PngEncoder, pngDataUrl } from '../../vision/png.ts';
import type { MarkerWatcher } from '../../vision/watcher.ts';
import { z } from 'zod';
import { RawReply, route, type RouteSpec } from '../route.ts';
import { anyValue } from '../schema.ts';

export interface SensorSources {
  /** The robot's camera, if it has one. */
  readonly camera?: Camera;
  /** The marker detector, if the robot has one (it reads the camera). */
  readonly markers?: MarkerWatcher;
}

const CAMERA_REGISTERS = ['frame', 'resolution', 'fps', 'index'] as const;
const DETECTOR_REGISTERS = ['markers'] as const;
const names = z.array(z.string());
const point = z.array(z.number()).length(2);
const marker = z.object({
  id: z.number().int().meta({ description: 'the ArUco marker id' }),
  position: point.meta({ description: 'centre in the image, each coordinate 0 .. 1 from the top left' }),
  name: z.string().nullable().meta({ description: 'tetris, caribou or lapin; null for other markers' }),
  corners: z.array(point).length(4).meta({ description: 'corners in pixels, in the marker’s own order' }),
});
/** One register and its value: frame (PNG data URL), resolution ([width, height]), fps, index (-1), markers. */
const sensorValue = z.record(z.string(), z.union([z.string(), z.number(), point, z.array(marker)])).meta({
  description:
    '{<register>: value}: frame is a PNG data URL, resolution [width, height] pixels, fps a number, index -1 ' +
    '(the first camera found), markers the detected markers',
});

const LIST_TIP = 'GET /sensors/list.json lists the sensors';
const registersTip = (sensor: string) => `GET /sensors/${sensor}/registers/list.json lists its registers`;

export function sensorRoutes(src: SensorSources): RouteSpec[] {
  const sensors = new Map<string, readonly string[]>();
  if (src.camera) sensors.set('camera', CAMERA_REGISTERS);
  if (src.camera && src.markers) sensors.set('marker_detector', DETECTOR_REGISTERS);

  const registersOf = (sensor: string): readonly string[] => {
    const registers = sensors.get(sensor);
    if (!registers)
      throw notFound(
        `no sensor called "${sensor}"`,
        LIST_TIP,
        sensors.size ? `sensors: ${[...sensors.keys()].join(', ')}` : 'this robot has no sensors',
      );
    return registers;
  };
  const checkRegister = (sensor: string, register: string) => {
    if (!registersOf(sensor).includes(register))
      throw notFound(
        `sensor "${sensor}" has no register "${register}"`,
        registersTip(sensor),
        'unknown register',
      );
  };
  const camera = (): Camera => {
    if (!src.camera) throw notFound('this robot has no camera', LIST_TIP, 'the robot config has no camera');
    return src.camera;
  };
  const watcher = (): MarkerWatcher => {
    if (!src.camera || !src.markers)
      throw notFound(
        'this robot has no marker detector',
        LIST_TIP,
        src.camera
          ? 'the robot config does not enable the marker detector'
          : 'the robot config has no camera',
      );
    return src.markers;
  };
  // A camera serves the same frame for 1/fps: encode it once.
  let encoded: { frame: Frame; png: Promise<Buffer> } | undefined;
  const png = new PngEncoder();
  const framePng = async () => {
    const frame = await camera().grab();
    // Someone looks at the camera: the detector runs too (the web view draws its markers over the frame).
    src.markers?.demand();
    if (encoded?.frame !== frame) encoded = { frame, png: png.encodeAsync(frame) };
    return encoded.png;
  };
  const markers = async () => {
    const reading = await watcher().read();
    return reading.markers.map((m) => ({
      id: m.id,
      position: normalisedPosition(m.centre, reading.width, reading.height),
      name: m.name ?? null,
      corners: m.corners,
    }));
  };
  const read = async (sensor: string, register: string): Promise<unknown> => {
    checkRegister(sensor, register);
    switch (register) {
      case 'frame':
        return pngDataUrl(await framePng());
      case 'resolution':
        return [...camera().resolution];
      case 'fps':
        return camera().fps;
      case 'index':
        // pypot's "first camera found": the twin's and a real robot's single camera.
        return -1;
      default:
        return await markers();
    }
  };

  return [
    route({
      method: 'GET',
      path: '/sensors/list.json',
      summary: 'all sensor names',
      answer: z.object({ sensors: names }),
      examples: { answer: { sensors: ['camera', 'marker_detector'] } },
      handler: () => ({ sensors: [...sensors.keys()] }),
    }),
    route({
      method: 'GET',
      path: '/sensors/:sensor/registers/list.json',
      summary: "a sensor's register names",
      answer: z.object({ registers: names }),
      examples: { answer: { registers: [...CAMERA_REGISTERS] } },
      handler: ({ params }) => ({ registers: [...registersOf(params.sensor)] }),
    }),
    route({
      method: 'GET',
      path: '/sensors/:sensor/registers/:register/value.json',
      summary: 'read a sensor register (frame is a PNG data URL)',
      answer: sensorValue,
      examples: { answer: { resolution: [640, 480] } },
      handler: async ({ params }) => ({ [params.register]: await read(params.sensor, params.register) }),
    }),
    route({
      method: 'POST',
      path: '/sensors/:sensor/registers/:register/value.json',
      summary: 'sensor registers are read-only: always 403 (404 for an unknown sensor or register)',
      bareBody: anyValue,
      answer: z.never().meta({ description: 'never: every sensor register is read-only' }),
      handler: ({ params }) => {
        checkRegister(params.sensor, params.register);
        throw readOnly(
          `the register "${params.register}" of sensor "${params.sensor}" is read-only`,
          registersTip(params.sensor),
          'sensor registers can only be read',
        );
      },
    }),
    route({
      method: 'GET',
      path: '/sensors/camera/frame.png',
      summary: 'what the camera sees now, as a PNG image',
      produces: 'image/png',
      handler: async () => new RawReply('image/png', await framePng()),
    }),
    route({
      method: 'GET',
      path: '/sensors/code/list.json',
      summary: 'names of the marker cards detected now',
      answer: z.object({
        codes: z
          .array(z.union([z.string(), z.number().int()]))
          .meta({ description: 'card names (tetris, caribou, lapin); marker ids in the pypot profile' }),
      }),
      examples: { answer: { codes: ['tetris'] } },
      handler: async () => {
        const found = (await watcher().read()).markers
          .map((m) => markerName(m.id))
          .filter((n): n is string => n !== undefined);
        return { codes: [...new Set(found)] };
      },
    }),
    route({
      method: 'GET',
      path: '/sensors/code/:code.json',
      summary: 'whether a marker card (tetris, caribou, lapin or rabbit) is detected now',
      answer: z.object({ found: z.boolean() }),
      examples: { answer: { found: true } },
      handler: async ({ params }) => {
        const w = watcher();
        const name = params.code;
        const id = MARKER_CODES[name];
        if (id === undefined)
          throw notFound(
            `no marker called "${name}"`,
            'the marker names are tetris, caribou, lapin and rabbit',
            'unknown code name',
          );
        return { found: (await w.read()).markers.some((m) => m.id === id) };
      },
    }),
  ];
}
