import { describe, expect, it } from 'vitest';
import {
  allChunkRecords,
  chunkRecords,
  fnv1a,
  type ChunkRow,
} from '../../src/lib/platform/storage/stored-chunks';

const row = <T>(chunkNo: number, records: T[]): ChunkRow<T> => ({ hash: 'h', chunkNo, records });
const sum = (records: unknown[]) => fnv1a(JSON.stringify(records));

describe('stored chunks', () => {
  it('fnv1a is the 32-bit FNV-1a of the UTF-16 code units (published test vectors for ASCII)', () => {
    expect(fnv1a('')).toBe(0x811c9dc5);
    expect(fnv1a('a')).toBe(0xe40c292c);
    expect(fnv1a('foobar')).toBe(0xbf9cf968);
  });

  it('gives a chunk its records when its number and checksum match, and names the chunk when not', () => {
    const records = [{ id: 'd1', text: 'x' }];
    expect(chunkRecords('documents', row(3, records), 3, sum(records))).toBe(records);
    expect(chunkRecords('documents', row(3, records), 3)).toBe(records); // written before checksums
    expect(() => chunkRecords('documents', row(2, records), 3)).toThrow('documents: chunk 3 is damaged');
    expect(() => chunkRecords('documents', undefined, 3)).toThrow('documents: chunk 3 is damaged');
    const changed = [{ id: 'd1', text: 'y' }];
    expect(() => chunkRecords('documents', row(3, changed), 3, sum(records))).toThrow(
      'documents: chunk 3 does not match its checksum (its bytes were changed)',
    );
  });

  it('joins every chunk in order and checks chunk and record counts and each record', () => {
    const a = [{ id: 'q1' }, { id: 'q2' }];
    const b = [{ id: 'q3' }];
    const rows = [row(0, a), row(1, b)];
    const ok = (q: { id: unknown }) => typeof q.id === 'string';
    expect(allChunkRecords('queries', rows, 2, 3, [sum(a), sum(b)], ok).map((q) => q.id)).toEqual([
      'q1',
      'q2',
      'q3',
    ]);
    expect(() => allChunkRecords('queries', rows, 3, 3)).toThrow('queries: 2 chunks stored, 3 expected');
    expect(() => allChunkRecords('queries', rows, 2, 4)).toThrow('queries: 3 records stored, 4 expected');
    expect(() => allChunkRecords('queries', [row(0, a), row(0, b)], 2, 3)).toThrow(
      'queries: chunk 1 is damaged',
    );
    expect(() => allChunkRecords('queries', [row(0, a), row(1, [{ id: 7 }])], 2, 3, undefined, ok)).toThrow(
      'queries: a record is damaged',
    );
  });
});
