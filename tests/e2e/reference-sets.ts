// Wrong reference sets for the check of a shard's precomputed vectors (issue 37, item 3): a shard
// packed by `npm run pack-shard` (its right set, made by the app's encoder in Chromium) copied under
// other names, each with its text.npy replaced by vectors made in Node with transformers.js (the same
// model files) the wrong way while the sidecar still states the right model, prefix and pooling, as a
// set made elsewhere would: a document prefix the model does not use, CLS pooling instead of mean,
// and unit vectors of another model of the same dimension (the generated CLIP's text tower).
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AutoTokenizer, CLIPTextModelWithProjection, env, pipeline } from '@huggingface/transformers';
import { docText } from '../../src/lib/core/retrieval/corpus-batches';
import { precomputedPath, writeNpyF16 } from '../../src/lib/core/shard/precomputed';
import type { Doc } from '../../src/lib/core/types';

export type WrongWay = 'prefix' | 'pooling' | 'model';
export const WRONG_PREFIX = 'passage: ';
const OTHER_MODEL = 'loupe-test/clip-tiny-random';

type Json = Record<string, unknown>;

/** The set's documents' texts, in the order of its rows. */
function setTexts(dir: string, sidecar: { doc_ids: string[] }): string[] {
  const docs = new Map(
    readFileSync(join(dir, 'corpus.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const o = JSON.parse(l) as Json;
        return [o._id as string, { id: o._id, title: o.title, text: o.text } as Doc];
      }),
  );
  return sidecar.doc_ids.map((id) => docText(docs.get(id)!));
}

async function embed(model: string, texts: string[], way: WrongWay): Promise<Float32Array> {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = join(import.meta.dirname, '../../models/generated/');
  const out: number[] = [];
  if (way === 'model') {
    const tok = await AutoTokenizer.from_pretrained(OTHER_MODEL);
    const clip = await CLIPTextModelWithProjection.from_pretrained(OTHER_MODEL, {
      dtype: 'fp32',
      device: 'cpu',
    });
    for (let i = 0; i < texts.length; i += 16) {
      const { text_embeds } = await clip(tok(texts.slice(i, i + 16), { padding: true, truncation: true }));
      const d = text_embeds.data as Float32Array;
      const dim = text_embeds.dims[1];
      for (let r = 0; r < d.length / dim; r++) {
        const row = d.subarray(r * dim, (r + 1) * dim);
        const n = Math.hypot(...row);
        out.push(...Array.from(row, (x) => x / n));
      }
    }
    return Float32Array.from(out);
  }
  const ex = await pipeline('feature-extraction', model, { dtype: 'fp32', device: 'cpu' });
  for (let i = 0; i < texts.length; i += 16) {
    const batch = texts.slice(i, i + 16).map((t) => (way === 'prefix' ? WRONG_PREFIX + t : t));
    const t = await ex(batch, { pooling: way === 'pooling' ? 'cls' : 'mean', normalize: true });
    out.push(...(t.data as Float32Array));
  }
  return Float32Array.from(out);
}

/**
 * Copies the packed shard `dir` (its right fp32 text set of `model`) to `out` named `name`, with
 * the set's vectors made the wrong way `way`; the sidecar is left as it was.
 */
export async function writeWrongSet(dir: string, out: string, name: string, model: string, way: WrongWay) {
  cpSync(dir, out, { recursive: true });
  const manifest = JSON.parse(readFileSync(join(out, 'shard.json'), 'utf8')) as Json;
  writeFileSync(join(out, 'shard.json'), JSON.stringify({ ...manifest, name }, null, 2));
  const folder = join(out, 'embeddings', precomputedPath(model, 'fp32'));
  const sidecar = JSON.parse(readFileSync(join(folder, 'sidecar-text.json'), 'utf8')) as {
    doc_ids: string[];
    dim: number;
  };
  const data = await embed(model, setTexts(out, sidecar), way);
  if (data.length !== sidecar.doc_ids.length * sidecar.dim)
    throw new Error(`${way}: ${data.length} values for ${sidecar.doc_ids.length} × ${sidecar.dim}`);
  writeFileSync(join(folder, 'text.npy'), writeNpyF16(data, sidecar.doc_ids.length, sidecar.dim));
}
