// Every measure of `trec_eval -m all_trec` against trec_eval 10.0 (../shared/golden/metrics-all: 13 cases,
// 15,049 values printed with 17 significant digits), and -M 0 as trec_eval 10.0 computes it.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  allTrecMeasures,
  evaluate,
  expandMeasureSpec,
  measureLabel,
  parseMeasure,
  SUMMARY_ONLY_MEASURES,
  TREC_EVAL_SETS,
  type EvalOptions,
} from '../../src/lib/core/eval/metrics';
import { formatFixed, formatTrecEval, parseQrels, parseRun } from '../../src/lib/core/eval/trec';
import { GOLDEN_DIR } from '../paths';

const GOLDEN_ALL_DIR = resolve(process.env.LOUPE_GOLDEN_ALL_DIR ?? resolve(GOLDEN_DIR, '../metrics-all'));

interface Golden {
  case: string;
  variant: string;
  trec_eval_args: string[];
  measures: string[];
  per_query: Record<string, Record<string, number>>;
  all: Record<string, number>;
  per_query_full: Record<string, Record<string, number>>;
  all_full: Record<string, number>;
}

const index: { cases: { file: string; values: number }[] } = JSON.parse(
  readFileSync(join(GOLDEN_ALL_DIR, 'index.json'), 'utf8'),
);
const files = readdirSync(GOLDEN_ALL_DIR)
  .filter((f) => f.endsWith('.json') && f !== 'index.json')
  .sort();

function load(file: string) {
  const golden: Golden = JSON.parse(readFileSync(join(GOLDEN_ALL_DIR, file), 'utf8'));
  const dir = join(GOLDEN_DIR, golden.case);
  const qrels = parseQrels(readFileSync(join(dir, 'qrels.txt'), 'utf8'), 'qrels.txt');
  const run = parseRun(readFileSync(join(dir, 'run.txt'), 'utf8'), 'run.txt');
  // trec_eval 10.0: double scores; a qrels query missing from the run is an error without -c.
  const opts: EvalOptions = { missingQueries: 'error' };
  const specs: string[] = [];
  const args = golden.trec_eval_args;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-q') continue;
    else if (args[i] === '-c') opts.complete = true;
    else if (args[i] === '-l') opts.relevanceLevel = Number(args[++i]);
    else if (args[i] === '-M') opts.maxDocs = Number(args[++i]);
    else if (args[i] === '-m') specs.push(args[++i]);
    else throw new Error(`unhandled trec_eval argument ${args[i]}`);
  }
  const measures = specs
    .flatMap((s) => (s in TREC_EVAL_SETS ? TREC_EVAL_SETS[s] : [s]))
    .flatMap(expandMeasureSpec);
  return { golden, qrels, run, opts, measures, dir };
}

/** Distance in units in the last place between two positive doubles. */
function ulps(a: number, b: number): number {
  const view = new DataView(new ArrayBuffer(16));
  view.setFloat64(0, a);
  view.setFloat64(8, b);
  return Number(view.getBigInt64(0) - view.getBigInt64(8));
}

const GEOMETRIC = ['gm_map', 'gm_bpref'];

describe('trec_eval 10.0 -m all_trec golden vectors (../shared/golden/metrics-all)', () => {
  it('has the 13 cases and 15,049 values the README describes, each file listed in index.json', () => {
    expect(files).toHaveLength(13);
    expect(index.cases.map((c) => c.file).sort()).toEqual(files);
    expect(index.cases.reduce((s, c) => s + c.values, 0)).toBe(15049);
  });

  it('allTrecMeasures() is exactly the 98 names trec_eval prints for all_trec (relstring and runid aside)', () => {
    const names = allTrecMeasures();
    expect(names).toHaveLength(98);
    for (const f of files) expect([...names].sort(), f).toEqual([...load(f).golden.measures].sort());
    // the new families parse and have labels
    expect(parseMeasure('Rprec_mult_1.20')).toEqual({
      name: 'Rprec_mult_1.20',
      family: 'Rprec_mult',
      mult: 1.2,
    });
    expect(parseMeasure('unj_20')).toEqual({ name: 'unj_20', family: 'unj', k: 20 });
    expect(measureLabel('relative_P_10')).toBe('Relative P@10');
    expect(measureLabel('Rprec_mult_2.00')).toBe('P@2.00R');
    expect(expandMeasureSpec('Rprec_mult.0.5,2')).toEqual(['Rprec_mult_0.50', 'Rprec_mult_2.00']);
    expect(expandMeasureSpec('unj')).toEqual(['unj_5', 'unj_10', 'unj_20']);
    expect(() => parseMeasure('Rprec_mult_x')).toThrow(/unknown measure 'Rprec_mult_x'/);
  });

  let counted = 0;
  for (const file of files) {
    it(`${file}: every per-query and 'all' value, bit for bit (gm_* within 1 ulp)`, () => {
      const { golden, qrels, run, opts, measures } = load(file);
      const result = evaluate(qrels, run, measures, opts);
      expect(result.evaluatedQueries.sort()).toEqual(Object.keys(golden.per_query_full).sort());
      const check = (got: number | undefined, want: number, where: string) => {
        counted++;
        if (got === want) return;
        expect.fail(`${file} ${where}: got ${got}, trec_eval ${want}`);
      };
      for (const [q, values] of Object.entries(golden.per_query_full)) {
        const mine = result.perQuery.get(q)!;
        // gm_map and gm_bpref have no per-query line, as in trec_eval.
        expect(Object.keys(mine).sort(), `${file} ${q}`).toEqual(Object.keys(values).sort());
        for (const [m, v] of Object.entries(values)) check(mine[m], v, `${q} ${m}`);
        for (const [m, v] of Object.entries(golden.per_query[q]))
          expect(Number(formatFixed(mine[m], 4)), `${q} ${m} printed`).toBe(v);
      }
      expect(Object.keys(result.all).sort()).toEqual(Object.keys(golden.all_full).sort());
      for (const [m, v] of Object.entries(golden.all_full)) {
        if (GEOMETRIC.includes(m)) {
          // exp() of the mean log: V8's Math.exp and glibc's exp may round apart by one ulp.
          counted++;
          expect(
            Math.abs(ulps(result.all[m], v)),
            `${file} all ${m}: ${result.all[m]} vs ${v}`,
          ).toBeLessThanOrEqual(1);
        } else check(result.all[m], v, `all ${m}`);
      }
      for (const [m, v] of Object.entries(golden.all))
        expect(Number(formatFixed(result.all[m], 4)), `all ${m} printed`).toBe(v);
    });
  }

  it('compared all 15,049 values', () => {
    // runs after the cases above (vitest runs a file's tests in order)
    expect(counted).toBe(15049);
  });

  it('gm_map and gm_bpref are summary-only measures', () => {
    expect(SUMMARY_ONLY_MEASURES).toEqual(expect.arrayContaining(GEOMETRIC));
  });
});

describe('-M 0: an empty ranking, as trec_eval 10.0 computes it', () => {
  // q1: R = 3 (grades 1, 2, 1); q2: R = 0 (only grade 0); q3 (with -c) missing from the run.
  const qrels = parseQrels('q1 0 a 1\nq1 0 b 2\nq1 0 c 1\nq1 0 d 0\nq2 0 e 0\nq3 0 f 1\n');
  const run = parseRun('q1 Q0 a 1 3 r\nq1 Q0 x 2 2 r\nq1 Q0 b 3 1 r\nq2 Q0 e 1 1 r\n');
  const measures = allTrecMeasures();

  it('gives NaN (0/0) exactly where m_iprec_at_recall.c and m_11pt_avg.c divide 0 retrieved by 0', () => {
    const r = evaluate(qrels, run, measures, { maxDocs: 0, complete: true });
    const q1 = r.perQuery.get('q1')!;
    const q2 = r.perQuery.get('q2')!;
    // The level's cutoff lround(level * R) must be <= 0 relevant retrieved for trec_eval to store 0/0:
    // with R = 3 only recall 0.00 and 0.10 (lround(0.3) = 0); with R = 0 every level.
    const nanOf = (v: Record<string, number>) => Object.keys(v).filter((m) => Number.isNaN(v[m]));
    expect(nanOf(q1)).toEqual(['iprec_at_recall_0.00', 'iprec_at_recall_0.10', '11pt_avg']);
    expect(nanOf(q2)).toEqual([...expandMeasureSpec('iprec_at_recall'), '11pt_avg']);
    // The -c stand-in ranking of a missing query is cut by -M 0 too; R = 1 there, so the levels up to
    // 0.40 have cutoff 0 (lround(0.5) = 1).
    expect(nanOf(r.perQuery.get('q3')!)).toEqual([
      ...['0.00', '0.10', '0.20', '0.30', '0.40'].map((l) => `iprec_at_recall_${l}`),
      '11pt_avg',
    ]);
    expect(q1['iprec_at_recall_0.20']).toBe(0);
    // Everything else is a number: nothing retrieved scores 0.
    for (const m of measures)
      if (!m.startsWith('iprec') && m !== '11pt_avg' && m in q1) expect(q1[m], m).not.toBeNaN();
    expect(q1.num_ret).toBe(0);
    expect(q1.P_5).toBe(0);
    // The mean of a NaN is NaN, and trec_eval prints it "-nan".
    expect(r.all['iprec_at_recall_0.00']).toBeNaN();
    // q2's NaN at every level reaches every mean; without q2, 0.50 averages two zeros.
    expect(r.all['iprec_at_recall_0.50']).toBeNaN();
    const noQ2 = evaluate(new Map([...qrels].filter(([q]) => q !== 'q2')), run, measures, { maxDocs: 0 });
    expect(noQ2.all['iprec_at_recall_0.50']).toBe(0);
    expect(noQ2.all['iprec_at_recall_0.00']).toBeNaN();
    const text = formatTrecEval(r, { perQuery: true });
    expect(text).toContain('iprec_at_recall_0.00  \tq1\t  -nan\n');
    expect(text).toContain('11pt_avg              \tall\t  -nan\n');
    expect(text).toContain('iprec_at_recall_0.20  \tq1\t0.0000\n');
  });

  it('is an ordinary ranking without -M 0', () => {
    const r = evaluate(qrels, run, measures, { complete: true });
    for (const [q, v] of r.perQuery) for (const m of Object.keys(v)) expect(v[m], `${q} ${m}`).not.toBeNaN();
  });
});

describe('scripts/trec-eval.ts -m all_trec', () => {
  const root = resolve(import.meta.dirname, '../..');
  const cli = (args: string[]) =>
    execFileSync(
      process.execPath,
      [join(root, 'node_modules/tsx/dist/cli.mjs'), join(root, 'scripts/trec-eval.ts'), ...args],
      {
        encoding: 'utf8',
      },
    );

  it("prints trec_eval 10.0's 4-decimal values for every line of a case (-c)", () => {
    const { golden, dir } = load('missing_queries.c.json');
    const out = cli(['-q', '-c', '-m', 'all_trec', join(dir, 'qrels.txt'), join(dir, 'run.txt')]);
    const printed: Record<string, Record<string, string>> = {};
    const order: string[] = [];
    for (const line of out.trimEnd().split('\n')) {
      const [m, q, v] = line.split('\t');
      (printed[q] ??= {})[m.trimEnd()] = v;
      if (q === 'all') order.push(m.trimEnd());
    }
    // trec_eval's print order: its measure table order (measures.c), parameters ascending.
    expect(order.slice(0, 12)).toEqual([
      'num_q',
      'num_ret',
      'num_rel',
      'num_rel_ret',
      'map',
      'gm_map',
      'Rprec',
      'bpref',
      'recip_rank',
      'iprec_at_recall_0.00',
      'iprec_at_recall_0.10',
      'iprec_at_recall_0.20',
    ]);
    expect(order.slice(-6)).toEqual([
      'num_nonrel_judged_ret',
      'rbp',
      'rbp_resid',
      'unj_5',
      'unj_10',
      'unj_20',
    ]);
    expect(order.indexOf('gm_bpref')).toBe(order.indexOf('infAP') + 1);
    const { all, ...queries } = printed;
    const num = (o: Record<string, string>) =>
      Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Number(v)]));
    expect(num(all)).toEqual(golden.all);
    expect(Object.keys(queries).sort()).toEqual(Object.keys(golden.per_query).sort());
    for (const q of Object.keys(queries)) expect(num(queries[q]), q).toEqual(golden.per_query[q]);
  });

  it('accepts each new measure by name, and the set measure set', () => {
    const { dir } = load('graded_basic.default.json');
    const f = [join(dir, 'qrels.txt'), join(dir, 'run.txt')];
    const names = (args: string[]) =>
      cli([...args, ...f])
        .trimEnd()
        .split('\n')
        .map((l) => l.split('\t')[0].trimEnd());
    expect(names(['-m', 'rbp', '-m', 'unj.3', '-m', 'Rprec_mult.0.5', '-m', 'relative_P.7'])).toEqual([
      'Rprec_mult_0.50',
      'relative_P_7',
      'rbp',
      'unj_3',
    ]);
    expect(names(['-m', 'set'])).toEqual([
      'num_q',
      'num_ret',
      'num_rel',
      'num_rel_ret',
      'utility',
      'set_P',
      'set_relative_P',
      'set_recall',
      'set_map',
      'set_F',
    ]);
  });
});
