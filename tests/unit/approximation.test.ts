// Quality under approximation (issue 37 item 2): the rows of the table on cases small enough to check
// by hand (an identical run, a run lower by a constant, rankings that share 8 of 10 documents), the
// groups against the item-1 machinery it reuses, percentiles of the query times, and the CSV.
import { describe, expect, it } from 'vitest';
import {
  latencyOf,
  latencyOfLists,
  queryLatency,
  approxRole,
  bytesPerQueryOf,
  hnswMeanMs,
  indexMemoryEstimate,
  approximationCsv,
  approximationTable,
  recallAgainst,
  type ApproxRunInput,
} from '../../src/lib/core/eval/approximation';
import { allPairs } from '../../src/lib/core/eval/all-pairs';
import { configKey, type RetrieverConfig } from '../../src/lib/core/retrieval/runs';
import { bootstrapMean } from '../../src/lib/core/eval/stats';

const ids = (p: string, n: number) => Array.from({ length: n }, (_, i) => `${p}${i}`);
const top10 = ids('d', 10);
/** Exact: q1 10 documents, q2 10, q3 5, q4 none (the query returned nothing). q5 only in exact. */
const exactTop = new Map<string, string[]>([
  ['q1', top10],
  ['q2', top10],
  ['q3', top10.slice(0, 5)],
  ['q4', []],
  ['q5', top10],
]);
const exact: ApproxRunInput = {
  id: 'exact',
  label: 'exact',
  kind: 'exact',
  perQuery: new Map([
    ['q1', 1],
    ['q2', 0.5],
    ['q3', 0.25],
    ['q4', 0.75],
    ['q5', 0.5],
  ]),
  top: exactTop,
  queryMs: Array.from({ length: 100 }, (_, i) => i + 1),
  indexBytes: 1536,
};
const same: ApproxRunInput = {
  id: 'hnsw',
  label: 'HNSW ef 64',
  kind: 'hnsw',
  setting: 'ef 64',
  perQuery: new Map([
    ['q1', 1],
    ['q2', 0.5],
    ['q3', 0.25],
    ['q4', 0.75],
  ]),
  top: exactTop,
};
/** 0.25 lower on every query; q1 keeps 8 of exact's 10, q3 4 of 5. */
const lower: ApproxRunInput = {
  id: 'ivf',
  label: 'IVF, nprobe 4',
  kind: 'ivf',
  setting: 'nprobe 4',
  perQuery: new Map([
    ['q1', 0.75],
    ['q2', 0.25],
    ['q3', 0],
    ['q4', 0.5],
  ]),
  top: new Map([
    ['q1', [...top10.slice(0, 8), 'x1', 'x2']],
    ['q2', top10],
    ['q3', ['d0', 'd1', 'x', 'd3', 'd4', 'd2']],
    ['q4', ['y']],
  ]),
  bytesPerQuery: 2048.5,
};

describe('recall@10 against exact', () => {
  it('averages the share of exact’s top 10 found, over queries whose exact top 10 is not empty', () => {
    // q1 8/10, q2 10/10, q3: exact has 5, the row's top 10 holds all 5 (d2 at rank 6) → 1; q4 skipped.
    expect(recallAgainst(exactTop, lower.top, ['q1', 'q2', 'q3', 'q4'])).toBeCloseTo((0.8 + 1 + 1) / 3, 15);
    // Only the top k count: at k = 5, q3's d2 (rank 6) is out → 4/5.
    expect(recallAgainst(exactTop, lower.top, ['q3'], 5)).toBe(0.8);
    expect(recallAgainst(exactTop, lower.top, ['q4'])).toBe(1);
  });
});

describe('the approximation table', () => {
  const t = approximationTable({
    measure: 'ndcg_cut_10',
    exact,
    approx: [same, lower],
    options: { bootstrap: 1000, randomization: 10000, seed: 7 },
  });
  const [e, h, v] = t.rows;

  it('compares over the queries every row has, and counts the others', () => {
    expect([t.queries, t.excludedQueries]).toEqual([4, 1]);
    expect(t.rows.map((r) => r.id)).toEqual(['exact', 'hnsw', 'ivf']);
  });

  it('gives each row its mean with the bootstrap interval of its scores', () => {
    expect(e.mean).toBe(0.625);
    expect(v.mean).toBe(0.375);
    const ci = bootstrapMean(Float64Array.from([1, 0.5, 0.25, 0.75]), { resamples: 1000, seed: 7 });
    expect([e.lower, e.upper]).toEqual([ci.lower, ci.upper]);
    expect(e.lower).toBeLessThanOrEqual(e.mean);
    expect(e.upper).toBeGreaterThanOrEqual(e.mean);
  });

  it('an identical run: Δ 0, p 1, tied with exact, recall 1', () => {
    expect([h.diff, h.diffLower, h.diffUpper]).toEqual([0, 0, 0]);
    expect(h.p).toBe(1);
    expect(h.pTukeyVsExact).toBe(1);
    expect(h.tiedWithExact).toBe(true);
    expect(h.recallAt10).toBe(1);
  });

  it('a run 0.25 lower on every query: Δ −0.25 in every resample; sign flips as extreme 2 times in 16', () => {
    expect([v.diff, v.diffLower, v.diffUpper]).toEqual([-0.25, -0.25, -0.25]);
    // |S*| ≥ |S| only when all four signs agree: probability 2/16; 10,000 flips: within 4 standard errors.
    const se = Math.sqrt((0.125 * 0.875) / 10000);
    expect(Math.abs(v.p! - 0.125)).toBeLessThan(4 * se);
    // Holm over the two approximate rows: 2·p for the smaller, max(that, 1·1) for the larger.
    expect(v.pHolm).toBeCloseTo(2 * v.p!, 12);
    expect(h.pHolm).toBe(1);
    // The rows are exactly additive (run + query), so Tukey's residual is 0: any Δ ≠ 0 is significant.
    expect(v.pTukeyVsExact).toBeLessThan(1e-9);
    expect(v.tiedWithExact).toBe(false);
    expect(v.recallAt10).toBeCloseTo((0.8 + 1 + 1) / 3, 15);
  });

  it('the groups of item 1: exact best (first of equal means), HNSW tied with it, IVF third whatever the noise', () => {
    expect(t.rows.map((r) => r.tiedWithBest)).toEqual([true, true, false]);
    expect(t.rows.map((r) => r.rankInterval)).toEqual([
      [1, 2],
      [1, 2],
      [3, 3],
    ]);
    expect(t.groupsMethod).toMatch(/Tukey HSD/);
  });

  it('takes the cost as given: numpy percentiles of the query times, bytes, memory; null where unknown', () => {
    // 1…100 ms: p50 = 50.5, p99 = 99 + 0.01·(100 − 99).
    expect(e.p50Ms).toBe(50.5);
    expect(e.p99Ms).toBeCloseTo(99.01, 12);
    expect(e.indexBytes).toBe(1536);
    expect(e.meanMs).toBe(50.5);
    expect([h.p50Ms, h.p99Ms, h.meanMs, h.bytesPerQuery, h.indexBytes]).toEqual([
      null,
      null,
      null,
      null,
      null,
    ]);
    expect(v.bytesPerQuery).toBe(2048.5);
  });

  it('is the same table for the same seed', () => {
    const again = approximationTable({
      measure: 'ndcg_cut_10',
      exact,
      approx: [same, lower],
      options: { bootstrap: 1000, randomization: 10000, seed: 7 },
    });
    expect(again).toEqual(t);
  });

  it('exports CSV with the methods named, one line per row, labels quoted when they hold a comma', () => {
    const csv = approximationCsv(t);
    const lines = csv.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^# quality under approximation: ndcg_cut_10 over 4 queries \(1 left out/);
    expect(lines[1]).toMatch(/paired randomization test \(10000 sign flips\), Holm/);
    expect(lines[2]).toMatch(/^# groups: Tukey HSD/);
    expect(lines[3].split(',')).toHaveLength(21);
    expect(lines).toHaveLength(4 + 3);
    expect(lines[6]).toMatch(/^"IVF, nprobe 4",ivf,nprobe 4,0\.375,/);
    expect(lines[6]).toContain(',false,false,3-3,');
    const last = lines[4].split(',').slice(-5);
    expect([last[0], Number(last[1]).toFixed(9), ...last.slice(2)]).toEqual([
      '50.5',
      '99.010000000',
      '50.5',
      '',
      '1536',
    ]);
  });
});

describe('groups agree with all pairs (item 1) on the same runs', () => {
  it('tied with best and rank intervals equal allPairs’ Tukey HSD', () => {
    // Five rows over 30 queries, made deterministic: exact, two close, two clearly worse.
    const q = ids('q', 30);
    const base = q.map((_, i) => ((i * 37) % 29) / 29);
    const mk = (id: string, shift: number, wobble: number): ApproxRunInput => ({
      id,
      label: id,
      kind: id === 'exact' ? 'exact' : 'hnsw',
      perQuery: new Map(
        q.map((x, i) => [
          x,
          Math.min(1, Math.max(0, base[i] + shift + (wobble * (((i * 13) % 7) - 3)) / 30)),
        ]),
      ),
      top: new Map(q.map((x) => [x, top10])),
    });
    const rows = [
      mk('exact', 0, 0),
      mk('a', -0.01, 0.3),
      mk('b', 0.005, 0.2),
      mk('c', -0.2, 0.1),
      mk('d', -0.3, 0.5),
    ];
    const t = approximationTable({ measure: 'm', exact: rows[0], approx: rows.slice(1) });
    const ref = allPairs({
      inputs: rows.map((r) => ({
        id: r.id,
        perQuery: new Map([...r.perQuery].map(([k, v]) => [k, { m: v }])),
      })),
      measure: 'm',
    });
    expect(t.rows.filter((r) => r.tiedWithBest).map((r) => r.id)).toEqual(ref.tiedWithBest);
    expect(t.rows.map((r) => r.rankInterval)).toEqual(ref.rankIntervals);
    expect(t.rows.find((r) => r.id === 'd')!.tiedWithExact).toBe(false);
  });
});

describe('stored runs as rows', () => {
  const hnsw = {
    dtype: 'fp32',
    ann: {
      M: 16,
      efSearch: 64,
      curve: [
        { efSearch: 16, qps: 4000 },
        { efSearch: 64, qps: 2000 },
      ],
    },
  };
  const ivf = { dtype: 'fp32', ivf: { nlist: 256, nprobe: 16, totalBytes: 3_000_000, queries: 1000 } };
  const twoPass = { dtype: 'fp32', index: { rerank: 100, firstPass: { bits: 4, candidates: 2000 } } };

  it('reads each configuration’s role, knob and order', () => {
    expect(approxRole({ dtype: 'fp32' }, 'fp32')).toMatchObject({ kind: 'exact', setting: 'fp32', order: 0 });
    expect(approxRole({ dtype: 'q8' }, 'fp32')).toMatchObject({ kind: 'dtype', setting: 'q8' });
    expect(approxRole(hnsw, 'fp32')).toMatchObject({
      kind: 'hnsw',
      setting: 'ef 64',
      label: 'HNSW M 16, ef 64',
    });
    expect(approxRole(ivf, 'fp32')).toMatchObject({ kind: 'ivf', setting: 'nprobe 16' });
    expect(approxRole(twoPass, 'fp32')).toMatchObject({ kind: 'compact', setting: '4-bit → 2000 → 100' });
    // The dtype is named when it is not exact's.
    expect(approxRole({ ...hnsw, dtype: 'q8' }, 'fp32').label).toBe('HNSW M 16, ef 64 (q8)');
    const order = [twoPass, ivf, hnsw, { dtype: 'q8' }, { dtype: 'fp32' }].map(
      (c) => approxRole(c, 'fp32').order,
    );
    expect([...order].sort((a, b) => a - b)).toEqual([...order].reverse());
  });

  it('estimates the index memory from n × dim, as the file says', () => {
    const n = 100_000;
    const dim = 384;
    expect(indexMemoryEstimate({ dtype: 'fp32' }, n, dim)).toBe(153_600_000);
    expect(indexMemoryEstimate(hnsw, n, dim)).toBe(153_600_000 + 12_800_000);
    expect(indexMemoryEstimate(twoPass, n, dim)).toBe(38_400_000 + 19_200_000);
    expect(indexMemoryEstimate(ivf, n, dim)).toBe(256 * 384 * 4);
  });

  it('bytes read per query and HNSW’s mean time at its ef', () => {
    expect(bytesPerQueryOf(ivf, 384)).toBe(3000);
    expect(bytesPerQueryOf(twoPass, 384)).toBe(100 * 384 * 4);
    expect(bytesPerQueryOf(hnsw, 384)).toBe(0);
    expect(hnswMeanMs(hnsw)).toBe(0.5);
    expect(hnswMeanMs({ dtype: 'fp32', ann: { M: 16, efSearch: 32 } })).toBeNull();
  });
});

describe('query latency', () => {
  it('summarises per-query times; a stored summary is used when the times are not given', () => {
    expect(queryLatency([])).toBeNull();
    const l = queryLatency([4, 1, 3, 2])!;
    expect([l.queries, l.p50, l.mean]).toEqual([4, 2.5, 2.5]);
    // h = 3 · 0.99 = 2.97: 4 − 0.03 · (4 − 3).
    expect(l.p99).toBeCloseTo(3.97, 12);
    const latency = { queries: 100, p50: 1.5, p99: 9, mean: 2 };
    expect(latencyOf({ dtype: 'fp32', ann: { M: 16, efSearch: 64, latency } })).toBe(latency);
    expect(latencyOf({ dtype: 'fp32' })).toBeNull();
    const t = approximationTable({
      measure: 'm',
      exact: { ...exact, queryMs: undefined },
      approx: [{ ...same, latency, meanMs: 99 }],
    });
    expect([t.rows[1].p50Ms, t.rows[1].p99Ms, t.rows[1].meanMs]).toEqual([1.5, 9, 2]);
    expect([t.rows[0].p50Ms, t.rows[0].meanMs]).toEqual([null, null]);
  });
});

describe('per-query times of exact and compact runs (issue 37 item 2)', () => {
  it('summarises the times the ranked lists carry; unsearched queries are not counted', () => {
    // Query c had no part embedded: not searched, no time.
    const lists = [{ ms: 0.4 }, { ms: 0.1 }, {}, { ms: 0.3 }, { ms: 0.2 }];
    const l = latencyOfLists(lists)!;
    expect(l.queries).toBe(4);
    expect(l.p50).toBeCloseTo(0.25, 12);
    expect(l.mean).toBeCloseTo(0.25, 12);
    // h = 3 · 0.99 = 2.97: 0.3 + 0.97 · (0.4 − 0.3).
    expect(l.p99).toBeCloseTo(0.397, 12);
    // A ranker that does not time (the packed IVF index's lists, timed in its own report): none.
    expect(latencyOfLists([{}, {}])).toBeNull();
    expect(latencyOfLists([])).toBeNull();
  });

  it('an exact or compact run stores its times beside its index; HNSW and IVF keep theirs first', () => {
    const own = { queries: 4, p50: 0.25, p99: 0.397, mean: 0.25 };
    expect(latencyOf({ dtype: 'fp32', latency: own })).toBe(own);
    expect(
      latencyOf({
        dtype: 'q8',
        index: { rerank: 100, firstPass: { bits: 4, candidates: 400 } },
        latency: own,
      }),
    ).toBe(own);
    const ann = { queries: 100, p50: 1.5, p99: 9, mean: 2 };
    expect(latencyOf({ dtype: 'fp32', ann: { M: 16, efSearch: 64, latency: ann }, latency: own })).toBe(ann);
  });

  it('search times are not part of a run’s identity (a rerun on a slower machine is the same run)', () => {
    const base: RetrieverConfig = {
      kind: 'dense',
      modelId: 'loupe-test/bert-tiny-random',
      revision: 'main',
      dtype: 'fp32',
      device: 'wasm',
    };
    const slow = { queries: 4, p50: 9, p99: 12, mean: 9.5 };
    const fast = { queries: 4, p50: 0.2, p99: 0.4, mean: 0.25 };
    expect(configKey({ ...base, latency: slow }, 't', 100)).toBe(
      configKey({ ...base, latency: fast }, 't', 100),
    );
    expect(configKey({ ...base, latency: slow }, 't', 100)).toBe(configKey(base, 't', 100));
    const ann = { kind: 'hnsw' as const, M: 16, efConstruction: 200, efSearch: 64, recallAt10: 0.9 };
    expect(configKey({ ...base, ann: { ...ann, latency: slow } }, 't', 100)).toBe(
      configKey({ ...base, ann: { ...ann, latency: fast } }, 't', 100),
    );
    expect(configKey({ ...base, ann }, 't', 100)).not.toBe(
      configKey({ ...base, ann: { ...ann, efSearch: 16 } }, 't', 100),
    );
  });
});
