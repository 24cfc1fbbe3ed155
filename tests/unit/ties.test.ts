// Tied scores (src/lib/core/ties.ts): tie groups, queries with a tie in the top 10, and each measure's
// range over tie orders. The reference for a best/worst order is trec_eval's own rule applied to a
// renamed run: trec_eval breaks ties by document id descending, so prefixing every id with its grade
// (higher grade, larger prefix) makes trec_eval's order the best one, and the reverse prefix the worst
// one. The golden vectors' trec_eval numbers must lie inside the range.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { evaluate, expandMeasureSpec, rankQuery, type EvalOptions } from '../../src/lib/core/eval/metrics';
import { parseQrels, parseRun } from '../../src/lib/core/eval/trec';
import type { Qrels, Run, ScoredDoc } from '../../src/lib/core/types';
import {
  breakTies,
  formatTieScore,
  hasTieInTop,
  queriesWithTies,
  tieGroups,
  tieOrderedRun,
  tieRange,
  type TieOrder,
} from '../../src/lib/core/eval/ties';
import { GOLDEN_DIR, GOLDEN_EXTRA_DIR } from '../paths';

interface IndexEntry {
  case: string;
  variant: string;
  file: string;
  reference_version: string;
  trec_eval_args: string[];
}
const index: { cases: IndexEntry[] } = JSON.parse(readFileSync(join(GOLDEN_DIR, 'index.json'), 'utf8'));

/** trec_eval's flags as EvalOptions, and the measures its -m flags name. */
function options(args: string[], v9 = false): { opts: EvalOptions; measures: string[] } {
  const opts: EvalOptions = { float32Ties: v9 };
  const measures: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-c') opts.complete = true;
    else if (args[i] === '-l') opts.relevanceLevel = Number(args[++i]);
    else if (args[i] === '-M') opts.maxDocs = Number(args[++i]);
    else if (args[i] === '-m') measures.push(...expandMeasureSpec(args[++i]));
  }
  return { opts, measures };
}

/** A golden case's qrels.txt and run.txt (../shared/golden/metrics/<case>/). */
function inputs(caseName: string) {
  const dir = join(GOLDEN_DIR, caseName);
  return {
    qrels: parseQrels(readFileSync(join(dir, 'qrels.txt'), 'utf8')),
    run: parseRun(readFileSync(join(dir, 'run.txt'), 'utf8')),
  };
}

function load(entry: IndexEntry) {
  const golden = JSON.parse(readFileSync(join(GOLDEN_DIR, entry.file), 'utf8')) as {
    per_query_full: Record<string, Record<string, number>>;
    all_full: Record<string, number>;
  };
  return {
    golden,
    ...inputs(entry.case),
    ...options(entry.trec_eval_args, entry.reference_version.startsWith('9.')),
  };
}

/**
 * trec_eval's rule, renamed: every document id (run and qrels alike) gets a one-letter prefix from its
 * grade (not in the qrels or negative: -1), larger for a higher grade (best) or a lower one (worst).
 * Equal scores then rank by grade, and by the original id descending within a grade.
 */
function renamed(run: Run, qrels: Qrels, order: TieOrder): { run: Run; qrels: Qrels } {
  const prefix = (g: number | undefined) => {
    const v = g === undefined || g < 0 ? 0 : g + 1;
    return String.fromCharCode(order === 'best' ? 0x41 + v : 0x5a - v) + '|';
  };
  const q2: Qrels = new Map();
  for (const [q, judged] of qrels)
    q2.set(q, new Map([...judged].map(([d, g]) => [prefix(g) + d, g] as [string, number])));
  const r2: Run = new Map();
  for (const [q, docs] of run)
    r2.set(
      q,
      docs.map((d) => ({ docId: prefix(qrels.get(q)?.get(d.docId)) + d.docId, score: d.score })),
    );
  return { run: r2, qrels: q2 };
}

const doc = (docId: string, score: number): ScoredDoc => ({ docId, score });

describe('tie groups and the top-10 count', () => {
  const { run } = load(index.cases.find((c) => c.file === 'score_ties/default.json')!);

  it('groups of equal scores, by rank in trec_eval order', () => {
    expect(tieGroups(rankQuery(run.get('t2')!))).toEqual([
      { from: 1, to: 2, score: 0.9 },
      { from: 3, to: 6, score: 0.7 },
      { from: 7, to: 12, score: 0.5 },
      { from: 13, to: 14, score: 0.1 },
    ]);
    // t3: the top doc alone, ten docs at 2.5, the bottom doc alone.
    expect(tieGroups(rankQuery(run.get('t3')!))).toEqual([{ from: 2, to: 11, score: 2.5 }]);
    expect(tieGroups(rankQuery(run.get('t4')!))).toEqual([]);
    // 0 and -0 tie, as in trec_eval; NaNs tie each other.
    expect(tieGroups(rankQuery([doc('a', 0), doc('b', -0), doc('c', NaN), doc('d', NaN)]))).toHaveLength(2);
  });

  it('queries whose top 10 holds a tie: t1, t2, t3 of score_ties, not t4', () => {
    expect(queriesWithTies(run, ['t1', 't2', 't3', 't4', 'absent'])).toEqual(['t1', 't2', 't3']);
  });

  it('a tie that straddles rank 10 counts, one below it does not', () => {
    const ranks = (scores: number[]) => scores.map((s, i) => doc(`d${i}`, s));
    const distinct = Array.from({ length: 12 }, (_, i) => 12 - i);
    expect(hasTieInTop(ranks(distinct))).toBe(false);
    // Ranks 10 and 11 share a score: which of them is in the top 10 is the tie-break's choice.
    expect(hasTieInTop(ranks([...distinct.slice(0, 10), 3, ...distinct.slice(11)]))).toBe(true);
    // Ranks 11 and 12 share a score: the top 10 does not depend on it.
    expect(hasTieInTop(ranks([...distinct.slice(0, 11), 2]))).toBe(false);
    expect(hasTieInTop(ranks([...distinct.slice(0, 11), 2]), 11)).toBe(true);
    // Two NaN scores rank last and tie; inside the top 10 only when the list is short.
    expect(hasTieInTop(ranks([3, 2, NaN, NaN]))).toBe(true);
    expect(hasTieInTop(ranks([...distinct, NaN, NaN]))).toBe(false);
    expect(hasTieInTop([])).toBe(false);
  });

  it('float32 ties (trec_eval 9.x, pytrec_eval): scores equal in float32 tie', () => {
    const docs = [doc('a', 0.3), doc('b', 0.30000000000000004)];
    expect(hasTieInTop(docs)).toBe(false);
    expect(hasTieInTop(docs, 10, { float32Ties: true })).toBe(true);
    expect(tieGroups(rankQuery(docs, { float32Ties: true }), { float32Ties: true })).toHaveLength(1);
  });

  it('scores in tie notes: 4 decimals when exact, else every digit', () => {
    expect(formatTieScore(0.5)).toBe('0.5000');
    expect(formatTieScore(0.81234567)).toBe('0.81234567');
    expect(formatTieScore(-2)).toBe('-2.0000');
  });
});

describe('a small case checked by hand', () => {
  // q1: three docs at 0.5 and one below; only `a` is relevant. trec_eval ranks c, b, a (id descending).
  // q2: three docs at 0.9 with grades 0 (x), 2 (y), 1 (z); trec_eval ranks z, y, x.
  const qrels: Qrels = new Map([
    ['q1', new Map([['a', 1]])],
    [
      'q2',
      new Map([
        ['x', 0],
        ['y', 2],
        ['z', 1],
      ]),
    ],
  ]);
  const run: Run = new Map([
    ['q1', [doc('a', 0.5), doc('b', 0.5), doc('c', 0.5), doc('d', 0.2)]],
    ['q2', [doc('x', 0.9), doc('y', 0.9), doc('z', 0.9)]],
  ]);
  const measures = ['recip_rank', 'P_1', 'ndcg_cut_10', 'map'];
  const { best, worst } = tieRange(qrels, run, measures);
  const log2 = Math.log2;

  it('best-first and worst-first orders', () => {
    expect(breakTies(run.get('q1')!, qrels.get('q1'), 'best').map((d) => d.docId)).toEqual([
      'a',
      'c',
      'b',
      'd',
    ]);
    expect(breakTies(run.get('q1')!, qrels.get('q1'), 'worst').map((d) => d.docId)).toEqual([
      'c',
      'b',
      'a',
      'd',
    ]);
    expect(breakTies(run.get('q2')!, qrels.get('q2'), 'best').map((d) => d.docId)).toEqual(['y', 'z', 'x']);
    expect(breakTies(run.get('q2')!, qrels.get('q2'), 'worst').map((d) => d.docId)).toEqual(['x', 'z', 'y']);
  });

  it('q1: the relevant doc first (every measure 1) or third (RR 1/3, nDCG 1/log2 4, AP 1/3)', () => {
    expect(best.perQuery.get('q1')).toEqual({ recip_rank: 1, P_1: 1, ndcg_cut_10: 1, map: 1 });
    const w = worst.perQuery.get('q1')!;
    expect(w.recip_rank).toBeCloseTo(1 / 3, 15);
    expect(w.P_1).toBe(0);
    expect(w.ndcg_cut_10).toBeCloseTo(1 / log2(4), 15);
    expect(w.map).toBeCloseTo(1 / 3, 15);
    // trec_eval's own order is the worst one here (a is the smallest id).
    expect(evaluate(qrels, run, measures).perQuery.get('q1')).toEqual(w);
  });

  it('q2: grades 2, 1, 0 (nDCG 1) or 0, 1, 2 (nDCG (1/log2 3 + 2/2) / (2 + 1/log2 3))', () => {
    expect(best.perQuery.get('q2')!.ndcg_cut_10).toBeCloseTo(1, 15);
    const idcg = 2 + 1 / log2(3);
    expect(worst.perQuery.get('q2')!.ndcg_cut_10).toBeCloseTo((1 / log2(3) + 2 / log2(4)) / idcg, 15);
    // trec_eval's order z, y, x: 1 + 2/log2 3.
    expect(evaluate(qrels, run, measures).perQuery.get('q2')!.ndcg_cut_10).toBeCloseTo(
      (1 + 2 / log2(3)) / idcg,
      15,
    );
    expect(worst.perQuery.get('q2')!.recip_rank).toBeCloseTo(0.5, 15);
  });
});

describe('range over tie orders against trec_eval (golden vectors)', () => {
  for (const entry of index.cases) {
    it(`${entry.file} (trec_eval ${entry.reference_version})`, () => {
      const { golden, qrels, run, opts, measures } = load(entry);
      const range = tieRange(qrels, run, measures, opts);
      for (const order of ['best', 'worst'] as const) {
        // The reference: the renamed run through the trec_eval-exact evaluator, trec_eval's own tie rule.
        const r = renamed(run, qrels, order);
        const ref = evaluate(r.qrels, r.run, measures, opts);
        expect(range[order].evaluatedQueries).toEqual(ref.evaluatedQueries);
        for (const q of ref.evaluatedQueries)
          expect(range[order].perQuery.get(q), `${order} ${q}`).toEqual(ref.perQuery.get(q));
        expect(range[order].all, order).toEqual(ref.all);
      }
      // trec_eval's numbers lie in [worst, best]; a query without a tied score has one value.
      for (const [q, values] of Object.entries(golden.per_query_full)) {
        const best = range.best.perQuery.get(q)!;
        const worst = range.worst.perQuery.get(q)!;
        const tied = tieGroups(rankQuery(run.get(q) ?? [], opts), opts).length > 0;
        for (const [m, v] of Object.entries(values)) {
          expect(worst[m], `${q} ${m} worst`).toBeLessThanOrEqual(v + 1e-9);
          expect(best[m], `${q} ${m} best`).toBeGreaterThanOrEqual(v - 1e-9);
          if (!tied) expect(best[m] - worst[m], `${q} ${m}`).toBe(0);
        }
      }
      for (const [m, v] of Object.entries(golden.all_full)) {
        expect(range.worst.all[m], `all ${m}`).toBeLessThanOrEqual(v + 1e-9);
        expect(range.best.all[m], `all ${m}`).toBeGreaterThanOrEqual(v - 1e-9);
      }
    });
  }

  it('the measures for incompletely judged collections too: every trec_eval value of metrics-extra lies in the range', () => {
    const extra: { cases: { case: string; file: string; trec_eval_args: string[] }[] } = JSON.parse(
      readFileSync(join(GOLDEN_EXTRA_DIR, 'index.json'), 'utf8'),
    );
    let checked = 0;
    let moved = 0;
    for (const e of extra.cases) {
      const golden = JSON.parse(readFileSync(join(GOLDEN_EXTRA_DIR, e.file), 'utf8')) as {
        per_query_full: Record<string, Record<string, number>>;
      };
      const { qrels, run } = inputs(e.case);
      const { opts, measures } = options(e.trec_eval_args);
      const { best, worst } = tieRange(qrels, run, measures, opts);
      for (const [q, values] of Object.entries(golden.per_query_full))
        for (const [m, v] of Object.entries(values)) {
          const b = best.perQuery.get(q)![m];
          const w = worst.perQuery.get(q)![m];
          expect(w, `${e.file} ${q} ${m} worst`).toBeLessThanOrEqual(v + 1e-9);
          expect(b, `${e.file} ${q} ${m} best`).toBeGreaterThanOrEqual(v - 1e-9);
          checked++;
          if (b > w) moved++;
        }
    }
    // bpref, infAP, nDCG and interpolated precision all move with the tie order somewhere.
    expect(checked).toBeGreaterThan(2000);
    expect(moved).toBeGreaterThan(100);
  });

  it('the ties of score_ties matter: t1 nDCG@10 and t2 P@1 differ between the orders', () => {
    const entry = index.cases.find((c) => c.file === 'score_ties/default.json')!;
    const { qrels, run, measures, opts } = load(entry);
    const { best, worst } = tieRange(qrels, run, measures, opts);
    expect(best.perQuery.get('t1')!.ndcg_cut_10).toBeGreaterThan(worst.perQuery.get('t1')!.ndcg_cut_10 + 0.1);
    // t2's ranks 1-2 tie at 0.9: n01 (relevant) and n02 (not).
    expect(best.perQuery.get('t2')!.P_1).toBe(1);
    expect(worst.perQuery.get('t2')!.P_1).toBe(0);
  });

  it('-M cuts after the tie-break: the docs kept are the tie-break’s choice', () => {
    // Ten docs tied, the only relevant one has the smallest id: trec_eval -M 3 drops it.
    const qrels: Qrels = new Map([['q', new Map([['a', 1]])]]);
    const run: Run = new Map([['q', 'abcdefghij'.split('').map((id) => doc(id, 1))]]);
    const { best, worst } = tieRange(qrels, run, ['num_rel_ret', 'recall_100'], { maxDocs: 3 });
    expect(best.all).toMatchObject({ num_rel_ret: 1, recall_100: 1 });
    expect(worst.all).toMatchObject({ num_rel_ret: 0, recall_100: 0 });
    expect(
      tieOrderedRun(run, qrels, 'best')
        .get('q')!
        .map((d) => d.score),
    ).toEqual([10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
  });
});
