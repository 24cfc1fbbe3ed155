// Images: decoding (DICOM through its LUTs, anything else through the browser), the processor's
// resize and normalisation, the vision tower's forward pass; and the embedImages call.
import * as Comlink from 'comlink';
import { RawImage, type Tensor } from '@huggingface/transformers';
import { decodeDicomBlob, isDicomBlob } from '../../src/lib/platform/media/dicom-image';
import { rgbaToRgb } from '../../src/lib/core/media/dicom/image';
import type { ModelSpec } from '../../src/lib/core/retrieval/models';
import { checkBatchSize } from '../../src/lib/core/retrieval/corpus-batches';
import { throttle } from '../../src/lib/core/throttle';
import { errorText } from './environment';
import { onActive } from './session';
import { floatData, l2normalizeRows, stages } from './text';
import type { Encoder, OnProgress } from './types';

/** WARMUP_IMAGE_SIZE: side in pixels of the grey image used to warm up a vision tower. */
export const WARMUP_IMAGE_SIZE = 32;

/** Embeds one batch of decoded images with the vision tower: (images × dim) floats. */
export async function embedImageBatch(
  enc: Encoder,
  spec: ModelSpec,
  images: RawImage[],
): Promise<Float32Array> {
  if (!enc.visionModel || !enc.processor) throw new Error(`${spec.id} has no image encoder`);
  const t0 = stages ? performance.now() : 0;
  const inputs = (await enc.processor(images)) as Record<string, Tensor>;
  const t1 = stages ? performance.now() : 0;
  const out = (await enc.visionModel(inputs)) as Record<string, Tensor>;
  if (stages) {
    stages.preprocessMs += t1 - t0;
    stages.encodeMs += performance.now() - t1;
  }
  const t = spec.kind === 'clip' ? out.image_embeds : out.pooler_output;
  if (!t)
    throw new Error(
      `${spec.id}: the vision model has no ${spec.kind === 'clip' ? 'image_embeds' : 'pooler_output'} output`,
    );
  const vecs = floatData(t).slice();
  if (spec.normalize) l2normalizeRows(vecs, vecs.length / images.length);
  return vecs;
}

/** Decodes an image file (DICOM or any format the browser reads); `label` names it in errors. */
export async function decode(blob: Blob, label: string): Promise<RawImage> {
  try {
    if (await isDicomBlob(blob)) {
      // DICOM: LUTs (default window, first frame) to 8-bit RGB, the layout the image processor takes.
      const img = await decodeDicomBlob(blob);
      return new RawImage(rgbaToRgb(img.rgba), img.width, img.height, 3);
    }
    return await RawImage.fromBlob(blob);
  } catch (e) {
    throw new Error(`could not decode image ${label}: ${errorText(e)}`);
  }
}

/** Embeds image files (decoded and preprocessed here) with the active CLIP/SigLIP model, transferred. */
export async function embedImages(blobs: Blob[], batchSize = 16, onProgress?: OnProgress) {
  checkBatchSize(batchSize);
  const report = throttle(onProgress);
  let out: Float32Array | null = null;
  for (let i = 0; i < blobs.length; i += batchSize) {
    const part = blobs.slice(i, i + batchSize);
    const images = await Promise.all(part.map((b, k) => decode(b, `#${i + k}`)));
    const v = await onActive((enc, spec) => embedImageBatch(enc, spec, images));
    const dim = v.length / part.length;
    out ??= new Float32Array(blobs.length * dim);
    out.set(v, i * dim);
    report({ kind: 'embed', done: i + part.length, total: blobs.length, docsPerSec: 0, items: 'images' });
  }
  report.flush();
  out ??= new Float32Array(0);
  return Comlink.transfer(out, [out.buffer]);
}
