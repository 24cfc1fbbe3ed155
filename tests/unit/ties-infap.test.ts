// infAP's range over tie orders (ties-infap.ts, used by tieRange): with pooled-but-unjudged documents
// (qrels -1) the relevant-first order is not infAP's best, so infAP gets its own orders. Checked against
// every tie order of small random runs (exhaustive enumeration, -l and -M included), against a hand-made
// case where trec_eval's own order beats the relevant-first one, and on the measures whose range is
// reversed (unj_k, rbp_resid).
import { describe, expect, it } from 'vitest';
import { evaluate, type EvalOptions } from '../../src/lib/core/eval/metrics';
import {
  breakTies,
  REVERSED_RANGE_FAMILIES,
  tieGroups,
  tieOrderedRun,
  tieRange,
} from '../../src/lib/core/eval/ties';
import { infApTieOrder } from '../../src/lib/core/eval/ties-infap';
import { rankQuery } from '../../src/lib/core/eval/metrics';
import type { Qrels, Run, ScoredDoc } from '../../src/lib/core/types';

const doc = (docId: string, score: number): ScoredDoc => ({ docId, score });

/** infAP of one query ranked exactly in the given order. */
function infApOf(order: readonly ScoredDoc[], judged: Map<string, number>, opts: EvalOptions): number {
  const run: Run = new Map([['q', order.map((d, i) => ({ docId: d.docId, score: order.length - i }))]]);
  return evaluate(new Map([['q', judged]]), run, ['infAP'], { ...opts, float32Ties: false }).perQuery.get(
    'q',
  )!.infAP;
}

/** Every order of a ranking's tie groups (the ranking itself in trec_eval's order). */
function* allTieOrders(ranked: ScoredDoc[]): Generator<ScoredDoc[]> {
  const groups = tieGroups(ranked);
  function* perms(xs: ScoredDoc[]): Generator<ScoredDoc[]> {
    if (xs.length <= 1) {
      yield xs;
      return;
    }
    for (let i = 0; i < xs.length; i++)
      for (const p of perms([...xs.slice(0, i), ...xs.slice(i + 1)])) yield [xs[i], ...p];
  }
  function* rec(gi: number, acc: ScoredDoc[]): Generator<ScoredDoc[]> {
    if (gi === groups.length) {
      yield acc;
      return;
    }
    const g = groups[gi];
    for (const p of perms(ranked.slice(g.from - 1, g.to)))
      yield* rec(gi + 1, [...acc.slice(0, g.from - 1), ...p, ...acc.slice(g.to)]);
  }
  yield* rec(0, ranked);
}

/** A small deterministic generator (tests must not depend on Math.random). */
function lcg(seed: number) {
  let s = seed;
  return (n: number) => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return Math.floor((s / 2147483648) * n);
  };
}

describe("infAP's range over tie orders", () => {
  it('a case where trec_eval beats the relevant-first order: an unjudged pooled doc above the relevant one', () => {
    // x (not in the qrels) first; then a tie of a (relevant), z (judged -1) and y (relevant).
    // trec_eval ranks z, y, a (id descending): z above y raises y's estimated precision, because
    // y's estimate counts z as p = (1 + ε)/(1 + 2ε) of a relevant doc.
    const judged = new Map([
      ['a', 1],
      ['y', 1],
      ['z', -1],
    ]);
    const qrels: Qrels = new Map([['q', judged]]);
    const run: Run = new Map([['q', [doc('x', 2), doc('a', 1), doc('y', 1), doc('z', 1)]]]);
    const trec = evaluate(qrels, run, ['infAP']).perQuery.get('q')!.infAP;
    const gradeBest = infApOf(breakTies(run.get('q')!, judged, 'best'), judged, {});
    expect(trec).toBeGreaterThan(gradeBest);
    const { best, worst } = tieRange(qrels, run, ['infAP', 'map']);
    expect(best.perQuery.get('q')!.infAP).toBeGreaterThanOrEqual(trec);
    expect(worst.perQuery.get('q')!.infAP).toBeLessThanOrEqual(trec);
    // map keeps the grade order's range: relevant first is its best.
    expect(best.perQuery.get('q')!.map).toBe(
      evaluate(
        qrels,
        new Map([['q', breakTies(run.get('q')!, judged, 'best').map((d, i) => doc(d.docId, 9 - i))]]),
        ['map'],
      ).perQuery.get('q')!.map,
    );
    expect(best.all.infAP).toBe(best.perQuery.get('q')!.infAP);
  });

  it('best and worst are the maximum and minimum over every tie order (600 random queries, -l and -M)', () => {
    const rnd = lcg(20240601);
    let moved = 0;
    let gradeMissed = 0;
    for (let t = 0; t < 600; t++) {
      const judged = new Map<string, number>();
      const docs: ScoredDoc[] = [];
      const n = 3 + rnd(6);
      for (let d = 0; d < n; d++) {
        const id = `d${d}`;
        const k = rnd(8);
        if (k < 3) judged.set(id, 1 + rnd(2));
        else if (k < 5) judged.set(id, 0);
        else if (k < 7) judged.set(id, -1);
        docs.push(doc(id, rnd(3)));
      }
      judged.set('missing', 1);
      const opts: EvalOptions = {
        relevanceLevel: rnd(4) === 0 ? 2 : 1,
        maxDocs: rnd(3) === 0 ? 1 + rnd(n) : undefined,
      };
      const ranked = rankQuery(docs);
      let max = -Infinity;
      let min = Infinity;
      for (const order of allTieOrders(ranked)) {
        const v = infApOf(order, judged, opts);
        max = Math.max(max, v);
        min = Math.min(min, v);
      }
      const best = infApOf(infApTieOrder(docs, judged, 'best', opts), judged, opts);
      const worst = infApOf(infApTieOrder(docs, judged, 'worst', opts), judged, opts);
      // Different orders can give the same value summed in another order: an ulp or two apart.
      expect(best, `query ${t}`).toBeCloseTo(max, 14);
      expect(worst, `query ${t}`).toBeCloseTo(min, 14);
      const r = tieRange(new Map([['q', judged]]), new Map([['q', docs]]), ['infAP'], opts);
      expect(r.best.perQuery.get('q')!.infAP).toBe(best);
      expect(r.worst.perQuery.get('q')!.infAP).toBe(worst);
      if (max > min) moved++;
      if (infApOf(breakTies(docs, judged, 'best'), judged, opts) < max - 1e-12) gradeMissed++;
    }
    expect(moved).toBeGreaterThan(200);
    // The grade order alone misses infAP's best on some of these queries (14 of the 600).
    expect(gradeMissed).toBeGreaterThanOrEqual(10);
  });

  it('trec_eval order lies in the range on random runs with -1 judgements (3,000 queries)', () => {
    const rnd = lcg(7);
    let checked = 0;
    let outsideGrade = 0;
    for (let t = 0; t < 100; t++) {
      const qrels: Qrels = new Map();
      const run: Run = new Map();
      for (let q = 0; q < 30; q++) {
        const judged = new Map<string, number>([['never', 1]]);
        const docs = new Map<string, ScoredDoc>();
        for (let d = 5 + rnd(30); d > 0; d--) {
          const id = `d${rnd(200)}`;
          const k = rnd(20);
          if (k < 5) judged.set(id, 1);
          else if (k < 9) judged.set(id, 0);
          else if (k < 14) judged.set(id, -1);
          docs.set(id, doc(id, rnd(6)));
        }
        qrels.set(`q${q}`, judged);
        run.set(`q${q}`, [...docs.values()]);
      }
      const trec = evaluate(qrels, run, ['infAP']);
      const { best, worst } = tieRange(qrels, run, ['infAP']);
      const gradeBest = evaluate(qrels, tieOrderedRun(run, qrels, 'best'), ['infAP']);
      for (const [q, v] of trec.perQuery) {
        checked++;
        if (v.infAP > gradeBest.perQuery.get(q)!.infAP + 1e-12) outsideGrade++;
        expect(v.infAP, q).toBeLessThanOrEqual(best.perQuery.get(q)!.infAP + 1e-12);
        expect(v.infAP, q).toBeGreaterThanOrEqual(worst.perQuery.get(q)!.infAP - 1e-12);
      }
      expect(trec.all.infAP).toBeLessThanOrEqual(best.all.infAP + 1e-12);
      expect(trec.all.infAP).toBeGreaterThanOrEqual(worst.all.infAP - 1e-12);
    }
    expect(checked).toBe(3000);
    // The grade order's best alone (tieRange before infAP had its own orders) is below trec_eval's value
    // on some of them.
    expect(outsideGrade).toBeGreaterThan(20);
  });
});

describe('measures counting unjudged documents: the range with its ends swapped', () => {
  it('unj_k and rbp_resid are lowest in the best order and highest in the worst', () => {
    expect(REVERSED_RANGE_FAMILIES).toEqual(['unj', 'rbp_resid']);
    // A tie of a relevant doc, a -1 doc and an unpooled doc at ranks 1-3.
    const judged = new Map([
      ['a', 1],
      ['b', -1],
    ]);
    const qrels: Qrels = new Map([['q', judged]]);
    const run: Run = new Map([['q', [doc('a', 1), doc('b', 1), doc('c', 1), doc('d', 0.5)]]]);
    const { best, worst } = tieRange(qrels, run, ['unj_1', 'rbp_resid', 'P_1']);
    expect(best.perQuery.get('q')).toMatchObject({ unj_1: 0, P_1: 1 });
    expect(worst.perQuery.get('q')).toMatchObject({ unj_1: 1, P_1: 0 });
    expect(best.perQuery.get('q')!.rbp_resid).toBeLessThan(worst.perQuery.get('q')!.rbp_resid);
  });
});
