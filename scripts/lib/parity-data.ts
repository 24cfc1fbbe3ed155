// Inputs and pixel comparisons shared by scripts/parity.ts, scripts/bench-encode.ts and
// tests/e2e/parity.test.ts: medquad texts, vqa-rad images (read only, from the shared data folder).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { RawImage } from '@huggingface/transformers';
import { docText, readJsonl } from './native-encoder';

/** The shared data folder (LOUPE_DATA_DIR, else ../shared/data beside the repository). */
export const DATA_DIR = resolve(
  process.env.LOUPE_DATA_DIR ?? resolve(import.meta.dirname, '../../../shared/data'),
);

/** CLIPImageProcessor's normalisation std (preprocessor_config.json of the generated CLIP models). */
export const IMAGE_STD = [0.26862954, 0.26130258, 0.27577711];

/** `n` rows spread evenly over a list (deterministic). */
export function spread<T>(rows: T[], n: number): T[] {
  if (n >= rows.length) return rows.slice();
  return Array.from({ length: n }, (_, i) => rows[Math.floor((i * rows.length) / n)]);
}

/** medquad documents (title + text, as the worker embeds them), `n` spread over the corpus. */
export function medquadDocs(n: number): string[] {
  return spread(readJsonl<{ title?: string; text?: string }>(join(DATA_DIR, 'medquad/corpus.jsonl')), n).map(
    docText,
  );
}

/** medquad queries, `n` spread over the file. */
export function medquadQueries(n: number): string[] {
  return spread(readJsonl<{ text: string }>(join(DATA_DIR, 'medquad/queries.jsonl')), n).map((q) => q.text);
}

/** Paths (shard-relative) of `n` vqa-rad images spread over the corpus. */
export function vqaRadImages(n: number): string[] {
  const rows = readJsonl<{ image?: string }>(join(DATA_DIR, 'vqa-rad/corpus.jsonl'))
    .map((d) => d.image)
    .filter((p): p is string => !!p);
  return spread(rows, n);
}

/** Decodes vqa-rad images in Node (transformers.js: sharp). */
export function readVqaRadImages(paths: string[]): Promise<RawImage[]> {
  return Promise.all(
    paths.map((p) => RawImage.fromBlob(new Blob([readFileSync(join(DATA_DIR, 'vqa-rad', p))]))),
  );
}

export interface PixelDiff {
  images: number;
  /** Decoded RGB bytes (before resize), browser (createImageBitmap) vs Node (sharp), in 8-bit levels. */
  decode: { maxAbs: number; meanAbs: number; sizesEqual: boolean };
  /** pixel_values after resize, crop and normalisation. */
  preprocessed: {
    maxAbsNormalized: number;
    maxAbsLevels: number;
    meanAbsLevels: number;
    /** Percentiles of |Δ| in 8-bit levels over every value. */
    p50Levels: number;
    p99Levels: number;
    p999Levels: number;
    /** Share of values more than one 8-bit level apart. */
    overOneLevel: number;
  };
}

/** Decode-stage and preprocessed-pixel differences between the browser's and Node's preprocessing. */
export function comparePixels(
  browser: { dims: number[]; decoded: { width: number; height: number; b64: string }[] },
  browserPixels: Float32Array,
  nodeImages: RawImage[],
  nodePixels: Float32Array,
): PixelDiff {
  let maxAbs = 0;
  let sum = 0;
  let count = 0;
  let sizesEqual = true;
  browser.decoded.forEach((d, i) => {
    const node = nodeImages[i].rgb();
    if (node.width !== d.width || node.height !== d.height) {
      sizesEqual = false;
      return;
    }
    const b = Buffer.from(d.b64, 'base64');
    for (let k = 0; k < b.length; k++) {
      const diff = Math.abs(b[k] - node.data[k]);
      maxAbs = Math.max(maxAbs, diff);
      sum += diff;
      count++;
    }
  });
  const [n, c, h, w] = browser.dims;
  const total = n * c * h * w;
  let maxNorm = 0;
  let maxLevels = 0;
  let sumLevels = 0;
  let over = 0;
  const all = new Float32Array(total);
  for (let i = 0; i < total; i++) {
    const ch = Math.floor(i / (h * w)) % c;
    const d = Math.abs(browserPixels[i] - nodePixels[i]);
    const levels = d * IMAGE_STD[ch] * 255;
    all[i] = levels;
    maxNorm = Math.max(maxNorm, d);
    maxLevels = Math.max(maxLevels, levels);
    sumLevels += levels;
    if (levels > 1 + 1e-3) over++;
  }
  all.sort();
  const pct = (q: number) => all[Math.min(total - 1, Math.floor(q * total))];
  return {
    images: n,
    decode: { maxAbs, meanAbs: count ? sum / count : 0, sizesEqual },
    preprocessed: {
      maxAbsNormalized: maxNorm,
      maxAbsLevels: maxLevels,
      meanAbsLevels: sumLevels / total,
      p50Levels: pct(0.5),
      p99Levels: pct(0.99),
      p999Levels: pct(0.999),
      overOneLevel: over / total,
    },
  };
}
