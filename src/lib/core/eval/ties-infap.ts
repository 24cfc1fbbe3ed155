// infAP's own best and worst tie orders (ties.ts uses them for infAP's range over tie orders).
//
// Why infAP needs its own: the grade orders of ties.ts (relevant first, then judged non-relevant, then
// everything unjudged) give the extremes of measures that only grow when a more relevant document moves
// up. infAP is not one of them once the qrels hold pooled-but-unjudged documents (a negative value, e.g.
// -1). infAP (m_infap.c) estimates the precision above a relevant document at rank k as
// (1 + X·p)/k, where X counts the pooled documents above it (judged or not) and p = (r + ε)/(r + n + 2ε)
// is the share of relevant ones among the judged documents above (r relevant, n non-relevant): each
// pooled unjudged document above counts as p of a relevant one, a document absent from the qrels as 0.
// So moving an unjudged pooled document from just below a relevant document to just above it raises that
// document's term when p·(1 + documents absent from the qrels above it) > 1, i.e. as soon as one
// unpooled document is above it and p > 1/2, and a judged non-relevant document above a relevant one
// lowers its term more than an unpooled one does. trec_eval's own order (document id) could thus score
// above the relevant-first order: 66 per-query values of a run with -1 judgements did (0.2594 against a
// range of 0.2550-0.2578).
//
// The orders here are the exact extremes over all orders of each tie group: only where the group's
// relevant (R), unjudged pooled (U), unpooled (P) and judged non-relevant (N) documents sit relative to
// its relevant ones matters (swapping two neighbours changes at most the term of the one of them that is
// relevant, and nothing below both). P or N above a relevant document always
// lowers its term, so the best order puts them after the group's relevant documents and the worst before;
// how R and U interleave is chosen by dynamic programming over (R placed, U placed), which also handles
// -M cutting a group (the kept documents are a prefix). Pure: no DOM, no Node APIs.
import { INFAP_EPSILON, rankQuery, type RankOptions } from './metrics';
import { tieGroups, type TieOrder } from './tie-groups';
import type { ScoredDoc } from '../types';

/** Largest (R + 1)·(U + 1) of a tie group the dynamic program takes; larger groups keep the grade order. */
export const INFAP_DP_MAX_STATES = 4_000_000;

/** infAP's term for a relevant document at 0-based rank j with r relevant, n non-relevant, u unjudged above. */
function term(j: number, r: number, n: number, u: number): number {
  if (j === 0) return 1;
  return (
    1 / (j + 1) + (j / (j + 1)) * ((r + n + u) / j) * ((r + INFAP_EPSILON) / (r + n + 2 * INFAP_EPSILON))
  );
}

/**
 * The interleaving of `rel` relevant and `unj` unjudged pooled documents from a base position that gives
 * the largest ('best') or smallest ('worst') sum of the relevant documents' terms, among the prefixes
 * (i, t) that `end` accepts. Returns the sequence of kinds ('R' | 'U') of the chosen prefix.
 */
function interleave(
  rel: number,
  unj: number,
  base: { j: number; r: number; n: number; u: number },
  order: TieOrder,
  end: (i: number, t: number) => boolean,
): ('R' | 'U')[] {
  const w = unj + 1;
  const f = new Float64Array((rel + 1) * w);
  const fromR = new Uint8Array((rel + 1) * w);
  const better = order === 'best' ? (a: number, b: number) => a > b : (a: number, b: number) => a < b;
  let bestAt = -1;
  for (let i = 0; i <= rel; i++) {
    for (let t = 0; t <= unj; t++) {
      const k = i * w + t;
      if (k > 0) {
        // Reach (i, t) by placing a relevant document last (from (i-1, t)) or an unjudged one (i, t-1).
        const viaR = i > 0 ? f[k - w] + term(base.j + i - 1 + t, base.r + i - 1, base.n, base.u + t) : NaN;
        const viaU = t > 0 ? f[k - 1] : NaN;
        const useR = t === 0 || (i > 0 && !better(viaU, viaR));
        f[k] = useR ? viaR : viaU;
        fromR[k] = useR ? 1 : 0;
      }
      if (end(i, t) && (bestAt < 0 || better(f[k], f[bestAt]))) bestAt = k;
    }
  }
  const seq: ('R' | 'U')[] = [];
  for (let k = bestAt; k > 0;) {
    if (fromR[k]) {
      seq.push('R');
      k -= w;
    } else {
      seq.push('U');
      k -= 1;
    }
  }
  return seq.reverse();
}

/**
 * A query's ranking with every tie broken so that infAP is as high ('best') or as low ('worst') as any
 * tie order makes it, given trec_eval's -l and -M. Documents of one kind keep trec_eval's order. A group
 * too large for the dynamic program (INFAP_DP_MAX_STATES) keeps ties.ts's grade order.
 */
export function infApTieOrder(
  docs: readonly ScoredDoc[],
  judged: ReadonlyMap<string, number> | undefined,
  order: TieOrder,
  opts: RankOptions & { relevanceLevel?: number } = {},
): ScoredDoc[] {
  const level = opts.relevanceLevel ?? 1;
  const max = opts.maxDocs ?? Infinity;
  const ranked = rankQuery(docs, { float32Ties: opts.float32Ties });
  const kind = (d: ScoredDoc): 'R' | 'N' | 'U' | 'P' => {
    const g = judged?.get(d.docId);
    if (g === undefined) return 'P';
    if (g < 0) return 'U';
    return g >= level ? 'R' : 'N';
  };
  const out: ScoredDoc[] = [];
  let r = 0;
  let n = 0;
  let u = 0;
  const count = (d: ScoredDoc) => {
    const k = kind(d);
    if (k === 'R') r++;
    else if (k === 'N') n++;
    else if (k === 'U') u++;
  };
  let next = 0;
  for (const g of tieGroups(ranked, opts)) {
    for (; next < g.from - 1; next++) {
      out.push(ranked[next]);
      count(ranked[next]);
    }
    const group = ranked.slice(g.from - 1, g.to);
    next = g.to;
    const by = { R: [] as ScoredDoc[], N: [] as ScoredDoc[], U: [] as ScoredDoc[], P: [] as ScoredDoc[] };
    for (const d of group) by[kind(d)].push(d);
    const s = g.from - 1;
    const kept = Math.max(0, Math.min(group.length, max - s));
    const R = by.R.length;
    const U = by.U.length;
    const other = [...by.P, ...by.N];
    let arranged: ScoredDoc[];
    if ((R + 1) * (U + 1) > INFAP_DP_MAX_STATES || R === 0) {
      // No relevant document in the group: its order changes no term. Too large: the grade order.
      const rank = (d: ScoredDoc) => ({ R: 3, N: 2, U: 1, P: 1 })[kind(d)];
      const sign = order === 'best' ? -1 : 1;
      arranged = group.slice().sort((a, b) => sign * (rank(a) - rank(b)));
    } else if (order === 'best') {
      // P and N after the relevant documents; the kept prefix is an R/U interleaving, then fill (P, N
      // or the remaining U), and the relevant documents left out go last (cut off).
      const seq = interleave(
        R,
        U,
        { j: s, r, n, u },
        'best',
        (i, t) => i + t <= kept && kept - i <= U + other.length,
      );
      arranged = place(seq, by.R, by.U);
      arranged.push(...by.U.slice(seq.filter((x) => x === 'U').length), ...other);
      arranged.push(...by.R.slice(seq.filter((x) => x === 'R').length));
    } else {
      // P and N first; the rest of the kept prefix is an R/U interleaving of exactly that length.
      const rest = kept - other.length;
      const seq =
        rest > 0
          ? interleave(
              R,
              U,
              { j: s + other.length, r, n: n + by.N.length, u },
              'worst',
              (i, t) => i + t === rest,
            )
          : [];
      arranged = [...other, ...place(seq, by.R, by.U)];
      arranged.push(...by.R.slice(seq.filter((x) => x === 'R').length));
      arranged.push(...by.U.slice(seq.filter((x) => x === 'U').length));
    }
    out.push(...arranged);
    for (const d of group) count(d);
  }
  for (; next < ranked.length; next++) out.push(ranked[next]);
  return out;
}

/** The documents of an R/U sequence, each kind in its list's order. */
function place(
  seq: readonly ('R' | 'U')[],
  rel: readonly ScoredDoc[],
  unj: readonly ScoredDoc[],
): ScoredDoc[] {
  let i = 0;
  let t = 0;
  return seq.map((x) => (x === 'R' ? rel[i++] : unj[t++]));
}
