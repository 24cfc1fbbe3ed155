// bpref, infAP, gm_map, ndcg, iprec_at_recall, set_P/recall/F and num_nonrel_judged_ret against trec_eval
// 10.0 (../shared/golden/metrics-extra), plus Judged@k (ir_measures' definition) on hand-checked fixtures.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  compareBytes,
  describeMeasures,
  evaluate,
  EXTRA_MEASURES,
  expandMeasureSpec,
  extraMeasures,
  geometricMeanAp,
  measureLabel,
  sortMeasures,
  standardMeasures,
  trecEvalName,
  type EvalOptions,
} from '../../src/lib/core/eval/metrics';
import { buildTaskReport, reportCsv } from '../../src/lib/core/eval/report';
import { formatFixed, formatTrecEval, parseQrels, parseRun } from '../../src/lib/core/eval/trec';
import { GOLDEN_DIR, GOLDEN_EXTRA_DIR } from '../paths';

interface Entry {
  case: string;
  variant: string;
  file: string;
  trec_eval_args: string[];
}
interface Golden {
  per_query: Record<string, Record<string, number>>;
  all: Record<string, number>;
  per_query_full: Record<string, Record<string, number>>;
  all_full: Record<string, number>;
}

const TOL = 1e-9;
const index: { cases: Entry[] } = JSON.parse(readFileSync(join(GOLDEN_EXTRA_DIR, 'index.json'), 'utf8'));

function optionsFor(args: readonly string[]) {
  // Every extra vector is trec_eval 10.0: double scores, and a qrels query missing from the run is an error.
  const opts: EvalOptions = { missingQueries: 'error' };
  const measures: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-q') continue;
    else if (args[i] === '-c') opts.complete = true;
    else if (args[i] === '-l') opts.relevanceLevel = Number(args[++i]);
    else if (args[i] === '-M') opts.maxDocs = Number(args[++i]);
    else if (args[i] === '-m') measures.push(...expandMeasureSpec(args[++i]));
    else throw new Error(`unhandled trec_eval argument ${args[i]}`);
  }
  return { opts, measures };
}

function loadCase(entry: Entry) {
  const golden: Golden = JSON.parse(readFileSync(join(GOLDEN_EXTRA_DIR, entry.file), 'utf8'));
  const dir = join(GOLDEN_DIR, entry.case);
  const qrels = parseQrels(readFileSync(join(dir, 'qrels.txt'), 'utf8'), 'qrels.txt');
  const run = parseRun(readFileSync(join(dir, 'run.txt'), 'utf8'), 'run.txt');
  return { golden, qrels, run, dir, ...optionsFor(entry.trec_eval_args) };
}

function expectClose(actual: Record<string, number>, expected: Record<string, number>, where: string) {
  expect(Object.keys(actual).sort(), where).toEqual(Object.keys(expected).sort());
  for (const [m, v] of Object.entries(expected)) {
    if (!(Math.abs(actual[m] - v) <= TOL)) expect.fail(`${where} ${m}: got ${actual[m]}, expected ${v}`);
  }
}

describe('extra golden trec_eval 10.0 vectors', () => {
  it('index lists the 13 trec_eval 10.0 cases of golden/metrics', () => {
    expect(index.cases).toHaveLength(13);
    expect(index.cases.map((c) => c.file)).toContain('missing_queries.c.json');
  });

  for (const entry of index.cases) {
    it(`${entry.file} (${entry.trec_eval_args.filter((a) => /^-[clM]$/.test(a)).join(' ') || 'no flag'})`, () => {
      const { golden, qrels, run, opts, measures } = loadCase(entry);
      const result = evaluate(qrels, run, measures, opts);
      expect(result.evaluatedQueries).toEqual(Object.keys(golden.per_query_full).sort(compareBytes));
      for (const q of result.evaluatedQueries) {
        const values = result.perQuery.get(q)!;
        expectClose(values, golden.per_query_full[q], `${entry.file} ${q}`);
        for (const [m, v] of Object.entries(golden.per_query[q]))
          expect(Number(formatFixed(values[m], 4)), `${q} ${m}`).toBe(v);
      }
      expectClose(result.all, golden.all_full, `${entry.file} all`);
      for (const [m, v] of Object.entries(golden.all))
        expect(Number(formatFixed(result.all[m], 4)), `all ${m}`).toBe(v);
    });
  }

  it('formatTrecEval prints exactly the reference lines of every case', () => {
    for (const entry of index.cases) {
      const { golden, qrels, run, opts, measures } = loadCase(entry);
      const text = formatTrecEval(evaluate(qrels, run, measures, opts), { perQuery: true });
      const printed: Record<string, Record<string, number>> = {};
      for (const line of text.trimEnd().split('\n')) {
        const [m, q, v] = line.split('\t');
        (printed[q] ??= {})[m.trimEnd()] = Number(v);
      }
      const { all, ...queries } = printed;
      expect(all, entry.file).toEqual(golden.all);
      expect(queries, entry.file).toEqual(golden.per_query);
    }
  });
});

describe('scripts/trec-eval.ts with the extra measures', () => {
  const root = resolve(import.meta.dirname, '../..');
  const cli = (args: string[]) =>
    execFileSync(
      process.execPath,
      [join(root, 'node_modules/tsx/dist/cli.mjs'), join(root, 'scripts/trec-eval.ts'), ...args],
      {
        encoding: 'utf8',
      },
    );

  for (const file of ['judgments_edge.default.json', 'missing_queries.c.json']) {
    it(`prints trec_eval's names, order and values for ${file}`, () => {
      const entry = index.cases.find((c) => c.file === file)!;
      const { golden, dir } = loadCase(entry);
      const lines = cli([...entry.trec_eval_args, join(dir, 'qrels.txt'), join(dir, 'run.txt')])
        .trimEnd()
        .split('\n');
      // trec_eval 10.0 prints per query, in qid order, measures in its table order, then the 'all' lines.
      const expected: string[] = [];
      const order = sortMeasures(Object.keys(golden.all));
      const qids = Object.keys(golden.per_query).sort(compareBytes);
      const fmt = (m: string, q: string, v: number) =>
        `${m.padEnd(22)}\t${q}\t${m.startsWith('num_') ? String(v) : formatFixed(v, 4).padStart(6)}`;
      for (const q of qids)
        for (const m of order) if (m in golden.per_query[q]) expected.push(fmt(m, q, golden.per_query[q][m]));
      for (const m of order) expected.push(fmt(m, 'all', golden.all[m]));
      expect(lines).toEqual(expected);
      expect(lines).toContain('gm_map                \tall\t' + formatFixed(golden.all.gm_map, 4));
      expect(lines.some((l) => l.startsWith('iprec_at_recall_0.10  \t'))).toBe(true);
    });
  }

  it('accepts trec_eval parameters for iprec_at_recall and set_F, and the official set', () => {
    const entry = index.cases.find((c) => c.file === 'graded_basic.default.json')!;
    const { qrels, run, dir } = loadCase(entry);
    const files = [join(dir, 'qrels.txt'), join(dir, 'run.txt')];
    const out = cli(['-m', 'iprec_at_recall.0.5,0.25', '-m', 'set_F.0.5', ...files]);
    const r = evaluate(qrels, run, ['iprec_at_recall_0.25', 'iprec_at_recall_0.50', 'set_F_0.5']);
    expect(out).toBe(formatTrecEval(r));
    expect(out.split('\n')[0]).toMatch(/^iprec_at_recall_0\.25 {2}\tall\t/);
    expect(out).toMatch(/^set_F_0\.5 {13}\tall\t/m);
    // trec_eval's official set (without runid): counters, map, gm_map, Rprec, bpref, recip_rank, iprec, P.
    const official = cli(files)
      .trimEnd()
      .split('\n')
      .map((l) => l.split('\t')[0].trimEnd());
    expect(official.slice(0, 9)).toEqual([
      'num_q',
      'num_ret',
      'num_rel',
      'num_rel_ret',
      'map',
      'gm_map',
      'Rprec',
      'bpref',
      'recip_rank',
    ]);
    expect(official).toContain('iprec_at_recall_1.00');
    expect(official.at(-1)).toBe('P_1000');
  });
});

describe('Judged@k (ir_measures)', () => {
  // q1 ranking: d1 (grade 2), x1 (not in qrels), d2 (0), d3 (-1: pooled, unjudged), x2 (not in qrels).
  const qrels = parseQrels('q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 -1\nq1 0 d4 1\nq2 0 e1 1\nq3 0 f1 1\n');
  const run = parseRun(
    'q1 Q0 d1 1 5 r\nq1 Q0 x1 2 4 r\nq1 Q0 d2 3 3 r\nq1 Q0 d3 4 2 r\nq1 Q0 x2 5 1 r\nq2 Q0 zz 1 1 r\nq9 Q0 e1 1 1 r\n',
  );

  it('is the share of the top k found in the qrels with any value (a -1 entry counts, an absent doc does not)', () => {
    const r = evaluate(qrels, run, ['Judged@1', 'Judged@2', 'Judged@4', 'Judged@5', 'Judged@10']);
    expect(r.perQuery.get('q1')).toEqual({
      'Judged@1': 1,
      'Judged@2': 1 / 2,
      'Judged@4': 3 / 4,
      'Judged@5': 3 / 5,
      // fewer docs than k: divided by the number ranked, as ir_measures does
      'Judged@10': 3 / 5,
    });
    expect(r.perQuery.get('q2')).toEqual({
      'Judged@1': 0,
      'Judged@2': 0,
      'Judged@4': 0,
      'Judged@5': 0,
      'Judged@10': 0,
    });
    // averaged over the evaluated queries (q1, q2; q9 has no qrels, q3 no run)
    expect(r.all['Judged@2']).toBe((1 / 2 + 0) / 2);
    expect(r.evaluatedQueries).toEqual(['q1', 'q2']);
  });

  it('follows the trec_eval ranking (ties by docno descending) and -M, and scores a missing query 0 with -c', () => {
    const tied = parseRun('q1 Q0 x1 1 1 r\nq1 Q0 d1 2 1 r\n');
    // "x1" > "d1": x1 is ranked first, so Judged@1 = 0
    expect(evaluate(qrels, tied, ['Judged@1']).all['Judged@1']).toBe(0);
    expect(evaluate(qrels, run, ['Judged@10'], { maxDocs: 2 }).perQuery.get('q1')!['Judged@10']).toBe(1 / 2);
    const c = evaluate(qrels, run, ['Judged@10'], { complete: true });
    expect(c.perQuery.get('q3')).toEqual({ 'Judged@10': 0 });
    expect(c.all['Judged@10']).toBe(3 / 5 / 3);
  });

  it('-1 qrels are unjudged for bpref and infAP but count for Judged', () => {
    // q1: relevant d1 (rank 1) and d4 (not retrieved), judged non-relevant d2 (rank 3), d3 pooled at rank 4.
    const r = evaluate(qrels, run, ['bpref', 'infAP', 'num_nonrel_judged_ret', 'Judged@4']).perQuery.get(
      'q1',
    )!;
    expect(r.bpref).toBe(1 / 2); // d1 above every judged non-relevant doc; d4 never retrieved
    expect(r.infAP).toBe(1 / 2);
    expect(r.num_nonrel_judged_ret).toBe(1);
    expect(r['Judged@4']).toBe(3 / 4);
  });
});

describe('measure names', () => {
  it('expands trec_eval specs and orders names as trec_eval prints them', () => {
    expect(expandMeasureSpec('iprec_at_recall')).toHaveLength(11);
    expect(expandMeasureSpec('iprec_at_recall.1,.5')).toEqual([
      'iprec_at_recall_0.50',
      'iprec_at_recall_1.00',
    ]);
    expect(expandMeasureSpec('set_F')).toEqual(['set_F']);
    expect(expandMeasureSpec('set_F.0.5')).toEqual(['set_F_0.5']);
    expect(() => expandMeasureSpec('ndcg.1=2')).toThrow(/no parameters/);
    expect(() => expandMeasureSpec('iprec_at_recall.2')).toThrow(/bad recall level/);
    expect(
      sortMeasures([
        'Judged@10',
        'set_F',
        'ndcg',
        'bpref',
        'map',
        'gm_map',
        'iprec_at_recall_0.10',
        'P_5',
        'infAP',
      ]),
    ).toEqual([
      'map',
      'gm_map',
      'bpref',
      'iprec_at_recall_0.10',
      'P_5',
      'infAP',
      'ndcg',
      'set_F',
      'Judged@10',
    ]);
  });

  it('gives a human label and a trec_eval name to every standard and extra measure', () => {
    for (const m of [...standardMeasures(), ...EXTRA_MEASURES]) {
      const label = measureLabel(m);
      expect(label, m).not.toBe('');
      if (!['bpref', 'infAP'].includes(m) && !m.startsWith('Judged@')) expect(label, m).not.toBe(m);
    }
    expect(
      [
        'Rprec',
        'success_10',
        'gm_map',
        'ndcg',
        'set_F',
        'set_F_0.5',
        'iprec_at_recall_0.50',
        'Judged@10',
      ].map(measureLabel),
    ).toEqual([
      'R-precision',
      'Success@10',
      'GMAP',
      'nDCG',
      'Set F1',
      'Set F(β=0.5)',
      'iPrec@recall 0.50',
      'Judged@10',
    ]);
    expect(trecEvalName('ndcg_cut_10')).toEqual({ name: 'ndcg_cut_10', flag: '-m ndcg_cut.10' });
    expect(trecEvalName('iprec_at_recall_0.50')).toEqual({
      name: 'iprec_at_recall_0.50',
      flag: '-m iprec_at_recall.0.5',
    });
    expect(trecEvalName('bpref')).toEqual({ name: 'bpref', flag: '-m bpref' });
    expect(trecEvalName('Judged@10')).toBeNull();
    expect(extraMeasures([5, 10]).slice(-2)).toEqual(['Judged@5', 'Judged@10']);
  });
});

describe('task report with the extra measures', () => {
  it('keeps gm_map out of per-query rows and takes its facet value as a geometric mean', () => {
    const entry = index.cases.find((c) => c.file === 'binary_basic.default.json')!;
    const { golden, qrels, run } = loadCase(entry);
    const ids = [...qrels.keys()];
    const queries = ids.map((id, i) => ({ id, text: id, task: 't', meta: { half: i < 3 ? 'a' : 'b' } }));
    const report = buildTaskReport({
      taskId: 't',
      queries,
      docs: [],
      qrels,
      run,
      measures: [...EXTRA_MEASURES],
    });
    expect(Math.abs(report.overall.gm_map - golden.all_full.gm_map)).toBeLessThanOrEqual(TOL);
    expect(Math.abs(report.overall.bpref - golden.all_full.bpref)).toBeLessThanOrEqual(TOL);
    for (const v of report.perQuery.values()) expect(v).not.toHaveProperty('gm_map');
    const half = report.facets.find((f) => f.key === 'half')!;
    const aps = evaluate(qrels, run, ['map']).perQuery;
    for (const [value, qs] of [
      ['a', ids.slice(0, 3)],
      ['b', ids.slice(3)],
    ] as const) {
      const means = half.values.find((v) => v.value === value)!.means;
      expect(means.gm_map).toBeCloseTo(geometricMeanAp(qs.map((q) => aps.get(q)!.map)), 12);
    }
    // the report computes AP for the facets' GMAP but does not add 'map' where it was not asked for
    expect(report.overall).not.toHaveProperty('map');
    expect(report.measures).toEqual([...EXTRA_MEASURES]);
    for (const v of report.perQuery.values()) expect(v).not.toHaveProperty('map');
  });
});

describe('exports', () => {
  it('the CSV has a column per extra measure, GMAP only on summary rows, and trec_eval names on request', () => {
    const entry = index.cases.find((c) => c.file === 'judgments_edge.default.json')!;
    const { golden, qrels, run } = loadCase(entry);
    const queries = [...qrels.keys()].map((id) => ({ id, text: id, task: 't', meta: {} }));
    const measures = ['ndcg_cut_10', ...EXTRA_MEASURES];
    const report = buildTaskReport({ taskId: 't', queries, docs: [], qrels, run, measures });
    const rows = reportCsv(report)
      .trimEnd()
      .split('\n')
      .map((r) => r.split(','));
    expect(rows[0].slice(0, 5)).toEqual(['scope', 'value', 'queries', 'nDCG@10', 'bpref']);
    expect(rows[0]).toContain('GMAP');
    expect(rows[0]).toContain('iPrec@recall 0.50');
    const col = (name: string) => 3 + measures.indexOf(name);
    expect(rows[1].slice(0, 3)).toEqual(['overall', 't', '5']);
    expect(Number(rows[1][col('infAP')])).toBe(report.overall.infAP);
    expect(Math.abs(Number(rows[1][col('infAP')]) - golden.all_full.infAP)).toBeLessThanOrEqual(TOL);
    const j2 = rows.find((r) => r[0] === 'query' && r[1] === 'j2')!;
    expect(j2[col('gm_map')]).toBe('');
    expect(Number(j2[col('bpref')])).toBe(golden.per_query_full.j2.bpref);
    expect(reportCsv(report, { header: 'name' }).split('\n')[0]).toBe(
      ['scope', 'value', 'queries', ...measures, 'semantics'].join(','),
    );
    expect(describeMeasures(['Rprec', 'Judged@10'])).toEqual([
      { name: 'Rprec', label: 'R-precision', trecEval: 'Rprec', flag: '-m Rprec' },
      { name: 'Judged@10', label: 'Judged@10', trecEval: null, flag: null },
    ]);
  });
});
