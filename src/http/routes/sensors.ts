/**
 * /sensors (REST-API.md 2.2 and 4.3, CONTRACT.md 3): the camera and the marker detector, on any backend that has
 * a camera. Every sensor register is read-only.
 */
import type { Camera } from '../../core/backend.ts';
import { notFound, readOnly } from '../../core/errors.ts';
import { normalisedPosition } from '../../vision/detect.ts';
import { MARKER_CODES, markerName } from '../../vision/marker.ts';
import { encodePng, pngDataUrl } from '../../vision/png.ts';
import type { MarkerWatcher } from '../../vision/watcher.ts';
import { RawReply, type RouteSpec } from '../route.ts';

export interface SensorSources {
  /** The robot's camera, if it has one. */
  readonly camera?: Camera;
  /** The marker detector, if the robot has one (it reads the camera). */
  readonly markers?: MarkerWatcher;
}

const CAMERA_REGISTERS = ['frame', 'resolution', 'fps', 'index'] as const;
const DETECTOR_REGISTERS = ['markers'] as const;
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
  const framePng = async () => encodePng(await camera().grab());
  const markers = () => {
    const reading = watcher().latest();
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
        return markers();
    }
  };

  return [
    {
      method: 'GET',
      path: '/sensors/list.json',
      summary: 'all sensor names',
      handler: () => ({ sensors: [...sensors.keys()] }),
    },
    {
      method: 'GET',
      path: '/sensors/:sensor/registers/list.json',
      summary: "a sensor's register names",
      handler: ({ params }) => ({ registers: [...registersOf(params.sensor!)] }),
    },
    {
      method: 'GET',
      path: '/sensors/:sensor/registers/:register/value.json',
      summary: 'read a sensor register (frame is a PNG data URL)',
      handler: async ({ params }) => ({ [params.register!]: await read(params.sensor!, params.register!) }),
    },
    {
      method: 'POST',
      path: '/sensors/:sensor/registers/:register/value.json',
      summary: 'sensor registers are read-only: always 403 (404 for an unknown sensor or register)',
      handler: ({ params }) => {
        checkRegister(params.sensor!, params.register!);
        throw readOnly(
          `the register "${params.register}" of sensor "${params.sensor}" is read-only`,
          registersTip(params.sensor!),
          'sensor registers can only be read',
        );
      },
    },
    {
      method: 'GET',
      path: '/sensors/camera/frame.png',
      summary: 'what the camera sees now, as a PNG image',
      handler: async () => new RawReply('image/png', await framePng()),
    },
    {
      method: 'GET',
      path: '/sensors/code/list.json',
      summary: 'names of the marker cards detected now',
      handler: () => {
        const names = watcher()
          .latest()
          .markers.map((m) => markerName(m.id))
          .filter((n): n is string => n !== undefined);
        return { codes: [...new Set(names)] };
      },
    },
    {
      method: 'GET',
      path: '/sensors/code/:code.json',
      summary: 'whether a marker card (tetris, caribou, lapin or rabbit) is detected now',
      handler: ({ params }) => {
        const w = watcher();
        const name = params.code!;
        const id = MARKER_CODES[name];
        if (id === undefined)
          throw notFound(
            `no marker called "${name}"`,
            'the marker names are tetris, caribou, lapin and rabbit',
            'unknown code name',
          );
        return { found: w.latest().markers.some((m) => m.id === id) };
      },
    },
  ];
}
