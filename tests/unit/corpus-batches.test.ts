// The stored-batch records of a corpus embedding (core/retrieval/corpus-batches): which stored batch
// the encoder worker may reuse, the text a document is embedded from, and the batch-size check.
import { describe, expect, it } from 'vitest';
import {
  checkBatchSize,
  docText,
  hasPart,
  validBatch,
  type EmbBatchRecord,
} from '../../src/lib/core/retrieval/corpus-batches';
import type { Doc } from '../../src/lib/core/types';

const doc = (over: Partial<Doc>): Doc => ({ id: 'd', title: '', text: '', meta: {}, ...over });

/** A plain (one row per document) record for `ids` at `dim`. */
function plain(ids: string[], dim: number): EmbBatchRecord {
  return { v: 2, batchNo: 0, ids, dim, vectors: new Float32Array(ids.length * dim), writtenAt: 0 };
}

describe('docText', () => {
  it('joins title and text with one space, as BEIR evaluation scripts embed a document', () => {
    expect(docText(doc({ title: 'Aspirin', text: 'reduces fever.' }))).toBe('Aspirin reduces fever.');
  });
  it('leaves out a blank title or text, and trims the ends', () => {
    expect(docText(doc({ title: '   ', text: ' body ' }))).toBe('body');
    expect(docText(doc({ title: 'Only title', text: '' }))).toBe('Only title');
    expect(docText(doc({}))).toBe('');
  });
});

describe('hasPart', () => {
  it('needs non-blank text for the text part and an image path for the image part', () => {
    expect(hasPart(doc({ text: ' \n' }), 'text')).toBe(false);
    expect(hasPart(doc({ title: 't' }), 'text')).toBe(true);
    expect(hasPart(doc({ text: 'x' }), 'image')).toBe(false);
    expect(hasPart(doc({ image: '' }), 'image')).toBe(false);
    expect(hasPart(doc({ image: 'images/a.png' }), 'image')).toBe(true);
  });
});

describe('validBatch', () => {
  const ids = ['a', 'b', 'c'];
  it('accepts a record of exactly these documents, in order, at this dimension', () => {
    expect(validBatch(plain(ids, 4), ids, 4)).toBe(true);
  });
  it('rejects a missing record, another version, dimension, order or vector size', () => {
    expect(validBatch(undefined, ids, 4)).toBe(false);
    expect(validBatch({ ...plain(ids, 4), v: 1 }, ids, 4)).toBe(false);
    expect(validBatch(plain(ids, 4), ids, 8)).toBe(false);
    expect(validBatch(plain(['a', 'c', 'b'], 4), ids, 4)).toBe(false);
    expect(validBatch(plain(['a', 'b'], 4), ids, 4)).toBe(false);
    expect(validBatch({ ...plain(ids, 4), vectors: new Float32Array(11) }, ids, 4)).toBe(false);
    expect(validBatch({ ...plain(ids, 4), vectors: new Float64Array(12) }, ids, 4)).toBe(false);
  });
  it('checks a chunked record: chunks per document, 2 span ends and dim values per chunk', () => {
    // Documents with 2, 1 and 3 chunks: 6 rows.
    const chunked = {
      ...plain(ids, 2),
      vectors: new Float32Array(6 * 2),
      chunks: Uint32Array.of(2, 1, 3),
      spans: new Uint32Array(12),
    };
    expect(validBatch(chunked, ids, 2, true)).toBe(true);
    // A plain record where chunks are expected, and the reverse.
    expect(validBatch(plain(ids, 2), ids, 2, true)).toBe(false);
    expect(validBatch(chunked, ids, 2, false)).toBe(false);
    expect(validBatch({ ...chunked, spans: new Uint32Array(10) }, ids, 2, true)).toBe(false);
    expect(validBatch({ ...chunked, chunks: Uint32Array.of(2, 1) }, ids, 2, true)).toBe(false);
    expect(validBatch({ ...chunked, vectors: new Float32Array(10) }, ids, 2, true)).toBe(false);
  });
});

describe('checkBatchSize', () => {
  it('returns a positive integer and rejects anything else with the value in the message', () => {
    expect(checkBatchSize(16)).toBe(16);
    for (const bad of [0, -1, 1.5, NaN]) expect(() => checkBatchSize(bad)).toThrow(/positive integer/);
    expect(() => checkBatchSize(0)).toThrow('got 0');
  });
});
