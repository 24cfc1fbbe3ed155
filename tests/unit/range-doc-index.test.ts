// The version 2 offsets file read by Range (src/lib/platform/sources/range-doc-index.ts), in Node over an
// in-memory "host" that answers each Range as a static server would (206 with the file's size, or
// the whole file when it ignores Range): which bytes each lookup reads, and what it finds.
import { describe, expect, it } from 'vitest';
import { encodeDocOffsetsV2 } from '../../src/lib/core/shard/doc-offsets-v2';
import {
  FIRST_READ_BYTES,
  RangeDocIndex,
  type RangeFetch,
} from '../../src/lib/platform/sources/range-doc-index';

const N = 5000;
const ids = Array.from({ length: N }, (_, r) => `doc-${((r * 7919) % N).toString().padStart(5, '0')}`);
const file = encodeDocOffsetsV2({
  ids,
  starts: ids.map((_, r) => r * 100),
  lengths: ids.map((_, r) => 50 + (r % 40)),
  lines: ids.map((_, r) => r + 1 + (r > 10 ? 1 : 0)),
  corpusBytes: N * 100,
  corpusFnv: 7,
  format: 'beir+images',
  blockIds: 64,
});

function host(opts: { ranges?: boolean } = {}) {
  const reads: [number, number][] = [];
  const fetchRange: RangeFetch = async (_url, start, end) => {
    if (opts.ranges === false) {
      reads.push([0, file.length]);
      return { bytes: file.slice(), whole: true };
    }
    const to = Math.min(end, file.length);
    reads.push([start, to]);
    return { bytes: file.slice(start, to), total: file.length, whole: false };
  };
  return { reads, fetchRange };
}

describe('RangeDocIndex', () => {
  it('opens from the first bytes, finds ids by one block each, rows by their entries', async () => {
    const h = host();
    const index = await RangeDocIndex.open('x/corpus.offsets.bin', h.fetchRange);
    if (!(index instanceof RangeDocIndex)) throw new Error('not version 2');
    expect(h.reads).toEqual([[0, FIRST_READ_BYTES]]);
    expect(index.head.n).toBe(N);
    // Three ids (two in one block) and two that are not there.
    const want = ['doc-00000', 'doc-00001', 'doc-04999', 'doc-zzz', 'a'];
    h.reads.length = 0;
    const rows = await index.rowsOf(want);
    expect(Object.fromEntries(rows)).toEqual({
      'doc-00000': ids.indexOf('doc-00000'),
      'doc-00001': ids.indexOf('doc-00001'),
      'doc-04999': ids.indexOf('doc-04999'),
    });
    // One read per block touched ('a' sorts before every id: no block), each within the blocks.
    const blocks = new Set(h.reads.map(([s]) => s));
    expect(h.reads.length).toBe(blocks.size);
    expect(h.reads.length).toBeLessThanOrEqual(3);
    for (const [s, e] of h.reads) expect(e - s).toBeLessThan(64 * 20);
    // Again: the blocks are kept.
    h.reads.length = 0;
    await index.rowsOf(['doc-00000']);
    expect(h.reads).toEqual([]);
    // Entries: rows close together in one read, far apart in their own; each 16 bytes.
    const e = await index.entries([10, 12, 4000, N + 3]);
    expect([...e.keys()]).toEqual([10, 12, 4000]);
    expect(e.get(12)).toEqual({ start: 1200, length: 50 + 12, line: 14 });
    expect(e.get(10)).toEqual({ start: 1000, length: 60, line: 11 });
    expect(h.reads.map(([s, t]) => t - s).sort((a, b) => a - b)).toEqual([16, 48]);
    h.reads.length = 0;
    await index.entries([12, 4000]);
    expect(h.reads).toEqual([]);
  });

  it('reads the top level in a second request when the first bytes do not hold it', async () => {
    const big = Array.from({ length: 40_000 }, (_, r) => `an-id-long-enough-to-fill-the-top-${r}`);
    const bytes = encodeDocOffsetsV2({
      ids: big,
      starts: big.map((_, r) => r),
      lengths: big.map(() => 1),
      lines: big.map((_, r) => r + 1),
      corpusBytes: big.length,
      corpusFnv: 1,
      format: 'beir',
      blockIds: 16,
    });
    const reads: number[] = [];
    const index = await RangeDocIndex.open('big.bin', async (_u, s, e) => {
      reads.push(e - s);
      return { bytes: bytes.slice(s, Math.min(e, bytes.length)), total: bytes.length, whole: false };
    });
    if (!(index instanceof RangeDocIndex)) throw new Error('not version 2');
    expect(reads).toEqual([FIRST_READ_BYTES, index.head.headBytes]);
    expect(index.head.headBytes).toBeGreaterThan(FIRST_READ_BYTES);
    expect((await index.rowsOf([big[12345]])).get(big[12345])).toBe(12345);
  });

  it('keeps the whole file when the host ignores Range, and says which version a file is', async () => {
    const h = host({ ranges: false });
    const index = await RangeDocIndex.open('x', h.fetchRange);
    if (!(index instanceof RangeDocIndex)) throw new Error('not version 2');
    await index.rowsOf(ids.slice(0, 50));
    await index.entries([1, 2000]);
    expect(h.reads).toHaveLength(1);
    const v1 = new Uint8Array(64);
    v1.set(new TextEncoder().encode('LOUPEDOC'));
    new DataView(v1.buffer).setUint32(8, 1, true);
    const got = await RangeDocIndex.open('old.bin', async () => ({ bytes: v1, whole: false, total: 1e6 }));
    expect(got).toEqual({ version: 1, whole: null });
    await expect(
      RangeDocIndex.open('x/corpus.offsets.bin', async () => ({ bytes: new Uint8Array(64), whole: false })),
    ).rejects.toThrow(/x\/corpus\.offsets\.bin: not a document offsets file/);
  });

  it('refuses a file shorter than its header says, naming it', async () => {
    const cut = file.slice(0, file.length - 10);
    await expect(
      RangeDocIndex.open('cut.bin', async (_u, s, e) => ({
        bytes: cut.slice(s, Math.min(e, cut.length)),
        total: cut.length,
        whole: false,
      })),
    ).rejects.toThrow(/cut\.bin: .*truncated/);
  });
});
