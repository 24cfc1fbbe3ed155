// The "Quality under approximation" CSV (approximation.ts, `approximationCsv`: what the panel's Export
// CSV saves) read back and laid out as the text table the headless runner prints
// (`npm run bench -- … --approximation`, scripts/bench.ts): the runner reads the file the page
// downloaded, not the page's state, so what it prints is what a person exporting the panel gets.
import { formatP } from './all-pairs';
import { ivfBytes } from '../retrieval/ivf-report';

/** One CSV line split into cells (a quoted cell may hold commas, line breaks aside, and doubled quotes). */
export function csvCells(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cur += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out;
}

/** The CSV read back: its `#` lines (without the `# `), its column names, and each row by column. */
export interface ApproximationCsv {
  notes: string[];
  columns: string[];
  rows: Record<string, string>[];
}

export function readApproximationCsv(text: string): ApproximationCsv {
  const lines = text.split(/\r?\n/).filter((l) => l.length);
  const notes = lines.filter((l) => l.startsWith('#')).map((l) => l.replace(/^#\s?/, ''));
  const body = lines.filter((l) => !l.startsWith('#'));
  if (!body.length) throw new Error('the approximation CSV has no header line');
  const columns = csvCells(body[0]);
  for (const need of ['label', 'kind', 'mean', 'query_ms_p50'])
    if (!columns.includes(need)) throw new Error(`the approximation CSV has no column ${need}`);
  const rows = body.slice(1).map((l, i) => {
    const cells = csvCells(l);
    if (cells.length !== columns.length)
      throw new Error(`approximation CSV row ${i + 1}: ${cells.length} cells, ${columns.length} columns`);
    return Object.fromEntries(columns.map((c, j) => [c, cells[j]]));
  });
  return { notes, columns, rows };
}

const num = (s: string | undefined) => (s === undefined || s === '' ? null : Number(s));
const f4 = (v: number) => v.toFixed(4);
const signed = (v: number) => (v > 0 ? '+' : v < 0 ? '-' : '±') + Math.abs(v).toFixed(4);
/** Milliseconds: three decimals below 10 ms (sub-millisecond scans on small corpora), else one. */
const ms = (v: number) => (v < 10 ? v.toFixed(3) : v.toFixed(1));

/**
 * The rows as text cells for `formatTextTable` (the row number first, the search second: left-aligned):
 * the measure with its interval, Δ to exact with its interval, Holm's p, whether Tukey's HSD ties the
 * row with exact, its rank interval, recall@10 against exact, query p50 and p99 (ms), bytes read per
 * query and the index's memory; '—' where the CSV has no value.
 */
export function approximationTextRows(csv: ApproximationCsv, measureLabel = 'mean'): string[][] {
  const dash = '—';
  const head = [
    '#',
    'search',
    `${measureLabel} [95% CI]`,
    'Δ vs exact [95% CI]',
    'p (Holm)',
    'tied: exact',
    'rank',
    'recall@10',
    'ms p50',
    'ms p99',
    'bytes/query',
    'memory',
  ];
  const body = csv.rows.map((r, i) => {
    const exact = r.kind === 'exact';
    const mean = num(r.mean);
    const [lo, hi] = [num(r.ci_lower), num(r.ci_upper)];
    const [d, dlo, dhi] = [num(r.diff_vs_exact), num(r.diff_ci_lower), num(r.diff_ci_upper)];
    const p = num(r.p_holm);
    const recall = num(r.recall_at_10_vs_exact);
    const [p50, p99] = [num(r.query_ms_p50), num(r.query_ms_p99)];
    const bytes = num(r.bytes_per_query);
    const memory = num(r.index_bytes);
    return [
      String(i + 1),
      r.label,
      mean === null ? dash : `${f4(mean)}${lo === null || hi === null ? '' : ` [${f4(lo)}, ${f4(hi)}]`}`,
      exact || d === null
        ? dash
        : `${signed(d)}${dlo === null || dhi === null ? '' : ` [${signed(dlo)}, ${signed(dhi)}]`}`,
      p === null ? dash : formatP(p),
      exact ? dash : r.tied_with_exact === 'true' ? 'yes' : 'no',
      (r.rank_interval ?? '').replace(/^(\d+)-\1$/, '$1') || dash,
      recall === null ? dash : f4(recall),
      p50 === null ? dash : ms(p50),
      p99 === null ? dash : ms(p99),
      bytes === null ? dash : ivfBytes(bytes),
      memory === null ? dash : ivfBytes(memory),
    ];
  });
  return [head, ...body];
}
