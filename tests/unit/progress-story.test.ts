// The first query's progress line: each model file's bytes with the rate and the time left once
// measurable, compiling, the corpus embedded (with its rate and time left) or taken from the shard's
// precomputed embeddings or the stored batches, and the phase each tick is timed as.
import { describe, expect, it } from 'vitest';
import { DownloadTally, formatSeconds, phaseOf, progressText } from '../../src/lib/state/progress-story';

const MiB = 1024 * 1024;

describe('progress line', () => {
  it('a download shows bytes, then its rate and time left once a quarter second has passed', () => {
    const p = { kind: 'download' as const, file: 'onnx/model.onnx', loaded: 2 * MiB, total: 10 * MiB };
    expect(progressText(p, null, 0)).toBe('Downloading onnx/model.onnx: 2.0 MiB of 10 MiB');
    // Too soon after the first sample: no rate yet.
    const first = { file: 'onnx/model.onnx', at: 1000, loaded: 0 };
    expect(progressText(p, first, 1100)).not.toMatch(/\/s/);
    // 2 MiB in 1 s: 2 MiB/s, 8 MiB left: 4 s.
    expect(progressText(p, first, 2000)).toBe(
      'Downloading onnx/model.onnx: 2.0 MiB of 10 MiB · 2.0 MiB/s · 4 s left',
    );
    // Another file's sample does not give this one a rate.
    expect(progressText(p, { ...first, file: 'tokenizer.json' }, 2000)).not.toMatch(/\/s/);
    // Without a length from the server: the rate, no time left.
    expect(progressText({ ...p, total: undefined }, first, 2000)).toBe(
      'Downloading onnx/model.onnx: 2.0 MiB · 2.0 MiB/s',
    );
  });

  it("a model's files downloading side by side make one line, summed, that does not flip", () => {
    const tally = new DownloadTally();
    const loading = (file: string) => ({ kind: 'status' as const, message: `Loading ${file}` });
    const preparing = { kind: 'status' as const, message: 'Preparing the model (tokenizer, ONNX session)' };
    const dl = (file: string, loaded: number, total?: number) => ({
      kind: 'download' as const,
      file,
      loaded,
      total,
    });
    const line = (p: ReturnType<DownloadTally['take']>) => (p ? progressText(p, null, 0) : null);
    // Before any download, a file's start is shown as it is.
    expect(line(tally.take(loading('tokenizer.json')))).toBe('Loading tokenizer.json');
    expect(line(tally.take(dl('tokenizer.json', MiB, 2 * MiB)))).toBe(
      'Downloading tokenizer.json: 1.0 MiB of 2.0 MiB',
    );
    // The weights start while the tokenizer is still coming in: no "Loading" line, the sum instead,
    // named after the largest file.
    expect(tally.take(loading('onnx/text_model.onnx'))).toBeNull();
    expect(line(tally.take(dl('onnx/text_model.onnx', MiB, 8 * MiB)))).toBe(
      'Downloading onnx/text_model.onnx and 1 more file: 2.0 MiB of 10 MiB',
    );
    // The tokenizer is in while the weights are not: "Preparing the model" waits.
    expect(line(tally.take(dl('tokenizer.json', 2 * MiB, 2 * MiB)))).toBe(
      'Downloading onnx/text_model.onnx and 1 more file: 3.0 MiB of 10 MiB',
    );
    expect(tally.take(preparing)).toBeNull();
    // A file of unknown length keeps the total unknown.
    expect(line(tally.take(dl('config.json', 512)))).toBe(
      'Downloading onnx/text_model.onnx and 2 more files: 3.0 MiB',
    );
    tally.take(dl('config.json', 1024, 1024));
    expect(line(tally.take(dl('onnx/text_model.onnx', 8 * MiB, 8 * MiB)))).toBe(
      'Downloading onnx/text_model.onnx and 2 more files: 10 MiB of 10 MiB',
    );
    // All in: the preparation shows; the next step starts a new tally.
    expect(line(tally.take(preparing))).toBe('Preparing the model (tokenizer, ONNX session)');
    expect(tally.take({ kind: 'compile', model: 'CLIP tiny', device: 'WASM' })).not.toBeNull();
    expect(line(tally.take(dl('onnx/vision_model.onnx', MiB, 4 * MiB)))).toBe(
      'Downloading onnx/vision_model.onnx: 1.0 MiB of 4.0 MiB',
    );
  });

  it('compiling, embedding, precomputed and stored embeddings say which', () => {
    expect(progressText({ kind: 'compile', model: 'CLIP tiny', device: 'WASM' }, null, 0)).toBe(
      'Warming up CLIP tiny on WASM (compiling its kernels)',
    );
    const embed = {
      kind: 'embed' as const,
      done: 64,
      total: 3000,
      docsPerSec: 32,
      reused: 0,
      precomputed: 0,
    };
    // Before the first batch, whether stored batches cover the corpus is not known: no "Embedding".
    expect(progressText({ ...embed, done: 0 }, null, 0)).toBe('Corpus embeddings: 0 / 3,000 documents');
    expect(progressText(embed, null, 0)).toBe(
      'Embedding the corpus: 64 / 3,000 documents · 32.0 docs/s · 1 min 32 s left',
    );
    expect(progressText({ ...embed, from: 'precomputed', precomputed: 64 }, null, 0)).toBe(
      "Using the shard's precomputed embeddings: 64 / 3,000 documents",
    );
    expect(progressText({ ...embed, reused: 64, docsPerSec: 0 }, null, 0)).toBe(
      'Reading the stored corpus embeddings: 64 / 3,000 documents',
    );
    expect(progressText({ ...embed, items: 'queries', done: 500, total: 1000 }, null, 0)).toBe(
      'Embedding the queries: 500 / 1,000',
    );
    expect(progressText({ ...embed, done: 3000 }, null, 0)).toBe(
      'Embedding the corpus: 3,000 / 3,000 documents · 32.0 docs/s',
    );
  });

  it('each tick belongs to a phase', () => {
    expect(phaseOf({ kind: 'download', file: 'a', loaded: 1 })).toBe('download');
    expect(phaseOf({ kind: 'status', message: 'Loading CLIP tiny for WASM (fp32)' })).toBe('load');
    expect(phaseOf({ kind: 'status', message: 'Reading shard from IndexedDB' })).toBe('other');
    expect(phaseOf({ kind: 'status', message: 'Preparing the model (tokenizer, ONNX session)' })).toBe(
      'prepare',
    );
    expect(phaseOf({ kind: 'compile', model: 'm', device: 'WASM' })).toBe('compile');
    const embed = { kind: 'embed' as const, done: 0, total: 10, docsPerSec: 0 };
    expect(phaseOf(embed)).toBe('embed');
    expect(phaseOf({ ...embed, from: 'precomputed' })).toBe('precomputed');
    expect(phaseOf({ ...embed, done: 5, reused: 5 })).toBe('reuse');
    expect(phaseOf({ ...embed, items: 'queries' })).toBe('queries');
  });

  it('a streamed import: bytes of the total, documents per second and time left, then records committed', () => {
    const read = { kind: 'read' as const, file: 'corpus.jsonl', bytes: 40 * MiB, totalBytes: 110 * MiB };
    expect(progressText({ ...read, docsPerSec: 12345.4, etaSeconds: 61 }, null, 0)).toBe(
      'Reading corpus.jsonl: 40 MiB of 110 MiB · 12,345 docs/s · 1 min 1 s left',
    );
    expect(progressText({ ...read, file: 'queries.jsonl', docsPerSec: 900 }, null, 0)).toBe(
      'Reading queries.jsonl: 40 MiB of 110 MiB · 900 lines/s',
    );
    expect(progressText(read, null, 0)).toBe('Reading corpus.jsonl: 40 MiB of 110 MiB');
    // A Parquet corpus is said by its file, its row groups' bytes and its rows.
    const pq = { ...read, file: 'corpus/test-00001-of-00004.parquet', docsPerSec: 9000.2, etaSeconds: 5 };
    expect(progressText(pq, null, 0)).toBe(
      'Reading corpus/test-00001-of-00004.parquet: 40 MiB of 110 MiB · 9,000 rows/s · 5 s left',
    );
    expect(progressText({ kind: 'parse', file: pq.file, lines: 25_000 }, null, 0)).toBe(
      'Parsing corpus/test-00001-of-00004.parquet: row 25,000',
    );
    const store = { kind: 'store' as const, done: 40_000, total: 110_000 };
    expect(
      progressText(
        { ...store, what: 'documents', docTotal: 100_000, docsPerSec: 5000, etaSeconds: 14 },
        null,
        0,
      ),
    ).toBe(
      'Caching in IndexedDB: 40,000 / 100,000 documents (then 10,000 queries, judgements and images) · 5,000 records/s · 14 s left',
    );
    // Counted as the offer to resume a stopped import counts: documents first, then the rest.
    expect(
      progressText(
        { kind: 'store', what: 'documents', docTotal: 100_000, done: 104_000, total: 110_000 },
        null,
        0,
      ),
    ).toBe('Caching in IndexedDB: 100,000 documents, 4,000 / 10,000 queries, judgements and images');
    expect(progressText(store, null, 0)).toBe('Caching in IndexedDB: 40,000 / 110,000');
  });

  it('parsing says the lines, the bytes read of the file, its rate and its time left (issue 36)', () => {
    const parse = { kind: 'parse' as const, file: 'corpus.jsonl', lines: 22_125, bytes: 66 * MiB };
    expect(
      progressText({ ...parse, totalBytes: 108 * MiB, docsPerSec: 22125.4, etaSeconds: 2 }, null, 0),
    ).toBe('Parsing corpus.jsonl: line 22,125 (66 MiB of 108 MiB) · 22,125 docs/s · 2 s left');
    // A host that sent no length: the bytes read, the rate, no time left.
    expect(progressText({ ...parse, docsPerSec: 900 }, null, 0)).toBe(
      'Parsing corpus.jsonl: line 22,125 (66 MiB) · 900 docs/s',
    );
    expect(
      progressText(
        { ...parse, file: 'qrels/test.tsv', totalBytes: 70 * MiB, docsPerSec: 5e4, etaSeconds: 75 },
        null,
        0,
      ),
    ).toBe('Parsing qrels/test.tsv: line 22,125 (66 MiB of 70 MiB) · 50,000 lines/s · 1 min 15 s left');
    // The files of a shard opened without importing it are read whole with their length.
    expect(
      progressText(
        { kind: 'read', file: 'corpus.offsets.bin', bytes: 3 * MiB, totalBytes: 12 * MiB },
        null,
        0,
      ),
    ).toBe('Reading corpus.offsets.bin: 3.0 MiB of 12 MiB');
  });

  it('indexing, searching and caching say their time left once a second of them has passed', () => {
    const index = { kind: 'index' as const, done: 30_000, total: 100_000 };
    // 20,000 documents in 2 s since the step's first tick: 70,000 left take 7 s.
    const since = { kind: 'index' as const, at: 1000, done: 10_000 };
    expect(progressText(index, null, 3000, since)).toBe('Indexing: 30,000 / 100,000 documents · 7 s left');
    // Under a second in, or not moved since, or another step's sample: no estimate yet.
    expect(progressText(index, null, 1500, since)).toBe('Indexing: 30,000 / 100,000 documents');
    expect(progressText(index, null, 3000, { ...since, done: 30_000 })).toBe(
      'Indexing: 30,000 / 100,000 documents',
    );
    expect(progressText(index, null, 3000, { ...since, kind: 'search' })).toBe(
      'Indexing: 30,000 / 100,000 documents',
    );
    expect(
      progressText({ kind: 'search', done: 500, total: 1000 }, null, 5000, {
        kind: 'search',
        at: 0,
        done: 0,
      }),
    ).toBe('Searching: 500 / 1,000 queries · 5 s left');
    expect(
      progressText({ kind: 'store', done: 10, total: 40 }, null, 2000, { kind: 'store', at: 0, done: 0 }),
    ).toBe('Caching in IndexedDB: 10 / 40 · 6 s left');
  });

  it('seconds read as a person says them', () => {
    expect(formatSeconds(0.2)).toBe('1 s');
    expect(formatSeconds(59.5)).toBe('1 min 0 s');
    expect(formatSeconds(125)).toBe('2 min 5 s');
  });
});
