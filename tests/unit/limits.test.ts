// Shard size limits (src/lib/core/shard/limits.ts, enforced by readShard): line, field, image bytes and
// image pixels (read from the header, before decoding), their URL/CLI options, and the header reader.
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ShardValidationError, type ShardIssue } from '../../src/lib/core/shard/source';
import {
  DEFAULT_LIMITS,
  imageDimensions,
  parseLimits,
  type ShardLimits,
} from '../../src/lib/core/shard/limits';
import { MemorySource } from '../../src/lib/core/shard/memory-source';
import { readShard } from '../../src/lib/core/shard/read-shard';

const jsonl = (rows: unknown[]): string => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

/** A real (decodable) RGB PNG of w × h black pixels. */
function png(w: number, h: number): Uint8Array {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (b: Buffer) => {
    let c = 0xffffffff;
    for (const x of b) c = crcTable[(c ^ x) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const c = Buffer.alloc(4);
    c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const raw = Buffer.alloc((w * 3 + 1) * h); // filter byte 0 + zero pixels per row
  return new Uint8Array(
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      chunk('IHDR', ihdr),
      chunk('IDAT', deflateSync(raw)),
      chunk('IEND', Buffer.alloc(0)),
    ]),
  );
}

/** A JPEG header: SOI, an APP0 segment, then a baseline SOF0 frame header of w × h (no scan data). */
function jpegHeader(w: number, h: number, sof = 0xc0): Uint8Array {
  const app0 = [0xff, 0xe0, 0x00, 0x10, ...Buffer.from('JFIF\0'), 1, 1, 0, 0, 1, 0, 1, 0, 0];
  const sofSeg = [
    0xff,
    sof,
    0x00,
    0x11,
    8,
    h >> 8,
    h & 0xff,
    w >> 8,
    w & 0xff,
    3,
    1,
    0x22,
    0,
    2,
    0x11,
    1,
    3,
    0x11,
    1,
  ];
  return new Uint8Array([0xff, 0xd8, ...app0, ...sofSeg, 0xff, 0xd9]);
}

function webp(kind: 'VP8X' | 'VP8L' | 'VP8 ', w: number, h: number): Uint8Array {
  const b = new Uint8Array(40);
  b.set(Buffer.from('RIFF'), 0);
  b.set(Buffer.from('WEBP'), 8);
  b.set(Buffer.from(kind), 12);
  const v = new DataView(b.buffer);
  if (kind === 'VP8X') {
    v.setUint16(24, (w - 1) & 0xffff, true);
    b[26] = (w - 1) >> 16;
    v.setUint16(27, (h - 1) & 0xffff, true);
    b[29] = (h - 1) >> 16;
  } else if (kind === 'VP8L') {
    b[20] = 0x2f;
    v.setUint32(21, ((w - 1) & 0x3fff) | (((h - 1) & 0x3fff) << 14), true);
  } else {
    b.set([0x9d, 0x01, 0x2a], 23);
    v.setUint16(26, w, true);
    v.setUint16(28, h, true);
  }
  return b;
}

function shard(
  corpus: unknown[],
  images: Record<string, Uint8Array> = {},
): Record<string, string | Uint8Array> {
  return {
    'shard.json': JSON.stringify({
      name: 'limits',
      version: '1.0.0',
      format: 'beir+images',
      license: 'CC0-1.0',
      relevance: { '1': 'relevant' },
      tasks: [{ id: 't', query_modality: 'text', corpus_modality: 'image+text' }],
    }),
    'corpus.jsonl': jsonl(corpus),
    'queries.jsonl': jsonl([{ _id: 'q1', text: 'alpha', task: 't' }]),
    'qrels/test.tsv': 'query-id\tcorpus-id\tscore\nq1\td1\t1\n',
    ...images,
  };
}

async function issues(files: Record<string, string | Uint8Array>, limits?: Partial<ShardLimits>) {
  const seen: string[] = [];
  try {
    await readShard(new MemorySource(files), { limits, onImage: (p) => void seen.push(p) });
  } catch (e) {
    if (e instanceof ShardValidationError) return { issues: e.issues, seen };
    throw e;
  }
  return { issues: [] as ShardIssue[], seen };
}

describe('image header dimensions', () => {
  it('PNG, JPEG (baseline and progressive), WebP (VP8X, VP8L, VP8)', () => {
    expect(imageDimensions(png(3, 2))).toEqual({ width: 3, height: 2 });
    expect(imageDimensions(jpegHeader(640, 480))).toEqual({ width: 640, height: 480 });
    expect(imageDimensions(jpegHeader(65535, 1, 0xc2))).toEqual({ width: 65535, height: 1 });
    expect(imageDimensions(webp('VP8X', 16384, 300))).toEqual({ width: 16384, height: 300 });
    expect(imageDimensions(webp('VP8L', 1000, 16384))).toEqual({ width: 1000, height: 16384 });
    expect(imageDimensions(webp('VP8 ', 800, 600))).toEqual({ width: 800, height: 600 });
  });

  it('is null for headers it cannot read (no frame header, truncated, not an image)', () => {
    expect(imageDimensions(new Uint8Array([0xff, 0xd8, 0xff, 0xd9]))).toBeNull();
    expect(imageDimensions(png(3, 2).subarray(0, 20))).toBeNull();
    expect(imageDimensions(new TextEncoder().encode('hello world, not an image at all'))).toBeNull();
  });
});

describe('limit options', () => {
  it('defaults, overrides in their units, and errors naming the option', () => {
    expect(parseLimits(() => null)).toEqual({ limits: DEFAULT_LIMITS, errors: [] });
    const q = new URLSearchParams('maxLineMB=64&maxFieldMB=0.5&maxImageMB=100&maxImageMP=400');
    expect(parseLimits((n) => q.get(n)).limits).toEqual({
      maxLineBytes: 64 * 1024 * 1024,
      maxFieldChars: 512 * 1024,
      maxImageBytes: 100 * 1024 * 1024,
      maxImagePixels: 400_000_000,
    });
    const bad = new URLSearchParams('maxLineMB=lots&maxImageMP=-1');
    const r = parseLimits((n) => bad.get(n));
    expect(r.errors).toEqual([
      'maxLineMB=lots: expected a positive number',
      'maxImageMP=-1: expected a positive number',
    ]);
    expect(r.limits).toEqual(DEFAULT_LIMITS);
  });
});

describe('readShard enforces the limits', () => {
  const doc = (text: string, extra: object = {}) => ({ _id: 'd1', title: 'alpha', text, ...extra });

  it('the default line limit is 8 MiB, and the message says how to raise it', async () => {
    expect(DEFAULT_LIMITS.maxLineBytes).toBe(8 * 1024 * 1024);
    const { issues: found } = await issues(shard([doc('x'.repeat(300))]), { maxLineBytes: 256 });
    expect(found.map((i) => [i.file, i.line, i.code])).toEqual([['corpus.jsonl', 1, 'line-too-large']]);
    expect(found[0].message).toContain('maxLineMB=');
    expect((await issues(shard([doc('x'.repeat(300))]), { maxLineBytes: 1024 })).issues).toEqual([]);
  });

  it('a field over the limit names the field (nested metadata too) and the line', async () => {
    const files = shard([doc('ok'), { _id: 'd2', title: 't', text: 'y', meta: { notes: 'z'.repeat(101) } }]);
    const { issues: found } = await issues(files, { maxFieldChars: 100 });
    expect(found.map((i) => [i.file, i.line, i.code])).toEqual([['corpus.jsonl', 2, 'field-too-large']]);
    expect(found[0].message).toContain('field "meta.notes" has 101 characters, more than the limit of 100');
    expect(found[0].message).toContain('maxFieldMB=');
    expect((await issues(files, { maxFieldChars: 101 })).issues).toEqual([]);
  });

  it('an image over the byte limit stops reading it', async () => {
    const files = shard([doc('', { image: 'images/a.png' })], { 'images/a.png': png(64, 64) });
    const size = (files['images/a.png'] as Uint8Array).length;
    const { issues: found, seen } = await issues(files, { maxImageBytes: size - 1 });
    expect(found.map((i) => [i.file, i.code])).toEqual([['images/a.png', 'file-too-large']]);
    expect(found[0].message).toContain('maxImageMB=');
    expect(seen).toEqual([]);
    expect((await issues(files, { maxImageBytes: size })).seen).toEqual(['images/a.png']);
  });

  it('a decompression bomb is refused by its header (20000 × 20000), before anything decodes it', async () => {
    const files = shard([doc('', { image: 'images/bomb.jpg' })], {
      'images/bomb.jpg': jpegHeader(20000, 20000),
    });
    const { issues: found, seen } = await issues(files);
    expect(found.map((i) => [i.file, i.code])).toEqual([['images/bomb.jpg', 'image-too-large']]);
    expect(found[0].message).toContain('20000 × 20000 pixels, more than the limit of 100 megapixels');
    expect(found[0].message).toContain('referenced on corpus.jsonl:1');
    expect(seen).toEqual([]);
    expect((await issues(files, { maxImagePixels: 400_000_000 })).issues).toEqual([]);
  });
});
