// One call from DICOM bytes to display/encoder pixels: parse, decode a frame, apply the LUTs, 8-bit RGBA.
// This is what the shard validator, the encoder worker and the Search view's drop target share.

import { hasDicomPreamble, parseDicom, type DicomIdentifying, type DicomInfo } from './parse';
import { decodeFrame, type DicomCodecs } from './pixels';
import { toRgba, type AppliedWindow, type WindowChoice } from './render';

export { DicomError, IDENTIFYING_TAGS, hasDicomPreamble, parseDicom } from './parse';
export type { DicomIdentifying, DicomInfo, DicomWindow, ParsedDicom } from './parse';
export { decodeFrame, jpegLosslessDecoder } from './pixels';
export type { CodecFrame, DecodedFrame, DicomCodecs, FrameDecoder, Samples } from './pixels';
export { greyLevels, modalityValues, resolveWindow, rgbaToRgb, toRgba, windowLevel } from './render';
export type { AppliedWindow, WindowChoice } from './render';
export { TRANSFER_SYNTAXES, describeSyntax, transferSyntax } from './syntaxes';
export type { TransferSyntax } from './syntaxes';

/** Options of {@link decodeDicomImage}. */
export interface DicomImageOptions {
  /** 0-based frame of a multi-frame file (default 0). */
  frame?: number;
  /** Window: index into `info.windows`, an explicit centre/width, or 'min-max'. Default: the file's first, else min-max. */
  window?: WindowChoice;
  /** Return patient/institution attributes in `identifying` (default false: they are never read out). */
  includeIdentifying?: boolean;
  /** Codecs for the compressed syntaxes (see src/lib/platform/media/dicom-codecs.ts). */
  codecs?: DicomCodecs;
}

/** A decoded DICOM frame ready for display or an image encoder. */
export interface DicomImage {
  width: number;
  height: number;
  /** 8-bit RGBA, row-major (ImageData layout). */
  rgba: Uint8ClampedArray;
  info: DicomInfo;
  frame: number;
  /** The window applied (grey images only). */
  window?: AppliedWindow;
  /** Present only when `includeIdentifying` was set. */
  identifying?: DicomIdentifying;
}

/** True for DICOM: the "DICM" preamble, or a `.dcm` / `.dicom` name. */
export function isDicom(bytes: Uint8Array, name?: string): boolean {
  return hasDicomPreamble(bytes) || (name !== undefined && /\.(dcm|dicom)$/i.test(name));
}

/** Decodes one frame of a DICOM file to 8-bit RGBA. Throws DicomError with a clear message. */
export function decodeDicomImage(bytes: Uint8Array, opts: DicomImageOptions = {}): DicomImage {
  const parsed = parseDicom(bytes, { includeIdentifying: opts.includeIdentifying });
  const frame = opts.frame ?? 0;
  const decoded = decodeFrame(parsed, frame, opts.codecs);
  const { rgba, window } = toRgba(parsed.info, decoded, opts.window);
  const out: DicomImage = { width: decoded.width, height: decoded.height, rgba, info: parsed.info, frame };
  if (window) out.window = window;
  if (parsed.identifying) out.identifying = parsed.identifying;
  return out;
}
