// Resuming a streamed import's second pass (issue 18): the file hash goes on from a block boundary and
// ends equal to the whole file's; streamCorpus resumed from a document's mark hands over exactly the
// documents after it, whether its stream starts at the mark's hash block (an HTTP Range) or at byte 0
// (a folder picked again, a server without Range), and refuses a corpus whose part already stored, or
// whose rest, is not what the first pass read.
import { describe, expect, it } from 'vitest';
import { FileHasher, HASH_BLOCK_BYTES, toHex } from '../../src/lib/core/shard/hash';
import { MemorySource } from '../../src/lib/core/shard/memory-source';
import { readShard } from '../../src/lib/core/shard/read-shard';
import { ShardValidationError, type ShardSource } from '../../src/lib/core/shard/source';
import { streamCorpus, type CorpusMark } from '../../src/lib/core/shard/stream-corpus';

async function hashOf(bytes: Uint8Array, h = new FileHasher(), chunk = 77_777): Promise<string> {
  for (let at = 0; at < bytes.length; at += chunk) {
    const w = h.update(bytes.subarray(at, Math.min(bytes.length, at + chunk)));
    if (w) await w;
  }
  return toHex(await h.digest());
}

describe('FileHasher resumed from a block boundary', () => {
  it('gives the digest of the whole file', async () => {
    const bytes = new Uint8Array(2 * HASH_BLOCK_BYTES + 12_345);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 2654435761) >>> 24;
    const whole = await hashOf(bytes);
    for (const stop of [0, 1000, HASH_BLOCK_BYTES, HASH_BLOCK_BYTES + 5, 2 * HASH_BLOCK_BYTES + 100]) {
      const again = new FileHasher();
      const w = again.update(bytes.subarray(0, stop));
      if (w) await w;
      const blocks = await again.blocksBefore(stop);
      expect(blocks.length).toBe(32 * Math.floor(stop / HASH_BLOCK_BYTES));
      const from = blocks.length / 32;
      expect(await hashOf(bytes.subarray(from * HASH_BLOCK_BYTES), FileHasher.resume(blocks))).toBe(whole);
    }
  });
});

describe('streamCorpus resumed from a mark', () => {
  // About 3 MiB of corpus, so marks fall in the second and third hash blocks.
  const docs = Array.from({ length: 3000 }, (_, i) => ({
    _id: `d${i}`,
    title: `T${i}`,
    text: 'x'.repeat(1000 + (i % 7)),
  }));
  const corpus = docs.map((d) => JSON.stringify(d)).join('\n') + '\n';
  const files = {
    'corpus.jsonl': corpus,
    'queries.jsonl': JSON.stringify({ _id: 'q1', text: 'what' }) + '\n',
    'qrels/test.tsv': 'query-id\tcorpus-id\tscore\nq1\td1\t1\n',
  };

  /** The source with its corpus stream starting at byte `start`. */
  const from = (src: MemorySource, start: number): ShardSource => ({
    label: src.label,
    list: () => src.list(),
    size: (p) => src.size(p),
    open: async (p) => {
      if (p !== 'corpus.jsonl') return src.open(p);
      const bytes = src.files.get(p)!.subarray(start);
      return (async function* () {
        for (let at = 0; at < bytes.length; at += 65_536) yield bytes.subarray(at, at + 65_536);
      })();
    },
  });

  async function setup() {
    const src = new MemorySource(files);
    const first = await readShard(src, { onDoc: () => undefined });
    const c = { format: first.manifest.format, ...first.streamed! };
    const marks: CorpusMark[] = [];
    await streamCorpus(src, c, async (d, mark) => {
      if (d.id === 'd1200' || d.id === 'd2999') marks.push(await mark());
    });
    return { src, c, marks };
  }

  it('hands over exactly the documents after the mark, from its block or from the start', async () => {
    const { src, c, marks } = await setup();
    const [mid, last] = marks;
    expect(mid).toMatchObject({ id: 'd1200', docs: 1201, line: 1201 });
    expect(mid.offset).toBe(corpus.indexOf('{"_id":"d1200"'));
    expect(mid.offset).toBeGreaterThan(HASH_BLOCK_BYTES);
    const block = Math.floor(mid.offset / HASH_BLOCK_BYTES) * HASH_BLOCK_BYTES;
    for (const streamOffset of [block, 0]) {
      const ids: string[] = [];
      await streamCorpus(
        from(src, streamOffset),
        c,
        (d) => void ids.push(d.id),
        {},
        { at: mid, streamOffset },
      );
      expect(ids).toEqual(docs.slice(1201).map((d) => d._id));
    }
    // Stopped after the last document: nothing more to hand over, and the digest still checks.
    const ids: string[] = [];
    const lastBlock = Math.floor(last.offset / HASH_BLOCK_BYTES) * HASH_BLOCK_BYTES;
    await streamCorpus(
      from(src, lastBlock),
      c,
      (d) => void ids.push(d.id),
      {},
      { at: last, streamOffset: lastBlock },
    );
    expect(ids).toEqual([]);
  });

  it('refuses a corpus changed before the mark (read from the start) or after it', async () => {
    const { src, c, marks } = await setup();
    const mid = marks[0];
    const block = Math.floor(mid.offset / HASH_BLOCK_BYTES) * HASH_BLOCK_BYTES;
    const refused = async (edited: string, streamOffset: number) => {
      const s = new MemorySource({ ...files, 'corpus.jsonl': edited });
      const handed: string[] = [];
      const err = await streamCorpus(
        from(s, streamOffset),
        c,
        (d) => void handed.push(d.id),
        {},
        {
          at: mid,
          streamOffset,
        },
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ShardValidationError);
      expect((err as ShardValidationError).issues[0]).toMatchObject({
        file: 'corpus.jsonl',
        code: 'changed-during-import',
      });
      return handed;
    };
    // A byte of d5's text changed (same size): caught before any document is handed over.
    const early = corpus.replace('"_id":"d5","title":"T5","text":"x', '"_id":"d5","title":"T5","text":"y');
    expect(early.length).toBe(corpus.length);
    expect(await refused(early, 0)).toEqual([]);
    // A document after the mark changed: caught by the digest at the end.
    await refused(corpus.replace('"T2500"', '"X2500"'), block);
    // The stream does not start where the mark says a document does.
    await refused(corpus.replace('"_id":"d1200"', '"_id":"e1200"'), block);
    expect(src.files.get('corpus.jsonl')!.length).toBe(new TextEncoder().encode(corpus).length);
  });
});
