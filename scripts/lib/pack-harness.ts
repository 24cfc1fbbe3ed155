// The page `npm run pack-shard` drives in headless Chromium (served by the Vite dev server at
// /scripts/lib/pack-harness.html): imports a shard from its URL and embeds its corpus with the app's
// own encoder worker (same code, same model files, same pooling as a visitor's browser), then
// returns each part's rows as a float16 .npy and its sidecar.
import { importShard } from '../../src/lib/clients/shard-client';
import { embedCorpus, loadEncoder, registryModel } from '../../src/lib/clients/encoder-client';
import { supportsPart, type Dtype, type EmbedPart } from '../../src/lib/core/retrieval/models';
import {
  PRECOMPUTED_FORMAT,
  writeNpyF16,
  type PrecomputedSidecar,
} from '../../src/lib/core/shard/precomputed';

/** One packed part: the sidecar and the .npy bytes as base64 (page.evaluate returns JSON). */
export interface PackedPart {
  sidecar: PrecomputedSidecar;
  npyBase64: string;
  ms: number;
}

function base64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

const packHarness = {
  /** Imports the shard at `url` and embeds every part of its corpus that `modelId` can embed. */
  async pack(url: string, modelId: string, dtype: Dtype): Promise<PackedPart[]> {
    const spec = registryModel(modelId);
    if (!spec) throw new Error(`${modelId} is not an embedding model of models/registry.json`);
    const imported = await importShard({ kind: 'url', url });
    if (!imported.ok)
      throw new Error(
        `the shard is invalid: ${imported.issues.map((i) => `${i.file}:${i.line ?? ''} ${i.message}`).join('; ')}`,
      );
    const load = { device: 'wasm' as const, dtype };
    const loaded = await loadEncoder(spec, load);
    const out: PackedPart[] = [];
    for (const part of ['text', 'image'] as EmbedPart[]) {
      if (!supportsPart(spec, part)) continue;
      const r = await embedCorpus({ shardHash: imported.summary.hash, spec, part, batchSize: 32, load });
      const missing = new Set(r.missing);
      const rows = r.docIds.flatMap((id, i) => (missing.has(id) ? [] : [i]));
      if (rows.length === 0) continue;
      const data = new Float32Array(rows.length * r.dim);
      rows.forEach((row, j) => data.set(r.embeddings.subarray(row * r.dim, (row + 1) * r.dim), j * r.dim));
      out.push({
        sidecar: {
          format: PRECOMPUTED_FORMAT,
          model_id: spec.id,
          hub_id: spec.hubId,
          revision: spec.revision,
          dtype: loaded.dtype,
          part,
          pooling: spec.pooling,
          normalize: spec.normalize,
          query_prefix: spec.queryPrefix,
          doc_prefix: spec.docPrefix,
          ...(spec.maxTokens !== undefined ? { max_tokens: spec.maxTokens } : {}),
          dim: r.dim,
          vectors: `${part}.npy`,
          doc_ids: rows.map((i) => r.docIds[i]),
          missing: r.missing,
        },
        npyBase64: base64(writeNpyF16(data, rows.length, r.dim)),
        ms: r.ms,
      });
    }
    return out;
  },
};

export type PackHarness = typeof packHarness;
(window as unknown as { packHarness: PackHarness }).packHarness = packHarness;
document.getElementById('status')!.textContent = 'ready';
