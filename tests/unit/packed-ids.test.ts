// The packed id table a streamed dense corpus's ids travel in (core/retrieval/packed-ids.ts): every
// id comes back as it went in, equality and lookup agree with plain string comparison, and the tie
// order equals trecTieBreak's on the strings (UTF-8 byte order, the order trec_eval's strcmp gives).
import { describe, expect, it } from 'vitest';
import {
  PackedStringsBuilder,
  copyPacked,
  packStrings,
  packedAt,
  packedCount,
  packedEquals,
  packedPositions,
  packedTieBreak,
  packedToStrings,
} from '../../src/lib/core/retrieval/packed-ids';
import { trecTieBreak } from '../../src/lib/core/retrieval/exact';

// ASCII, Latin-1, CJK, an astral code point (a surrogate pair), U+E000–U+FFFF (where UTF-16 order
// and UTF-8 order disagree with the pair), empty, a prefix of another, duplicates.
const IDS = [
  'sd000002',
  'sd000001',
  'café',
  'cafe',
  '文書-7',
  'x\u{1F600}y',
  'x\uFF5Ay',
  'x\uE000y',
  '',
  'sd00000',
  'sd000001',
  'Z',
  'a'.repeat(300),
];

describe('packed ids', () => {
  it('gives every id back, in order, from the builder and packStrings alike', () => {
    const t = packStrings(IDS);
    expect(packedCount(t)).toBe(IDS.length);
    expect(packedToStrings(t)).toEqual(IDS);
    IDS.forEach((id, i) => expect(packedAt(t, i)).toBe(id));
    // The builder grows past its first buffers (64 KiB of bytes, 4,096 offsets).
    const b = new PackedStringsBuilder();
    const many = Array.from({ length: 20_000 }, (_, i) => (i % 7 === 0 ? `dóc-${i}` : `doc-${i}`));
    for (const id of many) b.push(id);
    expect(b.length).toBe(many.length);
    const big = b.finish();
    expect(packedToStrings(big)).toEqual(many);
    expect(big.bytes.length).toBe(many.reduce((s, id) => s + new TextEncoder().encode(id).length, 0));
    const c = copyPacked(big);
    expect(c.bytes.buffer).not.toBe(big.bytes.buffer);
    expect(packedToStrings(c)).toEqual(many);
  });

  it('compares an id with a string as === does', () => {
    const t = packStrings(IDS);
    const probes = [...IDS, 'sd00000x', 'caf', 'cafés', 'x\u{1F601}y', 'sd0000011', 'z', ' '];
    for (let i = 0; i < IDS.length; i++)
      for (const p of probes) expect(packedEquals(t, i, p), `${IDS[i]} vs ${p}`).toBe(IDS[i] === p);
  });

  it('finds the first position of each id it holds, and leaves the others out', () => {
    const t = packStrings(IDS);
    const want = ['sd000001', 'café', 'x\u{1F600}y', '', 'nope', 'a'.repeat(300), 'Z'];
    const at = packedPositions(t, want);
    expect(Object.fromEntries(at)).toEqual(
      Object.fromEntries(want.filter((id) => IDS.includes(id)).map((id) => [id, IDS.indexOf(id)])),
    );
    expect(packedPositions(t, []).size).toBe(0);
  });

  it('orders ties as trecTieBreak does on the strings', () => {
    const distinct = [...new Set(IDS)];
    const t = packStrings(distinct);
    const packed = packedTieBreak(t);
    const strings = trecTieBreak(distinct);
    for (let i = 0; i < distinct.length; i++)
      for (let j = 0; j < distinct.length; j++)
        expect(Math.sign(packed(i, j)), `${distinct[i]} vs ${distinct[j]}`).toBe(Math.sign(strings(i, j)));
    // The astral id sorts after U+FF5A and U+E000 in UTF-8 (code point) order, unlike UTF-16's `<`.
    const at = (s: string) => distinct.indexOf(s);
    expect(packed(at('x\u{1F600}y'), at('x\uFF5Ay'))).toBeGreaterThan(0);
    expect(packed(at('x\uE000y'), at('x\uFF5Ay'))).toBeLessThan(0);
  });
});
