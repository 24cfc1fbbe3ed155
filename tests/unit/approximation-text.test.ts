// The approximation CSV read back and printed by the headless runner (`npm run bench -- --approximation`,
// core/eval/approximation-text.ts): the CSV the panel exports round-trips to the table's values, labels
// with commas and quotes survive, and the text rows show '—' where a cost is unknown.
import { describe, expect, it } from 'vitest';
import {
  approximationCsv,
  approximationTable,
  type ApproxRunInput,
} from '../../src/lib/core/eval/approximation';
import {
  approximationTextRows,
  csvCells,
  readApproximationCsv,
} from '../../src/lib/core/eval/approximation-text';
import { formatTextTable } from '../../src/lib/core/eval/all-pairs';

const q = ['q1', 'q2', 'q3', 'q4'];
const top = new Map(q.map((id) => [id, ['d1', 'd2', 'd3']]));
const exact: ApproxRunInput = {
  id: 'e',
  label: 'exact (fp32)',
  kind: 'exact',
  setting: 'fp32',
  perQuery: new Map(q.map((id, i) => [id, [1, 0.5, 0.25, 0.75][i]])),
  top,
  queryMs: [0.02, 0.03, 0.05, 0.04],
  bytesPerQuery: 0,
  indexBytes: 3000 * 64 * 4,
};
const hnsw: ApproxRunInput = {
  id: 'h',
  label: 'HNSW M 16, ef 16',
  kind: 'hnsw',
  setting: 'ef 16',
  perQuery: new Map(q.map((id, i) => [id, [0.75, 0.5, 0.25, 0.5][i]])),
  top: new Map(q.map((id) => [id, ['d1', 'x', 'd3']])),
  latency: { queries: 100, p50: 0.5, p99: 12.25, mean: 1 },
};
/** A label with a quote, and no cost known. */
const odd: ApproxRunInput = {
  id: 'o',
  label: 'exact, "q8" encoder',
  kind: 'dtype',
  setting: 'q8',
  perQuery: exact.perQuery,
  top,
};
const table = approximationTable({
  measure: 'ndcg_cut_10',
  exact,
  approx: [hnsw, odd],
  options: { bootstrap: 1000, randomization: 1000 },
});

describe('the approximation CSV read back', () => {
  it('splits quoted cells', () => {
    expect(csvCells('a,"b, c","d ""e""",')).toEqual(['a', 'b, c', 'd "e"', '']);
  });

  it('gives back the table’s rows, notes and columns', () => {
    const csv = readApproximationCsv(approximationCsv(table));
    expect(csv.notes[0]).toMatch(/^quality under approximation: ndcg_cut_10 over 4 queries/);
    expect(csv.rows.map((r) => r.label)).toEqual(table.rows.map((r) => r.label));
    expect(csv.rows.map((r) => Number(r.mean))).toEqual(table.rows.map((r) => r.mean));
    expect(csv.rows.map((r) => r.query_ms_p50)).toEqual([String(table.rows[0].p50Ms), '0.5', '']);
    expect(() => readApproximationCsv('# only a note\n')).toThrow(/no header/);
    expect(() => readApproximationCsv('label,kind,mean,query_ms_p50\na,b\n')).toThrow(/2 cells, 4 columns/);
  });

  it('prints one line per row with the costs, a dash where unknown', () => {
    const rows = approximationTextRows(readApproximationCsv(approximationCsv(table)), 'nDCG@10');
    expect(rows[0].slice(0, 3)).toEqual(['#', 'search', 'nDCG@10 [95% CI]']);
    expect(rows).toHaveLength(4);
    const [, e, h, o] = rows;
    const col = (name: string) => rows[0].indexOf(name);
    expect(e[1]).toBe('exact (fp32)');
    expect(e[col('Δ vs exact [95% CI]')]).toBe('—');
    // p50 of 0.02, 0.03, 0.04, 0.05 ms: 0.035, three decimals below 10 ms.
    expect(e[col('ms p50')]).toBe('0.035');
    expect(e[col('memory')]).toBe('750.0 KiB');
    expect(e[col('bytes/query')]).toBe('0 B');
    expect(h[col('ms p50')]).toBe('0.500');
    expect(h[col('ms p99')]).toBe('12.3');
    expect(h[col('Δ vs exact [95% CI]')]).toMatch(/^-0\.1250 \[/);
    expect(h[col('recall@10')]).toBe('0.6667');
    expect(o[1]).toBe('exact, "q8" encoder');
    expect([o[col('ms p50')], o[col('bytes/query')], o[col('memory')]]).toEqual(['—', '—', '—']);
    // Aligned by the comparison table's own formatter: every line as wide as the widest.
    const text = formatTextTable(rows).split('\n');
    expect(new Set(text.map((l) => l.length)).size).toBe(1);
  });
});
