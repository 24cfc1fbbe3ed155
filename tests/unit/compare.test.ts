import { describe, expect, test } from 'vitest';
import { compareRuns, curveMeans, type CompareInput } from '../../src/lib/core/eval/compare';
import { Xoshiro128 } from '../../src/lib/core/eval/stats';

function system(id: string, values: number[]): CompareInput {
  return {
    id,
    name: id,
    perQuery: new Map(values.map((v, i) => [`q${String(i).padStart(3, '0')}`, { m: v, n: v / 2 }])),
  };
}

describe('compareRuns', () => {
  const gen = new Xoshiro128(7);
  const base = Array.from({ length: 200 }, () => gen.nextFloat());
  const better = base.map((v) => Math.min(1, v + 0.1));
  const same = system('copy', base);

  test('a run compared with itself: difference 0, p = 1, all ties', () => {
    const c = compareRuns({ inputs: [system('base', base), same], baselineId: 'base', measures: ['m'] });
    const s = c.measures[0].systems[1];
    expect(s.diff).toEqual({ mean: 0, lower: 0, upper: 0 });
    expect(s.pRandomization).toBe(1);
    expect(s.pTTest).toBe(1);
    expect(s.ties).toBe(200);
    expect(c.changed).toEqual([]);
  });

  test('a clearly better run is significant after Holm, with a CI above 0 and the baseline CI around its mean', () => {
    const c = compareRuns({
      inputs: [system('base', base), system('better', better), same],
      baselineId: 'base',
      measures: ['m', 'n'],
    });
    const [b, s, copy] = c.measures[0].systems;
    expect(b.mean.lower).toBeLessThan(b.mean.mean);
    expect(b.mean.upper).toBeGreaterThan(b.mean.mean);
    expect(s.diff!.lower).toBeGreaterThan(0);
    expect(s.holmRandomization!).toBeLessThan(0.01);
    expect(s.holmTTest!).toBeGreaterThanOrEqual(s.pTTest!);
    expect(copy.holmRandomization).toBe(1);
    expect(s.wins! + s.ties! + s.losses!).toBe(200);
    expect(c.measures[1].measure).toBe('n');
    // Most changed first, and only queries that changed.
    const first = c.changed[0];
    expect(Math.abs(first.diffs.better)).toBeGreaterThanOrEqual(Math.abs(c.changed.at(-1)!.diffs.better));
  });

  test('facet breakdown of the primary measure; an unknown baseline is an error', () => {
    const facets = new Map(
      [...system('x', base).perQuery.keys()].map((q, i) => [
        q,
        new Map([['organ', i % 2 ? 'chest' : 'head']]),
      ]),
    );
    const c = compareRuns({
      inputs: [system('base', base), system('better', better)],
      baselineId: 'base',
      measures: ['m'],
      facets,
    });
    expect(c.facets.map((f) => f.key)).toEqual(['organ']);
    const chest = c.facets[0].values.find((v) => v.value === 'chest')!;
    expect(chest.queries).toBe(100);
    const expected = base.filter((_, i) => i % 2).reduce((a, v) => a + v, 0) / 100;
    expect(chest.means.base).toBeCloseTo(expected, 12);
    expect(() => compareRuns({ inputs: [same], baselineId: 'nope', measures: ['m'] })).toThrow(/baseline/);
  });

  test('curveMeans averages each cutoff', () => {
    const pq = new Map([
      ['a', { ndcg_cut_1: 1, ndcg_cut_2: 0.5 }],
      ['b', { ndcg_cut_1: 0, ndcg_cut_2: 0.25 }],
    ]);
    expect(curveMeans(pq, 'ndcg_cut', 2)).toEqual([0.5, 0.375]);
  });
});
