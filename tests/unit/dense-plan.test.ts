// The dense run as a plan (core/retrieval/dense-plan.ts), case by case without a browser: the steps
// state/dense.ts walks, in order, with the reason of each.
import { describe, expect, it } from 'vitest';
import {
  compactFromRows,
  describePlan,
  planDenseRun,
  type DenseFacts,
  type DenseStep,
} from '../../src/lib/core/retrieval/dense-plan';
import { corpusEmbeddingKey, type ModelSpec } from '../../src/lib/core/retrieval/models';
import type { TaskInfo } from '../../src/lib/core/types';

const minilm = { id: 'minilm', label: 'MiniLM', kind: 'text', dim: 384, dtypes: ['fp32', 'q8'] } as ModelSpec;
const clip = { id: 'clip', label: 'CLIP', kind: 'clip', dim: 512, dtypes: ['fp32'] } as ModelSpec;
const textTask: TaskInfo = { id: 't', queryModality: 'text', corpusModality: 'text' };
const imageTask: TaskInfo = { id: 'i', queryModality: 'image+text', corpusModality: 'image' };
const encoder = { device: 'wasm', dtype: 'fp32', dim: 384, deviceReason: 'WASM as requested' };
/** The 384-dimension threshold of the compact store: 256 MiB of float32 rows. */
const FROM = compactFromRows(384);

const facts = (over: Partial<DenseFacts> = {}): DenseFacts => ({
  spec: minilm,
  task: textTask,
  settings: { fusion: 'both' },
  adhoc: false,
  ...over,
});
const kinds = (steps: DenseStep[]) =>
  steps.map(
    (s) =>
      s.kind +
      ('part' in s ? `:${s.part}` : 'store' in s ? `:${s.store}` : 'index' in s ? `:${s.index}` : ''),
  );

describe('the dense run as a plan', () => {
  it('below the memory budget: the float32 matrix, queries after the corpus, nothing stopped', () => {
    const p = planDenseRun(facts({ docs: 5_000, encoder }));
    expect(kinds(p.steps)).toEqual([
      'load-model',
      'embed-corpus:text',
      'store:matrix',
      'embed-queries',
      'rank:matrix',
    ]);
    expect(p.steps[0].why).toBe('fp32 on wasm: WASM as requested');
    // The stream plan is there (the encoder worker streams only from `fromDocs` rows), unused here.
    expect(p.stream?.fromDocs).toBe(FROM);
    expect(p.steps.find((s) => s.kind === 'embed-corpus')).toMatchObject({ stream: false });
  });

  it('queries first with the encoder freed, BM25 stopped, rows streamed to the compact store', () => {
    const p = planDenseRun(facts({ docs: 1_000_000, encoder, corpusRows: 1_000_000 }));
    expect(kinds(p.steps)).toEqual([
      'free-bm25',
      'load-model',
      'embed-queries',
      'free-encoder',
      'embed-corpus:text',
      'store:compact',
      'rank:compact',
    ]);
    expect(p.steps.find((s) => s.kind === 'embed-corpus')).toMatchObject({ stream: true });
    expect(p.steps.find((s) => s.kind === 'free-encoder')!.why).toContain('ORT never gives it back');
    expect(p.steps[0].why).toContain('1000000 documents');
    // The store key of a streamed corpus is the retrieval worker's key of the same embeddings.
    expect(p.stream!.storeKey('k')).toBe('k');
    // Before the model is loaded, the plan goes as far as loading it (the executor plans again).
    expect(kinds(planDenseRun(facts({ docs: 1_000_000 })).steps)).toEqual(['free-bm25', 'load-model']);
  });

  it('compact store under a budget moved by the link (compact-from)', () => {
    const settings = { fusion: 'both' as const, compactFrom: 10_000 };
    const below = planDenseRun(facts({ settings, docs: 9_999, encoder, corpusRows: 9_999 }));
    expect(kinds(below.steps)).not.toContain('free-bm25');
    expect(kinds(below.steps)).toContain('store:matrix');
    const at = planDenseRun(facts({ settings, docs: 10_000, encoder, corpusRows: 10_000 }));
    expect(kinds(at.steps)).toContain('store:compact');
    expect(kinds(at.steps)).toContain('free-encoder');
    expect(at.steps.find((s) => s.kind === 'store')!.why).toContain('threshold of 10000');
  });

  it('a corpus the summary did not count (an ad-hoc query): the rows embedded decide the store', () => {
    const p = planDenseRun(facts({ adhoc: true, encoder, corpusRows: FROM }));
    // No queries first and no BM25 stop for a typed query; the store from the rows it embedded.
    expect(kinds(p.steps)).toEqual([
      'load-model',
      'embed-corpus:text',
      'store:compact',
      'embed-queries',
      'rank:compact',
    ]);
  });

  it('prefetched vectors: a typed query takes the parts embedded ahead', () => {
    const p = planDenseRun(facts({ adhoc: true, prefetch: true, encoder, held: 'matrix' }));
    expect(kinds(p.steps)).toEqual(['load-model', 'embed-queries', 'rank:matrix']);
    expect(p.steps[1].why).toContain('the parts embedded ahead');
    // Without a prefetch lookup, and for a task's queries, nothing is said of it.
    expect(planDenseRun(facts({ adhoc: true, encoder, held: 'matrix' })).steps[1].why).not.toContain('ahead');
  });

  it('a stored set reused: a corpus a worker holds since the last query is not read again', () => {
    const p = planDenseRun(facts({ adhoc: true, encoder, held: 'compact' }));
    expect(kinds(p.steps)).toEqual(['load-model', 'embed-queries', 'rank:compact']);
    expect(p.steps[2].why).toContain('nothing is read or sent again');
    // The set dtypes of the shard say why the model loaded at its dtype.
    const auto = planDenseRun(facts({ encoder, setDtypes: ['fp32'], docs: 10 }));
    expect(auto.steps[0].why).toContain('the shard has vectors of this model at fp32');
  });

  it('remote IVF: only the queries are embedded, the packed index is searched on the host', () => {
    const p = planDenseRun(facts({ docs: 1_000_000, encoder, packedIndex: 'ivf-text.bin' }));
    expect(kinds(p.steps)).toEqual(['free-bm25', 'load-model', 'embed-queries', 'search-packed-index']);
    expect(p.steps[2].why).toContain('ivf-text.bin');
    // Without one: the corpus locally.
    const local = planDenseRun(facts({ docs: 1_000_000, encoder }));
    expect(kinds(local.steps)).toContain('embed-corpus:text');
    expect(kinds(local.steps)).not.toContain('search-packed-index');
  });

  it('chunking: max keeps several rows a document (the matrix, queries not first), max with HNSW searches exactly', () => {
    const chunking = { size: 256, overlap: 32, aggregate: 'max' } as never;
    const p = planDenseRun(
      facts({
        settings: { fusion: 'both', chunking },
        docs: FROM,
        encoder,
        corpusRows: FROM,
        rowsPerDoc: true,
      }),
    );
    expect(p.chunking).toBe(chunking);
    expect(kinds(p.steps)).not.toContain('free-encoder');
    expect(kinds(p.steps)).toContain('store:matrix');
    expect(p.steps.find((s) => s.kind === 'embed-corpus')).toMatchObject({ stream: false });
    expect(p.steps.find((s) => s.kind === 'embed-corpus')!.why).toContain('long texts in windows (max)');
    const ann = { M: 16, efConstruction: 200, efSearch: 64 };
    const exact = planDenseRun(facts({ settings: { fusion: 'both', chunking, ann }, docs: 10, encoder }));
    expect(exact.ann).toBeUndefined();
    expect(exact.notes).toContain(
      'searches exactly: max over chunks keeps several vectors per document, an HNSW index one',
    );
    expect(kinds(exact.steps)).not.toContain('build-hnsw');
    // Mean keeps one vector a document: HNSW as asked.
    const mean = { ...(chunking as object), aggregate: 'mean' } as never;
    const hnsw = planDenseRun(
      facts({ settings: { fusion: 'both', chunking: mean, ann }, docs: 10, encoder }),
    );
    expect(kinds(hnsw.steps).slice(-2)).toEqual(['build-hnsw', 'rank:hnsw']);
  });

  it('multi-image: every image of an item; max fused with the text, exact search, never streamed', () => {
    const settings = { fusion: 'both' as const, multiImage: 'max' as const, multiImageDocs: true };
    const task: TaskInfo = { id: 'm', queryModality: 'image', corpusModality: 'image+text' };
    const p = planDenseRun(
      facts({ spec: clip, task, settings, docs: 100, encoder: { ...encoder, dim: 512 } }),
    );
    expect(p.multiImage).toBe('max');
    expect(p.allDocImages).toBe(true);
    expect(p.stream).toBeUndefined();
    expect(kinds(p.steps)).toEqual([
      'load-model',
      'embed-corpus:text',
      'embed-corpus:image',
      'store:matrix',
      'embed-queries',
      'rank:matrix',
    ]);
    expect(p.steps[2].why).toContain('every image of an item (max)');
    expect(p.notes).toContain(
      'max over images: each image is fused with its document’s text (feature fusion)',
    );
    // A text task has no images: the setting does not apply.
    expect(planDenseRun(facts({ settings, encoder })).multiImage).toBeUndefined();
  });

  it('image + text queries against images: no streaming (a query image may be a corpus image)', () => {
    const p = planDenseRun(
      facts({ spec: clip, task: imageTask, docs: 2_000_000, encoder: { ...encoder, dim: 512 } }),
    );
    expect(p.stream).toBeUndefined();
    expect(kinds(p.steps)).not.toContain('free-encoder');
    expect(p.steps.at(-1)!.why).toContain('by both fusion');
  });

  it('a model that cannot run the task says why', () => {
    const p = planDenseRun(facts({ task: { id: 'x', queryModality: 'image', corpusModality: 'image' } }));
    expect(p.parts.canRun).toBe(false);
    expect(p.parts.notes).toEqual([
      'ranks documents by their text: MiniLM has no image tower',
      'cannot embed this task’s image-only queries',
    ]);
  });

  it('names the key a worker holds the corpus under once the encoder is loaded (an ad-hoc query after another)', () => {
    expect(planDenseRun(facts({ shardHash: 'abc' })).corpusKey).toBeUndefined();
    const text = planDenseRun(facts({ shardHash: 'abc', encoder })).corpusKey;
    expect(text).toBe(corpusEmbeddingKey('abc', minilm, 'fp32', 'text'));
    // An image + text corpus: both parts' keys; chunking and multi-image say how they were aggregated.
    const both = planDenseRun(
      facts({
        spec: clip,
        task: { id: 'b', queryModality: 'text', corpusModality: 'image+text' },
        settings: { fusion: 'both', multiImage: 'max', multiImageDocs: true },
        shardHash: 'abc',
        encoder,
      }),
    ).corpusKey;
    const keys = (['text', 'image'] as const).map((p) =>
      corpusEmbeddingKey('abc', clip, 'fp32', p, undefined, p === 'image'),
    );
    expect(both).toBe(`${keys.join('+')}|img=max`);
  });

  it('reads as the run details show it: what was done, and why', () => {
    const p = planDenseRun(facts({ docs: 1_000_000, encoder, corpusRows: 1_000_000 }));
    const shown = describePlan(p.steps);
    expect(shown.map((s) => s.does)).toEqual([
      'Freed the BM25 index’s memory',
      'Loaded the model',
      'Embedded the queries',
      'Stopped the encoder worker',
      'Took the corpus vectors (text)',
      'Handed the corpus to the compact store',
      'Ranked the queries against the compact store',
    ]);
    expect(shown.every((s) => s.why.length > 10)).toBe(true);
  });
});

describe('the check of the reference vectors (issue 37)', () => {
  it('comes right after the model loads, before anything is embedded or ranked, when a set is used', () => {
    const reference = { sets: ['embeddings/minilm/fp32/text.npy'] };
    const p = planDenseRun(facts({ docs: 5_000, encoder, reference }));
    expect(kinds(p.steps)).toEqual([
      'load-model',
      'check-reference',
      'embed-corpus:text',
      'store:matrix',
      'embed-queries',
      'rank:matrix',
    ]);
    expect(p.steps[1].why).toBe(
      "a probe of 16 of the shard's documents (seed 37) embedded with fp32 on wasm and compared with the stored rows of embeddings/minilm/fp32/text.npy: every cosine ≥ 0.999, else the run stops before any result",
    );
    expect(describePlan(p.steps)[1].does).toBe('Checked the shard’s reference vectors');
    // A packed index: before the queries are embedded and the index searched.
    const ivf = planDenseRun(
      facts({ encoder, reference: { sets: ['ivf-text.bin'] }, packedIndex: 'ivf-text.bin' }),
    );
    expect(kinds(ivf.steps)).toEqual([
      'load-model',
      'check-reference',
      'embed-queries',
      'search-packed-index',
    ]);
    // A search after another: the check kept for the tab.
    const held = planDenseRun(
      facts({ adhoc: true, encoder, held: 'matrix', reference: { ...reference, cached: true } }),
    );
    expect(kinds(held.steps)).toEqual(['load-model', 'check-reference', 'embed-queries', 'rank:matrix']);
    expect(held.steps[1].why).toMatch(/checked earlier in this tab/);
    const skip = planDenseRun(facts({ encoder, reference: { ...reference, skip: true } }));
    expect(skip.steps[1].why).toMatch(/^not checked: run anyway as asked.*marked unchecked$/);
  });

  it('is no step when no set is used, or before the model is loaded', () => {
    expect(kinds(planDenseRun(facts({ encoder, reference: { sets: [] } })).steps)).not.toContain(
      'check-reference',
    );
    expect(kinds(planDenseRun(facts({ reference: { sets: ['x.npy'] } })).steps)).toEqual(['load-model']);
  });
});
