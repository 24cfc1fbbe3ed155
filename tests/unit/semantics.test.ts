// The two trec_eval semantics (semantics.ts): trec_eval 10.0 -c and trec_eval 9.0.8 / pytrec_eval, against
// the golden vectors of both versions (../shared/golden/metrics), the reports and exports that name them,
// `npm run trec-eval --semantics`, and the runner's reading of a trec_eval binary's printed precision.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { evaluate, expandMeasureSpec, type EvalOptions } from '../../src/lib/core/eval/metrics';
import { buildTaskReport, reportCsv } from '../../src/lib/core/eval/report';
import {
  DEFAULT_SEMANTICS,
  parseSemantics,
  SEMANTICS,
  type Semantics,
} from '../../src/lib/core/eval/semantics';
import { formatTrecEval, parseQrels, parseRun } from '../../src/lib/core/eval/trec';
import { compareWithTrecEval, parseTrecEvalAll } from '../../scripts/lib/trec-eval-output';
import { GOLDEN_DIR } from '../paths';

interface Entry {
  case: string;
  variant: string;
  file: string;
  reference_version: string;
  trec_eval_args: string[];
}
interface Golden {
  'identical_in_trec_eval_9.0.8'?: boolean;
  per_query: Record<string, Record<string, number>>;
  all: Record<string, number>;
  per_query_full: Record<string, Record<string, number>>;
  all_full: Record<string, number>;
}

const TOL = 1e-9;
const index: { cases: Entry[] } = JSON.parse(readFileSync(join(GOLDEN_DIR, 'index.json'), 'utf8'));

function load(entry: Entry, semantics: Semantics) {
  const golden: Golden = JSON.parse(readFileSync(join(GOLDEN_DIR, entry.file), 'utf8'));
  const dir = join(GOLDEN_DIR, entry.case);
  const qrels = parseQrels(readFileSync(join(dir, 'qrels.txt'), 'utf8'), 'qrels.txt');
  const run = parseRun(readFileSync(join(dir, 'run.txt'), 'utf8'), 'run.txt');
  // The semantics decides -c and the score precision; -l and -M come from the vector's arguments.
  const opts: EvalOptions = { ...SEMANTICS[semantics].options };
  const measures: string[] = [];
  const a = entry.trec_eval_args;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === '-l') opts.relevanceLevel = Number(a[++i]);
    else if (a[i] === '-M') opts.maxDocs = Number(a[++i]);
    else if (a[i] === '-m') measures.push(...expandMeasureSpec(a[++i]));
  }
  return { golden, qrels, run, opts, measures, dir };
}

function expectMatches(entry: Entry, semantics: Semantics) {
  const { golden, qrels, run, opts, measures } = load(entry, semantics);
  const r = evaluate(qrels, run, measures, opts);
  expect(r.evaluatedQueries.slice().sort()).toEqual(Object.keys(golden.per_query_full).sort());
  for (const [q, values] of Object.entries(golden.per_query_full))
    for (const [m, v] of Object.entries(values))
      if (!(Math.abs(r.perQuery.get(q)![m] - v) <= TOL))
        expect.fail(`${entry.file} ${q} ${m}: ${r.perQuery.get(q)![m]} vs ${v}`);
  for (const [m, v] of Object.entries(golden.all_full))
    if (!(Math.abs(r.all[m] - v) <= TOL)) expect.fail(`${entry.file} all ${m}: ${r.all[m]} vs ${v}`);
}

/** Vectors trec_eval 9.0.8 produced, or that it gives identically; none with -c (9.0.8 mode never adds it). */
const nineCases = index.cases.filter((e) => {
  if (e.trec_eval_args.includes('-c')) return false;
  if (e.reference_version === '9.0.8') return true;
  const g: Golden = JSON.parse(readFileSync(join(GOLDEN_DIR, e.file), 'utf8'));
  return g['identical_in_trec_eval_9.0.8'] === true;
});

describe("'9.0.8' semantics (trec_eval 9.0.8 / pytrec_eval)", () => {
  it('covers both vectors made by trec_eval 9.0.8 itself', () => {
    expect(nineCases.map((e) => e.file)).toEqual(
      expect.arrayContaining(['missing_queries/default.json', 'float32_scores/default.trec_eval-9.0.8.json']),
    );
    expect(nineCases.length).toBeGreaterThanOrEqual(8);
  });

  for (const entry of nineCases)
    it(`${entry.file} (reference ${entry.reference_version})`, () => expectMatches(entry, '9.0.8'));
});

describe("'10.0-c' semantics (trec_eval 10.0 -c, the default)", () => {
  it('is the default, and matches the -c vector', () => {
    expect(DEFAULT_SEMANTICS).toBe('10.0-c');
    expectMatches(
      index.cases.find((e) => e.file === 'missing_queries/c.json')!,
      '10.0-c',
    );
  });

  it('differs from 9.0.8 exactly where a query is missing from the run, and where scores tie only in float32', () => {
    const missing = index.cases.find((e) => e.file === 'missing_queries/default.json')!;
    const { qrels, run, measures } = load(missing, '9.0.8');
    const v9 = evaluate(qrels, run, measures, SEMANTICS['9.0.8'].options);
    const v10 = evaluate(qrels, run, measures, SEMANTICS['10.0-c'].options);
    expect(v9.all.num_q).toBe(4);
    expect(v10.all.num_q).toBe(6);
    // E and F score 0 and count in the mean under -c: the mean shrinks by 4/6.
    expect(v10.all.map).toBeCloseTo((v9.all.map * 4) / 6, 12);
    const f32 = index.cases.find((e) => e.file === 'float32_scores/default.json')!;
    const f = load(f32, '10.0-c');
    expectMatches(f32, '10.0-c');
    expect(evaluate(f.qrels, f.run, f.measures, SEMANTICS['9.0.8'].options).all.ndcg_cut_3).not.toBeCloseTo(
      evaluate(f.qrels, f.run, f.measures, SEMANTICS['10.0-c'].options).all.ndcg_cut_3,
      6,
    );
  });

  it('parses command-line names with a clear error', () => {
    expect(parseSemantics('10.0-c')).toBe('10.0-c');
    expect(parseSemantics('9.0.8')).toBe('9.0.8');
    expect(parseSemantics('pytrec_eval')).toBe('9.0.8');
    expect(() => parseSemantics('11')).toThrow("unknown semantics '11': use 10.0-c");
  });
});

describe('reports and exports name the semantics', () => {
  const entry = index.cases.find((e) => e.file === 'missing_queries/default.json')!;
  const { qrels, run } = load(entry, '9.0.8');
  const queries = [...qrels.keys()].map((id) => ({ id, text: id, task: 't', meta: {} }));
  const report = (semantics?: Semantics) =>
    buildTaskReport({ taskId: 't', queries, docs: [], qrels, run, measures: ['map', 'gm_bpref'], semantics });

  it('buildTaskReport evaluates with the semantics it is given and records it', () => {
    expect(report().semantics).toBe('10.0-c');
    expect(report().queries).toBe(6);
    const r9 = report('9.0.8');
    expect(r9.semantics).toBe('9.0.8');
    expect(r9.queries).toBe(4);
    expect(r9.perQuery.has('E')).toBe(false);
    // gm_bpref has no per-query value (as in trec_eval), and bpref is not added to what was asked for.
    expect(r9.perQuery.get('A')).toEqual({ map: expect.any(Number) });
  });

  it('the CSV names the semantics in its last column, on every row', () => {
    for (const s of ['10.0-c', '9.0.8'] as const) {
      const rows = reportCsv(report(s)).trimEnd().split('\n');
      expect(rows[0].split(',').at(-1)).toBe('semantics');
      for (const row of rows.slice(1)) expect(row.split(',').at(-1)).toBe(SEMANTICS[s].label);
    }
    expect(reportCsv(report('9.0.8')).split('\n')[1]).toMatch(/^overall,t,4,/);
  });
});

describe('npm run trec-eval --semantics', () => {
  const root = resolve(import.meta.dirname, '../..');
  const cli = (args: string[]) =>
    spawnSync(
      process.execPath,
      [join(root, 'node_modules/tsx/dist/cli.mjs'), join(root, 'scripts/trec-eval.ts'), ...args],
      {
        encoding: 'utf8',
      },
    );

  it('9.0.8 prints what trec_eval 9.0.8 printed; 10.0-c what trec_eval 10.0 -c printed', () => {
    for (const [file, s] of [
      ['missing_queries/default.json', '9.0.8'],
      ['missing_queries/c.json', '10.0-c'],
    ] as const) {
      const entry = index.cases.find((e) => e.file === file)!;
      const { golden, dir } = load(entry, s);
      const m = entry.trec_eval_args.filter((a, i) => a === '-m' || entry.trec_eval_args[i - 1] === '-m');
      const r = cli(['--semantics', s, ...m, join(dir, 'qrels.txt'), join(dir, 'run.txt')]);
      expect(r.status, r.stderr).toBe(0);
      const all: Record<string, number> = {};
      for (const line of r.stdout.trimEnd().split('\n')) {
        const [name, q, v] = line.split('\t');
        if (q === 'all') all[name.trimEnd()] = Number(v);
      }
      expect(all, file).toEqual(golden.all);
    }
  });

  it('rejects an unknown semantics, and 9.0.8 together with -c', () => {
    const { dir } = load(index.cases[0], '10.0-c');
    const f = [join(dir, 'qrels.txt'), join(dir, 'run.txt')];
    const bad = cli(['--semantics', '8', ...f]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("trec-eval: unknown semantics '8'");
    const both = cli(['-c', '--semantics', '9.0.8', ...f]);
    expect(both.status).toBe(1);
    expect(both.stderr).toContain('cannot go with -c');
  });
});

describe("the runner's trec_eval cross-check reports the precision it compared at", () => {
  const ours = { ndcg_cut_10: 0.61314719276545123, recip_rank: 1 / 3 };

  it('4 decimals for stock trec_eval output, 17 for a build printing %.17g', () => {
    const stock = 'ndcg_cut_10           \tall\t0.6131\nrecip_rank            \tall\t0.3333\n';
    expect(parseTrecEvalAll(stock).get('ndcg_cut_10')).toEqual({ value: 0.6131, decimals: 4 });
    const c4 = compareWithTrecEval(stock, ours, ['ndcg_cut_10', 'recip_rank']);
    expect(c4.decimals).toBe(4);
    expect(c4.maxDiff).toBe(Math.abs(0.6131 - ours.ndcg_cut_10));
    expect(c4.note).toBe('trec_eval: max |diff| 4.7e-5 (compared at the 4 decimals it printed)');
    const wide = `ndcg_cut_10\tall\t${(0.61314719276545123).toPrecision(17)}\nrecip_rank\tall\t${(1 / 3).toPrecision(17)}\n`;
    const c17 = compareWithTrecEval(wide, ours, ['ndcg_cut_10', 'recip_rank']);
    expect(c17.decimals).toBe(17);
    expect(c17.maxDiff).toBe(0);
    expect(c17.note).toContain('(compared at the 17 decimals it printed)');
    // %.17g prints 1 as "1" and small values with an exponent
    expect(parseTrecEvalAll('P_5\tall\t1\nmap\tall\t1.5e-05\n').get('map')).toEqual({
      value: 1.5e-5,
      decimals: 6,
    });
    expect(compareWithTrecEval('P_5\tall\t1\n', { P_5: 1 }, ['P_5']).note).toBe(
      'trec_eval: max |diff| 0.0e+0 (compared exactly: it printed whole numbers)',
    );
    // per-query lines are not the 'all' values; a measure trec_eval did not print is an error
    expect(parseTrecEvalAll('P_5\tq1\t0.2000\n').size).toBe(0);
    expect(() => compareWithTrecEval(stock, ours, ['map'])).toThrow(
      "trec_eval printed no 'all' line for map",
    );
  });

  it('formatTrecEval output reads back at 4 decimals', () => {
    const r = evaluate(parseQrels('q 0 a 1\n'), parseRun('q Q0 a 1 1 r\n'), ['map', 'P_5']);
    const printed = parseTrecEvalAll(formatTrecEval(r));
    expect(printed.get('P_5')).toEqual({ value: 0.2, decimals: 4 });
  });
});
