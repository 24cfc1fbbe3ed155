// DICOM in the browser: sniff a Blob/File, decode it with the wasm codecs, and turn it into something
// a page can show (browsers cannot display .dcm): ImageData, ImageBitmap or a PNG Blob. Used by the
// encoder worker (DICOM → RGB for the vision model) and, through the Search view, for dropped files.

import {
  decodeDicomImage,
  hasDicomPreamble,
  isDicom,
  type DicomImage,
  type DicomImageOptions,
} from '../../core/media/dicom/image';
import { loadDicomCodecs } from './dicom-codecs';

/** MIME type Loupe gives DICOM blobs in the shard cache. */
export const DICOM_MIME = 'application/dicom';

/** True when a Blob/File is DICOM: its type, a .dcm/.dicom name, or the "DICM" preamble. */
export async function isDicomBlob(blob: Blob): Promise<boolean> {
  if (blob.type === DICOM_MIME) return true;
  const name = 'name' in blob && typeof blob.name === 'string' ? blob.name : undefined;
  const head = new Uint8Array(await blob.slice(0, 132).arrayBuffer());
  return isDicom(head, name) || hasDicomPreamble(head);
}

/**
 * Decodes a DICOM Blob/File (one frame, one window) to RGBA plus its safe metadata. Loads the wasm
 * codecs on first use. Throws DicomError (clear message naming e.g. an unsupported transfer syntax).
 */
export async function decodeDicomBlob(
  blob: Blob,
  opts: Omit<DicomImageOptions, 'codecs'> = {},
): Promise<DicomImage> {
  const bytes = new Uint8Array(await blob.arrayBuffer());
  const codecs = await loadDicomCodecs();
  return decodeDicomImage(bytes, { ...opts, codecs });
}

/** A decoded DICOM frame as ImageData-compatible pixels. */
function toCanvas(img: DicomImage): OffscreenCanvas {
  const canvas = new OffscreenCanvas(img.width, img.height);
  const ctx = canvas.getContext('2d');
  if (!ctx) throw new Error('no 2D canvas context for the DICOM image');
  ctx.putImageData(new ImageData(new Uint8ClampedArray(img.rgba), img.width, img.height), 0, 0);
  return canvas;
}

/** PNG of a decoded DICOM frame (lossless: the 8-bit pixels exactly). */
export function dicomImageToPng(img: DicomImage): Promise<Blob> {
  return toCanvas(img).convertToBlob({ type: 'image/png' });
}

/**
 * What an <img> can show for a shard image: the blob itself for JPEG/PNG/WebP, a PNG rendering (default
 * window, first frame) for DICOM. Pair with URL.createObjectURL / revokeObjectURL as for any blob.
 */
export async function displayableImage(
  blob: Blob,
  opts: Omit<DicomImageOptions, 'codecs'> = {},
): Promise<Blob> {
  if (!(await isDicomBlob(blob))) return blob;
  return dicomImageToPng(await decodeDicomBlob(blob, opts));
}

/** A dropped query file opened for Search: pixels, a PNG to show, and the safe metadata for the drill-down. */
export interface OpenedDicom {
  image: DicomImage;
  /** PNG of the chosen frame and window: show it, and pass it as the query image (same pixels). */
  png: Blob;
}

/**
 * Opens a dropped `.dcm` (or any file with the DICM preamble) for Search. `opts.window` picks one of
 * `image.info.windows` by index, an explicit `{center, width}`, or 'min-max'; `opts.frame` a frame.
 * Call again with new options when the user changes window or frame.
 */
export async function openDicomFile(
  file: Blob,
  opts: Omit<DicomImageOptions, 'codecs'> = {},
): Promise<OpenedDicom> {
  const image = await decodeDicomBlob(file, opts);
  return { image, png: await dicomImageToPng(image) };
}
