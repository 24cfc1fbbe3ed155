// From stored values to display pixels: modality LUT (rescale slope/intercept), VOI LUT (a window,
// with the file's LINEAR / LINEAR_EXACT / SIGMOID function, as PS3.3 C.11.2.1.2), MONOCHROME1 inversion,
// and 8-bit RGBA. Colour images skip the grey-level LUTs (PS3.3 C.11.2.1: they do not apply).

import type { DicomInfo, DicomWindow } from './parse';
import type { DecodedFrame, Samples } from './pixels';

/** The window actually applied, and where it came from. */
export interface AppliedWindow extends DicomWindow {
  /** `file` (one of the file's windows, `index` into DicomInfo.windows), `caller`, or `min-max` (default when none). */
  source: 'file' | 'caller' | 'min-max';
  index?: number;
  /** VOI LUT function used (LINEAR, LINEAR_EXACT or SIGMOID). */
  fn: string;
}

/** Which window to apply: an index into the file's windows, an explicit window, or min-max of the frame. */
export type WindowChoice = number | DicomWindow | 'min-max';

/** Modality values (stored value × slope + intercept, e.g. Hounsfield units) of a grey frame. */
export function modalityValues(info: DicomInfo, frame: DecodedFrame): Float64Array {
  const out = new Float64Array(frame.values.length);
  const { rescaleSlope: m, rescaleIntercept: b } = info;
  for (let i = 0; i < out.length; i++) out[i] = frame.values[i] * m + b;
  return out;
}

/** Smallest and largest value (NaN-free input assumed). */
export function range(v: ArrayLike<number>): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  return [lo, hi];
}

/**
 * Resolves a window choice: default is the file's first window, else min-max of the modality values (a
 * flat image gets width 1). A numeric index past the file's windows is an error.
 */
export function resolveWindow(
  info: DicomInfo,
  values: ArrayLike<number>,
  choice?: WindowChoice,
): AppliedWindow {
  const fn = ['LINEAR', 'LINEAR_EXACT', 'SIGMOID'].includes(info.voiLutFunction)
    ? info.voiLutFunction
    : 'LINEAR';
  if (choice === undefined) choice = info.windows.length > 0 ? 0 : 'min-max';
  if (typeof choice === 'number') {
    const w = info.windows[choice];
    if (!w)
      throw new RangeError(`window ${choice} does not exist: the file has ${info.windows.length} window(s)`);
    return { ...w, source: 'file', index: choice, fn };
  }
  if (choice === 'min-max') {
    const [lo, hi] = range(values);
    // LINEAR_EXACT maps [center − width/2, center + width/2] exactly onto the output range.
    return { center: (lo + hi) / 2, width: Math.max(hi - lo, 1), source: 'min-max', fn: 'LINEAR_EXACT' };
  }
  if (!(choice.width > 0) || !Number.isFinite(choice.center))
    throw new RangeError(`window width must be > 0 and centre finite (got ${choice.center}/${choice.width})`);
  return { ...choice, source: 'caller', fn };
}

/** A VOI window's output in [0, 1] for a modality value x (PS3.3 C.11.2.1.2.1 / .3.1 / .3.2). */
export function windowLevel(x: number, w: AppliedWindow): number {
  const { center: c, width } = w;
  if (w.fn === 'SIGMOID') return 1 / (1 + Math.exp((-4 * (x - c)) / width));
  if (w.fn === 'LINEAR_EXACT') {
    if (x <= c - width / 2) return 0;
    if (x > c + width / 2) return 1;
    return (x - c) / width + 0.5;
  }
  if (width <= 1) return x <= c - 0.5 ? 0 : 1;
  if (x <= c - 0.5 - (width - 1) / 2) return 0;
  if (x > c - 0.5 + (width - 1) / 2) return 1;
  return (x - (c - 0.5)) / (width - 1) + 0.5;
}

/** Display values in [0, 1] of a grey frame: modality LUT, window, then MONOCHROME1 inversion. */
export function greyLevels(
  info: DicomInfo,
  frame: DecodedFrame,
  choice?: WindowChoice,
): { levels: Float64Array; window: AppliedWindow } {
  const mv = modalityValues(info, frame);
  const window = resolveWindow(info, mv, choice);
  const invert = frame.photometric === 'MONOCHROME1';
  const levels = new Float64Array(mv.length);
  for (let i = 0; i < mv.length; i++) {
    const v = windowLevel(mv[i], window);
    levels[i] = invert ? 1 - v : v;
  }
  return { levels, window };
}

/** YCbCr (full range, PS3.3 C.7.6.3.1.2) to RGB for one 8-bit-or-scaled sample triple. */
function ybrToRgb(y: number, cb: number, cr: number, max: number): [number, number, number] {
  const h = (max + 1) / 2;
  return [y + 1.402 * (cr - h), y - 0.344136 * (cb - h) - 0.714136 * (cr - h), y + 1.772 * (cb - h)];
}

/** 8-bit RGBA pixels of a frame, plus the window used for a grey image (undefined for colour). */
export function toRgba(
  info: DicomInfo,
  frame: DecodedFrame,
  choice?: WindowChoice,
): { rgba: Uint8ClampedArray; window?: AppliedWindow } {
  const n = frame.width * frame.height;
  const rgba = new Uint8ClampedArray(n * 4);
  if (frame.samples === 1) {
    const { levels, window } = greyLevels(info, frame, choice);
    for (let i = 0; i < n; i++) {
      const g = Math.round(levels[i] * 255);
      rgba[i * 4] = rgba[i * 4 + 1] = rgba[i * 4 + 2] = g;
      rgba[i * 4 + 3] = 255;
    }
    return { rgba, window };
  }
  // Colour: scale Bits Stored to 8 bits; YBR stored natively is converted here.
  const max = 2 ** info.bitsStored - 1;
  const scale = 255 / max;
  const ybr = frame.photometric.startsWith('YBR');
  const v: Samples = frame.values;
  for (let i = 0; i < n; i++) {
    let r = v[i * 3];
    let g = v[i * 3 + 1];
    let b = v[i * 3 + 2];
    if (ybr) [r, g, b] = ybrToRgb(r, g, b, max);
    rgba[i * 4] = Math.round(r * scale);
    rgba[i * 4 + 1] = Math.round(g * scale);
    rgba[i * 4 + 2] = Math.round(b * scale);
    rgba[i * 4 + 3] = 255;
  }
  return { rgba, window: undefined };
}

/** RGB (3 channels, no alpha) from RGBA: the layout transformers.js's RawImage(…, 3) takes. */
export function rgbaToRgb(rgba: Uint8ClampedArray): Uint8ClampedArray {
  const n = rgba.length / 4;
  const rgb = new Uint8ClampedArray(n * 3);
  for (let i = 0; i < n; i++) {
    rgb[i * 3] = rgba[i * 4];
    rgb[i * 3 + 1] = rgba[i * 4 + 1];
    rgb[i * 3 + 2] = rgba[i * 4 + 2];
  }
  return rgb;
}
