// Length-bucketed batches for embedding: a batch is padded to its longest text, so texts of
// similar length go together (sorted by token count, as sentence-transformers does), and a batch
// holds as many texts as fit a budget of padded tokens. Vectors are put back in input order by the
// caller, with the plan's `order`.

/** DEFAULT_TOKEN_BUDGET: padded tokens per batch (batch size × longest text of the batch). */
export const DEFAULT_TOKEN_BUDGET = 4096;

/** A batching of n texts: batch b holds positions order[bounds[b]] … order[bounds[b + 1] − 1]. */
export interface BatchPlan {
  /** Positions (0 … n−1) in batch order: longest first, ties in input order. */
  order: Uint32Array;
  /** Start of each batch in `order`, plus n at the end (batches + 1 entries). */
  bounds: Uint32Array;
  /** Σ over batches of size × longest length: the tokens the model runs on, padding included. */
  paddedTokens: number;
}

/**
 * Groups n texts of the given token lengths into batches: sorted by length (longest first, so the
 * largest batch shape is met, and fails, first), each batch as long as size × its longest length
 * stays within `tokenBudget` and its size within `maxBatch`; at least one text per batch.
 * Deterministic: the same lengths and limits always give the same plan.
 */
export function planBatches(
  lengths: ArrayLike<number>,
  opts: { tokenBudget: number; maxBatch: number },
): BatchPlan {
  const { tokenBudget, maxBatch } = opts;
  if (!(tokenBudget > 0)) throw new RangeError(`token budget must be positive, got ${tokenBudget}`);
  if (!Number.isInteger(maxBatch) || maxBatch < 1)
    throw new RangeError(`batch size must be a positive integer, got ${maxBatch}`);
  const n = lengths.length;
  for (let i = 0; i < n; i++)
    if (!Number.isInteger(lengths[i]) || lengths[i] < 0)
      throw new RangeError(`length of text ${i} must be a non-negative integer, got ${lengths[i]}`);
  const order = Uint32Array.from({ length: n }, (_, i) => i).sort((a, b) => lengths[b] - lengths[a] || a - b);
  const bounds: number[] = [0];
  let paddedTokens = 0;
  let start = 0;
  while (start < n) {
    // Sorted longest first: the batch's first text sets its padded length.
    const longest = Math.max(lengths[order[start]], 1);
    const size = Math.max(1, Math.min(maxBatch, n - start, Math.floor(tokenBudget / longest)));
    paddedTokens += size * lengths[order[start]];
    start += size;
    bounds.push(start);
  }
  return { order, bounds: Uint32Array.from(bounds), paddedTokens };
}

/** Whether a stored plan is a valid batching of n texts (every position exactly once, ordered bounds). */
export function isValidPlan(plan: { order?: unknown; bounds?: unknown }, n: number): plan is BatchPlan {
  const { order, bounds } = plan;
  if (!(order instanceof Uint32Array) || !(bounds instanceof Uint32Array)) return false;
  if (order.length !== n || bounds.length < (n > 0 ? 2 : 1) || bounds[0] !== 0 || bounds.at(-1) !== n)
    return false;
  for (let b = 1; b < bounds.length; b++) if (bounds[b] <= bounds[b - 1]) return false;
  const seen = new Uint8Array(n);
  for (const p of order) {
    if (p >= n || seen[p]) return false;
    seen[p] = 1;
  }
  return true;
}
