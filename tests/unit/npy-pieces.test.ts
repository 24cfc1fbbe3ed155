import { describe, expect, it } from 'vitest';
import { writeNpyF16 } from '../../src/lib/core/shard/precomputed';
import { parseNpyHeader } from '../../src/lib/core/shard/vector-files';
import { npyPieces } from '../../src/lib/platform/storage/precomputed-store';

/** A .npy of n × dim float16 rows, and a reader that hands it out in chunks of the given sizes. */
function npyOf(n: number, dim: number, chunkSizes: number[]) {
  const data = Float32Array.from({ length: n * dim }, (_, i) => (i % 97) / 97 - 0.5);
  const bytes = writeNpyF16(data, n, dim);
  const { dataStart } = parseNpyHeader(bytes);
  const open = async () =>
    (async function* () {
      let at = 0;
      for (let k = 0; at < bytes.length; k++) {
        const size = chunkSizes[k % chunkSizes.length];
        yield bytes.slice(at, at + size);
        at += size;
      }
    })();
  return { bytes, npy: { file: 'embeddings/x.npy', dataStart, open } };
}

async function collect(it: AsyncIterable<Uint16Array>): Promise<Uint16Array[]> {
  const out: Uint16Array[] = [];
  for await (const p of it) out.push(p);
  return out;
}

describe('a float16 .npy read in pieces as it streams', () => {
  it('gives the rows in pieces of the asked size, whatever the chunks', async () => {
    for (const chunks of [[1], [7, 13], [4096], [1 << 20]]) {
      const { bytes, npy } = npyOf(1000, 24, chunks);
      const pieces = await collect(npyPieces(npy, 1000, 24, 300));
      expect(pieces.map((p) => p.length)).toEqual([300, 300, 300, 100].map((r) => r * 24));
      const all = new Uint16Array(pieces.reduce((a, p) => a + p.length, 0));
      let at = 0;
      for (const p of pieces) all.set(p, (at += p.length) - p.length);
      expect(all).toEqual(new Uint16Array(bytes.slice(npy.dataStart).buffer));
    }
  });

  it('names the file when it is shorter or longer than its shape', async () => {
    const { npy } = npyOf(100, 8, [64]);
    await expect(collect(npyPieces(npy, 101, 8, 50))).rejects.toThrow(/embeddings\/x\.npy.*truncated/);
    await expect(collect(npyPieces(npy, 99, 8, 50))).rejects.toThrow(
      /embeddings\/x\.npy.*longer than shape \(99, 8\)/,
    );
  });
});
