// Corpus embeddings from a Parquet column (embeddings/index.json sets with a `parquet` file): the
// entry's fields, the row checks (count, ids, dimension, finite values, norms) with the file, 0-based
// row and document named, float16 bits equal to the npy layout's, and the check against the model.
// The Parquet files are written by hyparquet-writer, the app reads them with hyparquet.
import { describe, expect, it } from 'vitest';
import { MemorySource } from '../../src/lib/core/shard/memory-source';
import { ShardValidationError, type ShardIssue } from '../../src/lib/core/shard/source';
import {
  PRECOMPUTED_FORMAT,
  PRECOMPUTED_INDEX,
  parsePrecomputedIndex,
  precomputedMismatch,
  readPrecomputed,
} from '../../src/lib/core/shard/precomputed';
import {
  NORM_TOLERANCE,
  hasParquetSets,
  parseParquetEntries,
} from '../../src/lib/core/shard/precomputed-parquet';
import { readEmbeddingColumn, readParquetEmbeddings } from '../../src/lib/core/media/parquet/embeddings';
import { openAll } from '../../src/lib/core/media/parquet/parquet-files';
import {
  checkParquetMapping,
  type CorpusEmbeddingColumn,
  type ParquetFileInfo,
  type ParquetMapping,
} from '../../src/lib/core/media/parquet/mapping';
import { f32ToF16 } from '../../src/lib/core/shard/vector-files';
import type { ModelSpec } from '../../src/lib/core/retrieval/models';
import { embeddingParquet, type EmbeddingParquet } from '../fixtures/parquet/embedding-column';

const docs = [
  { id: 'd1', title: 'a', text: 'alpha' },
  { id: 'd2', title: '', text: '', image: 'images/x.jpg' },
  { id: 'd3', title: 'c', text: 'gamma' },
  { id: 'd4', title: '', text: 'delta' },
];
const FILE = 'embeddings/emb.parquet';

/** Unit vectors (3-D), one per text document, by id. */
const unit: Record<string, number[]> = {
  d1: [0.6, 0.8, 0],
  d3: [0, 0, 1],
  d4: [Math.SQRT1_2, 0, -Math.SQRT1_2],
};

function entry(over: Record<string, unknown> = {}) {
  return {
    model_id: 'loupe-test/bert-tiny-random',
    dtype: 'fp32',
    parquet: FILE,
    id_column: '_id',
    column: 'embedding',
    dim: 3,
    normalized: true,
    query_prefix: 'q: ',
    doc_prefix: 'd: ',
    ...over,
  };
}

function shard(pq: Partial<EmbeddingParquet> = {}, over: Record<string, unknown> = {}) {
  // Rows in another order than the shard's, over two row groups.
  const ids = pq.ids ?? ['d4', 'd1', 'd3'];
  return new MemorySource({
    [PRECOMPUTED_INDEX]: JSON.stringify({ format: PRECOMPUTED_FORMAT, sets: [entry(over)] }),
    [FILE]: embeddingParquet({
      ids,
      vectors: pq.vectors ?? ids.map((id) => unit[id!] ?? [1, 0, 0]),
      rowGroupSize: 2,
      ...pq,
    }),
  });
}

async function issuesOf(source: MemorySource): Promise<ShardIssue[]> {
  try {
    await readParquetEmbeddings(source, docs);
  } catch (e) {
    expect(e).toBeInstanceOf(ShardValidationError);
    return (e as ShardValidationError).issues;
  }
  throw new Error('expected the read to fail');
}

describe('embeddings from a Parquet column', () => {
  it('become float16 rows in shard order, bit for bit what the npy layout stores', async () => {
    for (const element of ['float32', 'float16', 'float64'] as const) {
      const [set] = await readParquetEmbeddings(shard({ element }), docs);
      expect(set.sidecar).toMatchObject({
        model_id: 'loupe-test/bert-tiny-random',
        dtype: 'fp32',
        part: 'text',
        dim: 3,
        normalize: true,
        query_prefix: 'q: ',
        doc_prefix: 'd: ',
        doc_ids: ['d1', 'd3', 'd4'],
        missing: ['d2'],
        origin: FILE,
      });
      // float16 of the float32 value (float16 cells go through float32 exactly).
      const want = ['d1', 'd3', 'd4'].flatMap((id) => unit[id].map((x) => f32ToF16(Math.fround(x))));
      expect([...set.f16!]).toEqual(want);
    }
  });

  it('integer ids match documents with those ids; an image set takes the documents with an image', async () => {
    const numeric = [
      { id: '7', text: 'x' },
      { id: '9', text: 'y' },
    ];
    const src = new MemorySource({
      [PRECOMPUTED_INDEX]: JSON.stringify({
        format: PRECOMPUTED_FORMAT,
        sets: [
          entry({ normalized: false }),
          entry({ part: 'image', parquet: 'embeddings/img.parquet', dim: 2, normalized: false }),
        ],
      }),
      [FILE]: embeddingParquet({
        ids: ['9', '7'],
        vectors: [
          [1, 2, 3],
          [4, 5, 6],
        ],
      }),
      'embeddings/img.parquet': embeddingParquet({ ids: ['7'], vectors: [[3, 4]] }),
    });
    const withImage = [...numeric.slice(0, 1).map((d) => ({ ...d, image: 'a.png' })), numeric[1]];
    const [text, image] = await readParquetEmbeddings(src, withImage);
    expect(text.sidecar.doc_ids).toEqual(['7', '9']);
    expect([...text.f16!]).toEqual([4, 5, 6, 1, 2, 3].map(f32ToF16));
    expect(image.sidecar).toMatchObject({ part: 'image', doc_ids: ['7'], missing: ['9'], dim: 2 });
  });

  it('a wrong dimension names the file, the 0-based row and the document', async () => {
    const issues = await issuesOf(shard({ vectors: [unit.d4, [0.6, 0.8], unit.d3] }));
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ file: FILE, row: 1, code: 'embedding-dimension' });
    expect(issues[0].message).toBe(`row 1 (0-based), document "d1": 2 values, the set's dimension is 3`);
  });

  it('a NaN, an infinity and a null value name their row, document and position', async () => {
    const issues = await issuesOf(shard({ vectors: [unit.d4, [0.6, NaN, 0], [0, Infinity, 1]] }));
    expect(issues.map((i) => [i.row, i.code])).toEqual([
      [1, 'embedding-not-finite'],
      [2, 'embedding-not-finite'],
    ]);
    expect(issues[0].message).toBe('row 1 (0-based), document "d1": value 1 (0-based) is NaN');
    expect(issues[1].message).toContain('document "d3": value 1 (0-based) is Infinity');
    const nulls = await issuesOf(shard({ vectors: [unit.d4, null, unit.d3] }));
    expect(nulls[0]).toMatchObject({ row: 1, code: 'embedding-null' });
  });

  it('a missing id names the documents without a row and the row count', async () => {
    const issues = await issuesOf(shard({ ids: ['d4', 'd3'] }));
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ file: FILE, code: 'embedding-missing-id' });
    expect(issues[0].row).toBeUndefined();
    expect(issues[0].message).toBe('2 rows, 3 documents have text; no row for 1 of them: "d1"');
  });

  it('unknown, duplicate, part-less and null ids are each named with their row', async () => {
    const issues = await issuesOf(shard({ ids: ['d4', 'd1', 'd3', 'zz', 'd1', 'd2', null] }));
    expect(issues.map((i) => [i.row, i.code])).toEqual([
      [3, 'embedding-unknown-id'],
      [4, 'embedding-duplicate-id'],
      [5, 'embedding-unknown-id'],
      [6, 'embedding-bad-id'],
    ]);
    expect(issues[0].message).toContain('document "zz": no document of the corpus has that id');
    expect(issues[1].message).toContain('a second row for that document (the first is row 1)');
    expect(issues[2].message).toContain('document "d2": that document has no text');
  });

  it('norms are checked only when the set says its rows are normalised', async () => {
    const off = [unit.d4, [0.6, 0.8 + 4 * NORM_TOLERANCE, 0], unit.d3];
    const issues = await issuesOf(shard({ vectors: off }));
    expect(issues[0]).toMatchObject({ row: 1, code: 'embedding-norm' });
    expect(issues[0].message).toMatch(/document "d1": norm 1\.00\d+/);
    // Within the tolerance (a float16 rounding) passes; unnormalised sets take any norm.
    await expect(
      readParquetEmbeddings(shard({ vectors: [unit.d4, [0.6, 0.8 + NORM_TOLERANCE / 4, 0], unit.d3] }), docs),
    ).resolves.toHaveLength(1);
    await expect(
      readParquetEmbeddings(shard({ vectors: off }, { normalized: false }), docs),
    ).resolves.toHaveLength(1);
  });

  it('a missing file, a missing column and a column that is not a float list are named', async () => {
    const noFile = shard();
    noFile.files.delete(FILE);
    expect((await issuesOf(noFile))[0]).toMatchObject({ file: FILE, code: 'missing-file' });
    const noCol = await issuesOf(shard({}, { column: 'emb' }));
    expect(noCol[0].message).toBe(
      `no column "emb" (named by column in ${PRECOMPUTED_INDEX}); the file has "_id", "embedding"`,
    );
    const notList = await issuesOf(shard({}, { column: '_id', id_column: 'embedding' }));
    expect(notList[0].message).toBe(
      'column "_id" is BYTE_ARRAY (UTF8), not a list of float32, float16 or float64 values',
    );
  });

  it('entry fields are checked; optional ones get their defaults; npy parsing skips Parquet sets', () => {
    const bad = parseParquetEntries(
      {
        format: PRECOMPUTED_FORMAT,
        sets: [
          { path: 'm/fp32/', model_id: 'm', dtype: 'fp32' },
          entry({ dim: 0, parquet: '../x.parquet', part: 'audio' }),
        ],
      },
      PRECOMPUTED_INDEX,
    );
    expect(bad.entries).toEqual([]);
    expect(bad.issues).toEqual([
      {
        file: PRECOMPUTED_INDEX,
        code: 'embedding-entry',
        message: `sets[1]: 'dim' must be a positive integer; 'part' must be "text" or "image"; 'parquet' "../x.parquet" must be a relative path to a .parquet file`,
      },
    ]);
    const { dtype: _d, query_prefix: _q, doc_prefix: _p, ...minimal } = entry();
    const ok = parseParquetEntries({ format: PRECOMPUTED_FORMAT, sets: [minimal] }, PRECOMPUTED_INDEX);
    expect(ok.entries[0]).toMatchObject({ dtype: 'fp32', part: 'text', query_prefix: '', doc_prefix: '' });
    expect(
      parsePrecomputedIndex({
        format: PRECOMPUTED_FORMAT,
        sets: [{ path: 'm/fp32/', model_id: 'm', dtype: 'fp32' }, entry()],
      }),
    ).toEqual([{ path: 'm/fp32/', model_id: 'm', dtype: 'fp32' }]);
  });

  it('a source without a listing (a URL) is asked for index.json only when shard.json declares it', async () => {
    const src = shard();
    expect(await hasParquetSets(src)).toBe(true);
    const remote = Object.assign(shard(), { remote: true });
    expect(await hasParquetSets(remote)).toBe(false);
    expect(remote.opens.get(PRECOMPUTED_INDEX)).toBeUndefined();
    expect(await hasParquetSets(remote, true)).toBe(true);
    const npyOnly = new MemorySource({
      [PRECOMPUTED_INDEX]: JSON.stringify({
        format: PRECOMPUTED_FORMAT,
        sets: [{ path: 'm/fp32/', model_id: 'm', dtype: 'fp32' }],
      }),
    });
    expect(await hasParquetSets(npyOnly)).toBe(false);
  });

  it('the npy reader leaves a shard with only Parquet sets alone', async () => {
    expect(await readPrecomputed(shard(), docs)).toEqual({ sets: [], problems: [] });
  });

  it('against the loaded model: model, dtype, dimension, normalisation and prefixes; unstated fields are not compared', async () => {
    const [set] = await readParquetEmbeddings(shard(), docs);
    const spec = {
      id: 'loupe-test/bert-tiny-random',
      revision: 'main',
      pooling: 'cls',
      normalize: true,
      queryPrefix: 'q: ',
      docPrefix: 'd: ',
      maxTokens: 128,
    } as unknown as ModelSpec;
    expect(precomputedMismatch(set.sidecar, spec, 'fp32', 3)).toEqual([]);
    expect(precomputedMismatch(set.sidecar, { ...spec, id: 'other' }, 'q8', 4)).toEqual([
      'model "loupe-test/bert-tiny-random" ≠ "other"',
      'dtype "fp32" ≠ "q8"',
      'dimension 3 ≠ 4',
    ]);
    const [stated] = await readParquetEmbeddings(shard({}, { pooling: 'mean', revision: 'abc' }), docs);
    expect(precomputedMismatch(stated.sidecar, spec, 'fp32', 3)).toEqual([
      'revision "abc" ≠ "main"',
      'pooling "mean" ≠ "cls"',
    ]);
  });

  describe('as a column of a Parquet dataset’s corpus files (named by the column mapping)', () => {
    const F0 = 'corpus/test-00000-of-00002.parquet';
    const F1 = 'corpus/test-00001-of-00002.parquet';
    const emb: CorpusEmbeddingColumn = {
      column: 'embedding',
      model_id: 'loupe-test/bert-tiny-random',
      dtype: 'fp32',
      dim: 3,
      normalized: true,
      query_prefix: '',
      doc_prefix: '',
      part: 'text',
    };
    // d2 has only an image: its cell is null, as a column of the corpus has a cell for every row.
    const files = (second: (number[] | null)[] = [null, unit.d3, unit.d4], ids1 = ['d2', 'd3', 'd4']) =>
      new MemorySource({
        [F0]: embeddingParquet({ ids: ['d1'], vectors: [unit.d1], element: 'float16' }),
        [F1]: embeddingParquet({ ids: ids1, vectors: second, rowGroupSize: 2 }),
      });
    async function fails(src: MemorySource): Promise<ShardIssue[]> {
      try {
        await readEmbeddingColumn(src, [F0, F1], '_id', emb, docs);
      } catch (e) {
        return (e as ShardValidationError).issues;
      }
      throw new Error('expected the read to fail');
    }

    it('reads every corpus file in turn; a null cell of a document without the part is no row', async () => {
      const set = await readEmbeddingColumn(files(), [F0, F1], '_id', emb, docs);
      expect(set.sidecar).toMatchObject({ doc_ids: ['d1', 'd3', 'd4'], missing: ['d2'], origin: 'corpus/' });
      expect([...set.f16!]).toEqual(['d1', 'd3', 'd4'].flatMap((id) => unit[id].map((x) => f32ToF16(x))));
    });

    it('rows are counted per file: a problem names its own file and row; a duplicate names the first', async () => {
      const nan = await fails(files([null, [0, NaN, 1], unit.d4]));
      expect(nan).toEqual([
        {
          file: F1,
          row: 1,
          code: 'embedding-not-finite',
          message: 'row 1 (0-based), document "d3": value 1 (0-based) is NaN',
        },
      ]);
      const dup = await fails(files([unit.d1, unit.d3, unit.d4], ['d1', 'd3', 'd4']));
      expect(dup[0]).toMatchObject({ file: F1, row: 0, code: 'embedding-duplicate-id' });
      expect(dup[0].message).toContain(`(the first is row 0 of ${F0})`);
      const missing = await fails(files([null, unit.d3], ['d2', 'd3']));
      expect(missing).toEqual([
        {
          file: 'corpus/',
          code: 'embedding-missing-id',
          message: '3 rows, 3 documents have text; no row for 1 of them: "d4"',
        },
      ]);
    });

    it('a list-of-floats column is its own kind; the mapping check names a wrong column, model id or dimension', async () => {
      const [f] = await openAll(files(), [F1]);
      expect(f.info.columns).toEqual([
        { name: '_id', kind: 'string', type: 'BYTE_ARRAY UTF8' },
        { name: 'embedding', kind: 'float-list', type: 'LIST' },
      ]);
      const info = (
        path: string,
        role: 'corpus' | 'query' | 'qrels',
        columns: ParquetFileInfo['columns'],
      ) => ({
        path,
        role,
        config: role,
        split: 'test',
        rows: 1,
        rowGroups: [1],
        columns,
      });
      const infos: ParquetFileInfo[] = [
        info(F1, 'corpus', [...f.info.columns, { name: 'text', kind: 'string' }]),
        info('queries.parquet', 'query', [
          { name: '_id', kind: 'string' },
          { name: 'text', kind: 'string' },
        ]),
        info('qrels.parquet', 'qrels', [
          { name: 'query-id', kind: 'string' },
          { name: 'corpus-id', kind: 'string' },
        ]),
      ];
      const mapping: ParquetMapping = {
        version: 1,
        name: 'x',
        corpus: { id: '_id', text: 'text', meta: [] },
        query: { id: '_id', text: 'text', meta: [] },
        qrels: { queryId: 'query-id', corpusId: 'corpus-id' },
        splits: ['test'],
      };
      expect(checkParquetMapping(infos, { ...mapping, embedding: emb })).toEqual([]);
      expect(checkParquetMapping(infos, { ...mapping, embedding: { ...emb, column: 'text' } })).toEqual([
        {
          file: F1,
          code: 'wrong-type',
          message:
            'column "text" (the embedding column) holds string values; the embedding column needs float-list values',
        },
      ]);
      expect(
        checkParquetMapping(infos, { ...mapping, embedding: { ...emb, model_id: ' ', dim: 0 } }),
      ).toEqual([
        {
          file: F1,
          code: 'embedding-mapping',
          message: 'the embedding column "embedding" needs a model id, a positive integer dimension',
        },
      ]);
    });
  });
});
