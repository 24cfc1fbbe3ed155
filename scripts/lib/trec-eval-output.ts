// Reading a trec_eval binary's printed output to cross-check Loupe's numbers: the 'all' lines, and the
// precision each value was printed with (stock trec_eval prints "%6.4f"; a build with wider print
// statements prints more), so a comparison says how precisely it actually compared.

export interface PrintedValue {
  value: number;
  /**
   * Decimal places the printed text resolves ("0.6131" → 4, "1.5e-05" → 6); Infinity for a text
   * without a decimal point ("1", "0": %.17g prints exact integers so; "-nan").
   */
  decimals: number;
}

/** The `all` lines of trec_eval's output: measure → printed value. Lines of single queries are skipped. */
export function parseTrecEvalAll(out: string): Map<string, PrintedValue> {
  const values = new Map<string, PrintedValue>();
  for (const line of out.split('\n')) {
    const [measure, qid, text] = line.trim().split(/\s+/);
    if (qid !== 'all' || text === undefined) continue;
    const [mantissa, exponent] = text.split(/[eE]/);
    const dot = mantissa.indexOf('.');
    const decimals = dot < 0 ? Infinity : mantissa.length - dot - 1 - Number(exponent ?? 0);
    values.set(measure, { value: Number(text), decimals });
  }
  return values;
}

/**
 * Compares Loupe's overall values with trec_eval's printed ones and says at which precision: the fewest
 * decimals among the compared values (a difference below half a unit of that decimal is rounding).
 * Throws when trec_eval printed no `all` line for one of the measures.
 */
export function compareWithTrecEval(
  out: string,
  ours: Readonly<Record<string, number>>,
  measures: readonly string[],
): { maxDiff: number; decimals: number; note: string } {
  const printed = parseTrecEvalAll(out);
  let maxDiff = 0;
  let decimals = Infinity;
  for (const m of measures) {
    const p = printed.get(m);
    if (!p) throw new Error(`trec_eval printed no 'all' line for ${m}`);
    maxDiff = Math.max(maxDiff, Math.abs(p.value - (ours[m] ?? 0)));
    decimals = Math.min(decimals, p.decimals);
  }
  const precision = Number.isFinite(decimals)
    ? `compared at the ${decimals} decimals it printed`
    : 'compared exactly: it printed whole numbers';
  const note = `trec_eval: max |diff| ${maxDiff.toExponential(1)} (${precision})`;
  return { maxDiff, decimals, note };
}
