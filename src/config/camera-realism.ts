/**
 * The twin camera's physical model (robot config `camera.realism`): lens, focus, motion blur, sensor noise,
 * exposure, white balance and JPEG. Defaults are the Raspberry Pi camera module v1.3 (OV5647) of the Ergo Jr at
 * its 640x480 video mode; docs/sensors.md gives the source of each.
 */
import { z } from 'zod';

export const cameraRealismSchema = z.strictObject({
  /** Radial distortion, OpenCV's model: x_d = x_u (1 + k1 r^2 + k2 r^4), r in focal lengths. */
  k1: z.number().min(-1).max(1).default(0.12),
  k2: z.number().min(-2).max(2).default(-0.25),
  /** Lens focal length (mm) and f-number: the aperture that sets the focus blur. */
  focalLengthMm: z.number().positive().max(100).default(3.6),
  fNumber: z.number().min(0.5).max(64).default(2.9),
  /** Distance the fixed-focus lens is set to, metres (sharp from about half of it to infinity). */
  focusDistance: z.number().positive().max(1000).default(2),
  /** Longest exposure the auto-exposure may use, seconds (never above 1/fps). */
  maxExposure: z
    .number()
    .positive()
    .max(1)
    .default(1 / 30),
  /** Highest analog x digital gain the auto-exposure may use. */
  maxGain: z.number().min(1).max(64).default(8),
  /** 'auto', or a fixed exposure in seconds (then the gain is 1). */
  exposure: z.union([z.literal('auto'), z.number().positive().max(1)]).default('auto'),
  /** Mean linear level auto-exposure aims at (0.18: mid grey). */
  exposureTarget: z.number().positive().max(1).default(0.18),
  /** Electrons that fill one output pixel; photon (shot) noise is their square root. */
  wellElectrons: z.number().positive().max(1e7).default(17200),
  /** Read noise of one output pixel, electrons (RMS). */
  readNoiseElectrons: z.number().min(0).max(1000).default(6),
  /** Exposure (seconds) that fills the well on white paper in the room's nominal light. */
  saturationExposure: z.number().positive().max(10).default(0.008),
  /** 'auto' (grey world) or a fixed colour temperature the camera corrects for, kelvin. */
  whiteBalance: z.union([z.literal('auto'), z.number().min(1000).max(20000)]).default('auto'),
  /** JPEG quality of the capture path (1..100), 0 for none. */
  jpegQuality: z.number().int().min(0).max(100).default(75),
  /** Seed of the sensor noise: the same seed and the same views give the same frames. */
  seed: z.number().int().default(1),
});

export type CameraRealism = z.infer<typeof cameraRealismSchema>;

/** Every default: the module as it comes. */
export const DEFAULT_REALISM: CameraRealism = cameraRealismSchema.parse({});
