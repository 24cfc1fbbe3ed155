import { describe, expect, it } from 'vitest';
import { isValidPlan, planBatches } from '../../src/lib/core/retrieval/batching';

/** The batches of a plan as lists of positions. */
function batches(p: ReturnType<typeof planBatches>): number[][] {
  return Array.from({ length: p.bounds.length - 1 }, (_, b) => [
    ...p.order.subarray(p.bounds[b], p.bounds[b + 1]),
  ]);
}

/** Seeded lengths (xorshift), like medquad's mix: many short texts, a tail up to 512. */
function lengths(n: number, seed: number): number[] {
  let x = seed;
  return Array.from({ length: n }, () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const u = (x >>> 0) / 2 ** 32;
    return Math.min(512, 8 + Math.floor(-Math.log(1 - u) * 180));
  });
}

describe('length-bucketed batches', () => {
  it('sorts longest first, fills each batch up to the token budget and the batch cap', () => {
    const p = planBatches([5, 100, 20, 100, 7, 60], { tokenBudget: 200, maxBatch: 3 });
    // 100,100 (2 × 100 = 200); 60,20,7 (3 × 60 = 180, capped at 3); 5.
    expect(batches(p)).toEqual([[1, 3], [5, 2, 4], [0]]);
    expect(p.paddedTokens).toBe(200 + 180 + 5);
  });

  it('gives a text longer than the budget a batch of its own', () => {
    expect(batches(planBatches([900, 10, 10], { tokenBudget: 100, maxBatch: 8 }))).toEqual([[0], [1, 2]]);
  });

  it('equal lengths keep input order in chunks of maxBatch (images)', () => {
    const p = planBatches(new Array(10).fill(1), { tokenBudget: Infinity, maxBatch: 4 });
    expect(batches(p)).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
      [8, 9],
    ]);
  });

  it('is deterministic, covers every text once and never exceeds the budget', () => {
    const len = lengths(3000, 7);
    const a = planBatches(len, { tokenBudget: 4096, maxBatch: 64 });
    const b = planBatches([...len], { tokenBudget: 4096, maxBatch: 64 });
    expect(a.order).toEqual(b.order);
    expect(a.bounds).toEqual(b.bounds);
    expect(isValidPlan(a, 3000)).toBe(true);
    for (const batch of batches(a)) {
      const longest = Math.max(...batch.map((i) => len[i]));
      expect(batch.length * longest).toBeLessThanOrEqual(4096);
      expect(batch.length).toBeLessThanOrEqual(64);
    }
    // Far less padding than batches of 32 in input order.
    let shardOrder = 0;
    for (let i = 0; i < len.length; i += 32) {
      const s = len.slice(i, i + 32);
      shardOrder += Math.max(...s) * s.length;
    }
    const real = len.reduce((x, y) => x + y, 0);
    expect(a.paddedTokens).toBeLessThan(1.1 * real);
    expect(shardOrder).toBeGreaterThan(1.8 * real);
  });

  it('refuses bad limits and lengths, and recognises broken stored plans', () => {
    expect(() => planBatches([1], { tokenBudget: 0, maxBatch: 1 })).toThrow(/token budget/);
    expect(() => planBatches([1], { tokenBudget: 10, maxBatch: 0 })).toThrow(/batch size/);
    expect(() => planBatches([1, -2], { tokenBudget: 10, maxBatch: 1 })).toThrow(/text 1/);
    const p = planBatches([3, 2, 1], { tokenBudget: 4, maxBatch: 8 });
    expect(isValidPlan(p, 3)).toBe(true);
    expect(isValidPlan(p, 4)).toBe(false);
    expect(isValidPlan({ order: Uint32Array.of(0, 0, 1), bounds: p.bounds }, 3)).toBe(false);
    expect(isValidPlan({ order: p.order, bounds: Uint32Array.of(0, 2, 2, 3) }, 3)).toBe(false);
    expect(isValidPlan({ order: [0, 1, 2], bounds: p.bounds }, 3)).toBe(false);
    expect(isValidPlan(planBatches([], { tokenBudget: 4, maxBatch: 8 }), 0)).toBe(true);
  });
});
