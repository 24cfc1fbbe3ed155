// Multi-image items (MRMR; a radiology study's frontal and lateral views): documents and queries
// with `images: [...]`. Two ways to score them, recorded on the run:
// - mean: one vector per item, the mean of its image vectors (normalised);
// - max: late interaction, every image its own row; an item scores its best (query image, item
//   image) pair. With a text, each image row is fused with the item's text (feature fusion).
import { fuseFeatures } from './dense';
import type { ImageRef } from '../types';

export type MultiImage = 'mean' | 'max';

/** The image paths of a document or query, in order (one for `image`, none without). */
export function itemImagePaths(x: { image?: string; images?: ImageRef[] }): string[] {
  return x.images ? x.images.map((i) => i.path) : x.image ? [x.image] : [];
}

/** Whether any item has more than one image. */
export function hasMultiImageItems(items: Iterable<{ images?: ImageRef[] }>): boolean {
  for (const x of items) if ((x.images?.length ?? 0) > 1) return true;
  return false;
}

/** A run name / description part: "" without multi-image scoring. */
export function describeMultiImage(m: MultiImage | undefined): string {
  return m === 'max' ? 'images max-sim' : m === 'mean' ? 'images mean' : '';
}

/**
 * Document rows for `max` when documents also have a text: every image row fused with its document's
 * text vector (feature fusion); a document with a text and no image is one row of its text; one with
 * neither has no row. `text`: (docs × dim), `textMissing[d]` = 1 where document d has no text;
 * `imageRowDoc[r]`: the document of image row r (rows grouped by document, in document order).
 */
export function fusedItemRows(
  text: Float32Array,
  textMissing: Uint8Array,
  imageRows: Float32Array,
  imageRowDoc: Uint32Array,
  docs: number,
  dim: number,
): { rows: Float32Array; rowDoc: Uint32Array } {
  if (imageRows.length !== imageRowDoc.length * dim)
    throw new RangeError(`${imageRows.length / dim} image rows for ${imageRowDoc.length} owners`);
  const imageCount = new Uint32Array(docs);
  for (const d of imageRowDoc) imageCount[d]++;
  let total = 0;
  for (let d = 0; d < docs; d++) total += imageCount[d] || (textMissing[d] ? 0 : 1);
  const rows = new Float32Array(total * dim);
  const rowDoc = new Uint32Array(total);
  let at = 0;
  let r = 0;
  for (let d = 0; d < docs; d++) {
    const t = text.subarray(d * dim, (d + 1) * dim);
    if (imageCount[d] === 0) {
      if (textMissing[d]) continue;
      rows.set(t, at * dim);
      rowDoc[at++] = d;
      continue;
    }
    for (let k = 0; k < imageCount[d]; k++, r++) {
      const v = imageRows.subarray(r * dim, (r + 1) * dim);
      rows.set(textMissing[d] ? v : fuseFeatures(t, v), at * dim);
      rowDoc[at++] = d;
    }
  }
  return { rows, rowDoc };
}

/** One document part of a corpus as fuseDocParts takes it: its rows, and the documents without it. */
export interface DocPart {
  embeddings: Float32Array;
  missing: string[];
}

/**
 * A corpus's text and image parts as one matrix: each document the normalised sum of its two vectors
 * (or the one it has; neither: missing, a zero row); with `imageRowDoc` (multi-image max, `image`
 * holding every image's row) each image row fused with its document's text (fusedItemRows).
 */
export function fuseDocParts(
  docIds: readonly string[],
  dim: number,
  text: DocPart,
  image: DocPart,
  imageRowDoc?: Uint32Array,
): { matrix: Float32Array; missing: string[]; rowDoc?: Uint32Array } {
  const tMiss = new Set(text.missing);
  if (imageRowDoc) {
    const missing = image.missing.filter((id) => tMiss.has(id));
    const noText = Uint8Array.from(docIds, (id) => (tMiss.has(id) ? 1 : 0));
    const fused = fusedItemRows(text.embeddings, noText, image.embeddings, imageRowDoc, docIds.length, dim);
    return { matrix: fused.rows, missing, rowDoc: fused.rowDoc };
  }
  const vMiss = new Set(image.missing);
  const matrix = new Float32Array(docIds.length * dim);
  const missing: string[] = [];
  docIds.forEach((id, i) => {
    const tr = text.embeddings.subarray(i * dim, (i + 1) * dim);
    const vr = image.embeddings.subarray(i * dim, (i + 1) * dim);
    if (tMiss.has(id) && vMiss.has(id)) missing.push(id);
    else matrix.set(tMiss.has(id) ? vr : vMiss.has(id) ? tr : fuseFeatures(tr, vr), i * dim);
  });
  return { matrix, missing };
}
