// Document ids as one packed UTF-8 table (bytes + Uint32 offsets, bm25-index's PackedStrings): how a
// streamed dense corpus's ids travel between the encoder worker, the page and the index worker.
// Three arrays of a million JS strings (one per context) took about 250 MiB of heap at 1M documents
// (BENCHMARKS.md, the scale ladder); the table of 1M eight-byte ids is 12 MB, copied as two typed
// arrays. A string is made only for an id a result needs (the top k).
//
// Ids are stored as UTF-8 (TextEncoder): a lone surrogate would come back as U+FFFD, as it already
// does in the BM25 index's packed ids.
import { comparePacked, packedAt, type PackedStrings } from './bm25-index';
import type { TieBreak } from './topk';

export { packedAt, type PackedStrings };

const encoder = new TextEncoder();

/** Builds a packed table an id at a time (buffers grow by doubling; finish() trims them). */
export class PackedStringsBuilder {
  private bytes = new Uint8Array(1 << 16);
  private offsets = new Uint32Array(1 << 12);
  private n = 0;
  private used = 0;

  get length(): number {
    return this.n;
  }

  push(s: string): void {
    // A UTF-16 unit is at most 3 UTF-8 bytes (a surrogate pair is 4 bytes for 2 units).
    if (this.used + 3 * s.length > this.bytes.length) {
      const grown = new Uint8Array(Math.max(2 * this.bytes.length, this.used + 3 * s.length));
      grown.set(this.bytes.subarray(0, this.used));
      this.bytes = grown;
    }
    if (this.n + 2 > this.offsets.length) {
      const grown = new Uint32Array(2 * this.offsets.length);
      grown.set(this.offsets);
      this.offsets = grown;
    }
    let w = this.used;
    let ascii = true;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        ascii = false;
        break;
      }
      this.bytes[w++] = c;
    }
    if (!ascii) w = this.used + encoder.encodeInto(s, this.bytes.subarray(this.used)).written;
    this.used = w;
    this.offsets[++this.n] = w;
  }

  /** The table (trimmed copies: the builder's buffers are dropped). */
  finish(): PackedStrings {
    const out = { bytes: this.bytes.slice(0, this.used), offsets: this.offsets.slice(0, this.n + 1) };
    this.bytes = new Uint8Array(0);
    this.offsets = new Uint32Array(1);
    this.n = 0;
    this.used = 0;
    return out;
  }
}

/** `ids` packed. */
export function packStrings(ids: Iterable<string>): PackedStrings {
  const b = new PackedStringsBuilder();
  for (const id of ids) b.push(id);
  return b.finish();
}

/** How many strings a table holds. */
export function packedCount(a: PackedStrings): number {
  return a.offsets.length - 1;
}

/** Every string of a table (for results that keep the string[] shape: small corpora). */
export function packedToStrings(a: PackedStrings): string[] {
  const out = new Array<string>(packedCount(a));
  for (let i = 0; i < out.length; i++) out[i] = packedAt(a, i);
  return out;
}

/** A copy of a table (its own buffers, e.g. to send to a worker by transfer). */
export function copyPacked(a: PackedStrings): PackedStrings {
  return { bytes: a.bytes.slice(), offsets: a.offsets.slice() };
}

/** Whether string i of `a` is `s` (without making a string when `s` is ASCII). */
export function packedEquals(a: PackedStrings, i: number, s: string): boolean {
  const from = a.offsets[i];
  const len = a.offsets[i + 1] - from;
  const bytes = a.bytes;
  for (let k = 0; k < s.length; k++) {
    const c = s.charCodeAt(k);
    // Bytes and units agree so far, all ASCII: the rest decides by decoding.
    if (c >= 0x80) return packedAt(a, i) === s;
    if (k >= len || bytes[from + k] !== c) return false;
  }
  return len === s.length;
}

/**
 * The first position of each of `ids` in `a` that it holds (absent ones are left out), by one scan
 * that compares bytes only where the lengths agree and stops once all are found.
 */
export function packedPositions(a: PackedStrings, ids: Iterable<string>): Map<string, number> {
  const at = new Map<string, number>();
  const byLength = new Map<number, { id: string; bytes: Uint8Array }[]>();
  let want = 0;
  for (const id of new Set(ids)) {
    const bytes = encoder.encode(id);
    const list = byLength.get(bytes.length);
    if (list) list.push({ id, bytes });
    else byLength.set(bytes.length, [{ id, bytes }]);
    want++;
  }
  if (!want) return at;
  const { offsets, bytes } = a;
  const n = packedCount(a);
  for (let i = 0; i < n && at.size < want; i++) {
    const from = offsets[i];
    const list = byLength.get(offsets[i + 1] - from);
    if (!list) continue;
    for (const c of list) {
      if (at.has(c.id)) continue;
      let k = 0;
      while (k < c.bytes.length && bytes[from + k] === c.bytes[k]) k++;
      if (k === c.bytes.length) at.set(c.id, i);
    }
  }
  return at;
}

/**
 * trec_eval's tie order over a packed table's documents (exact.ts's trecTieBreak on the strings):
 * the ids' ranks in UTF-8 byte order, which is the table's byte order.
 */
export function packedTieBreak(a: PackedStrings): TieBreak {
  const n = packedCount(a);
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  order.sort((x, y) => comparePacked(a, x, y));
  const rank = new Uint32Array(n);
  for (let r = 0; r < n; r++) rank[order[r]] = r;
  return (x, y) => rank[x] - rank[y];
}
