// A bounded top-k selector over (score, index) pairs, shared by the lexical and dense retrievers.
// A min-heap keeps the k best seen so far with the worst at the root, so each candidate costs O(1)
// when it cannot enter and O(log k) when it does; memory is two typed arrays of length k.

/**
 * Orders two indices whose scores are equal: positive when `a` ranks before `b`, negative when
 * after, 0 when indistinguishable (then the earlier pushed one is not displaced).
 */
export type TieBreak = (a: number, b: number) => number;

/** One selected entry, best first in `TopK.drain()`. */
export interface TopKEntry {
  index: number;
  score: number;
}

/** Keeps the k highest-scoring (score, index) pairs, ties ordered by a comparator. NaN scores are ignored. */
export class TopK {
  readonly k: number;
  private readonly scores: Float64Array;
  private readonly indices: Float64Array;
  private readonly tieBreak: TieBreak;
  private n = 0;

  constructor(k: number, tieBreak: TieBreak = (a, b) => b - a) {
    if (!Number.isInteger(k) || k < 0)
      throw new RangeError(`top-k size must be a non-negative integer, got ${k}`);
    this.k = k;
    this.scores = new Float64Array(k);
    // Float64 so any safe integer index fits (dense search may use large offsets).
    this.indices = new Float64Array(k);
    this.tieBreak = tieBreak;
  }

  /** Number of entries currently held (at most k). */
  get size(): number {
    return this.n;
  }

  /** The lowest score held once k entries are held (what a newcomer must reach), else -Infinity. */
  get threshold(): number {
    return this.k > 0 && this.n === this.k ? this.scores[0] : -Infinity;
  }

  /** Whether (scoreA, a) ranks strictly below (scoreB, b). */
  private worse(sa: number, a: number, sb: number, b: number): boolean {
    return sa < sb || (sa === sb && this.tieBreak(a, b) < 0);
  }

  /** Offers a candidate; returns whether it was kept. */
  push(score: number, index: number): boolean {
    if (this.k === 0 || score !== score) return false;
    const s = this.scores;
    const ix = this.indices;
    if (this.n < this.k) {
      // Sift up from the new leaf.
      let i = this.n++;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!this.worse(score, index, s[p], ix[p])) break;
        s[i] = s[p];
        ix[i] = ix[p];
        i = p;
      }
      s[i] = score;
      ix[i] = index;
      return true;
    }
    if (!this.worse(s[0], ix[0], score, index)) return false;
    // Replace the root and sift down.
    let i = 0;
    const n = this.n;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && this.worse(s[r], ix[r], s[l], ix[l]) ? r : l;
      if (!this.worse(s[c], ix[c], score, index)) break;
      s[i] = s[c];
      ix[i] = ix[c];
      i = c;
    }
    s[i] = score;
    ix[i] = index;
    return true;
  }

  /** Returns the held entries best first and empties the selector. */
  drain(): TopKEntry[] {
    const out: TopKEntry[] = [];
    for (let i = 0; i < this.n; i++) out.push({ index: this.indices[i], score: this.scores[i] });
    this.n = 0;
    const tb = this.tieBreak;
    return out.sort((x, y) => y.score - x.score || tb(y.index, x.index));
  }
}

/**
 * Compares strings in UTF-8 byte order (C `strcmp` on UTF-8, as trec_eval orders document ids),
 * which is code-point order; plain `<` on JS strings compares UTF-16 units and differs above U+FFFF.
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // UTF-16 order disagrees with code-point order only between surrogates (astral code points)
    // and U+E000–U+FFFF: move surrogates above that range.
    if (x >= 0xd800) x += x < 0xe000 ? 0x2000 : -0x800;
    if (y >= 0xd800) y += y < 0xe000 ? 0x2000 : -0x800;
    return x - y;
  }
  return a.length - b.length;
}
