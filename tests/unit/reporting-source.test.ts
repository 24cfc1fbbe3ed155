// Whole-file reads that say how far they are (issue 36 item 4): a source's streams send read ticks
// with the file's length when the stream carries one, and a response body read whole does the same.
import { describe, expect, it } from 'vitest';
import { MemorySource } from '../../src/lib/core/shard/memory-source';
import { withByteLength, type ShardSource } from '../../src/lib/core/shard/source';
import type { Progress } from '../../src/lib/core/types';
import { readBody, reportingSource } from '../../src/lib/platform/sources/reporting-source';

const bytes = (n: number) => new Uint8Array(n).fill(120);

/** A MemorySource whose streams carry their length, as a URL source's carry Content-Length. */
function sized(files: Record<string, Uint8Array>, chunkSize: number): ShardSource {
  const mem = new MemorySource(files, { chunkSize });
  return Object.create(mem, {
    open: {
      value: async (path: string) => {
        const s = await mem.open(path);
        return s && withByteLength(s, files[path].length);
      },
    },
  }) as ShardSource;
}

async function drain(s: AsyncIterable<Uint8Array> | null): Promise<number> {
  let n = 0;
  for await (const c of s ?? []) n += c.length;
  return n;
}

describe('reporting source', () => {
  it('says the bytes of a file read whole, of its length, from the first to the last', async () => {
    const seen: Progress[] = [];
    const src = reportingSource(sized({ 'queries.jsonl': bytes(5000) }, 1000), (p) => seen.push(p));
    expect(await drain(await src.open('queries.jsonl'))).toBe(5000);
    expect(seen[0]).toEqual({ kind: 'read', file: 'queries.jsonl', bytes: 0, totalBytes: 5000 });
    expect(seen.at(-1)).toEqual({ kind: 'read', file: 'queries.jsonl', bytes: 5000, totalBytes: 5000 });
    // Throttled: five chunks in well under 100 ms are not five ticks.
    expect(seen.length).toBeLessThan(5);
  });

  it('a stream without a length says its bytes only; a file opened but never read says nothing', async () => {
    const seen: Progress[] = [];
    const src = reportingSource(new MemorySource({ a: bytes(10), b: bytes(3) }), (p) => seen.push(p));
    await src.open('b'); // a probe, never read
    expect(seen).toEqual([]);
    await drain(await src.open('a'));
    expect(seen.at(-1)).toEqual({ kind: 'read', file: 'a', bytes: 10 });
    expect(await src.open('missing')).toBeNull();
    // The rest of the source is the source's: its label and sizes.
    expect(src.label).toBe('memory');
    expect(await src.size('a')).toBe(10);
  });

  it('a response body read whole says its bytes of its Content-Length', async () => {
    const seen: Progress[] = [];
    const body = bytes(70_000);
    const res = new Response(body, { headers: { 'Content-Length': String(body.length) } });
    const out = await readBody(res, 'http://host/shard/corpus.offsets.bin', (p) => seen.push(p));
    expect(out).toEqual(body);
    expect(seen[0]).toEqual({ kind: 'read', file: 'corpus.offsets.bin', bytes: 0, totalBytes: 70_000 });
    expect(seen.at(-1)).toEqual({
      kind: 'read',
      file: 'corpus.offsets.bin',
      bytes: 70_000,
      totalBytes: 70_000,
    });
  });
});
