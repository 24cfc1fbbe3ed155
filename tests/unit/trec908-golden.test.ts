// Loupe's trec_eval 9.0.8 mode (semantics '9.0.8', `npm run trec-eval -- --semantics 9.0.8`) against
// trec_eval 9.0.8 itself: ../shared/golden/metrics-908 (`-q -m all_trec` without -c, each case's -l / -M
// flags; 13 files, 14,079 values at 17 significant digits, and the binary's standard output).
// Every value must be equal (gm_map / gm_bpref within one ulp: exp of a mean of logs), and every printed
// line byte for byte, relstring and runid aside (Loupe prints no string measures).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  allTrecMeasures,
  evaluate,
  expandMeasureSpec,
  type EvalOptions,
} from '../../src/lib/core/eval/metrics';
import { recallCutoff } from '../../src/lib/core/eval/res-rels';
import { SEMANTICS } from '../../src/lib/core/eval/semantics';
import { parseQrels, parseRun } from '../../src/lib/core/eval/trec';
import { CliError, trecEvalCli } from '../../scripts/lib/trec-eval-cli';
import { GOLDEN_DIR } from '../paths';

const GOLDEN_908_DIR = resolve(process.env.LOUPE_GOLDEN_908_DIR ?? resolve(GOLDEN_DIR, '../metrics-908'));

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
interface IndexFile {
  case: string;
  variant: string;
  file: string;
  text: string;
  values: number;
}

const index: { reference: string; files: IndexFile[]; values: number } = JSON.parse(
  readFileSync(join(GOLDEN_908_DIR, 'index.json'), 'utf8'),
);

/** Distance in units in the last place between two doubles of the same sign. */
function ulps(a: number, b: number): number {
  const view = new DataView(new ArrayBuffer(16));
  view.setFloat64(0, a);
  view.setFloat64(8, b);
  return Number(view.getBigInt64(0) - view.getBigInt64(8));
}

/** The golden's trec_eval flags other than -q and -m (the variant: -l 2, -M 10). */
function flags(golden: Golden): string[] {
  const out: string[] = [];
  const a = golden.trec_eval_args;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === '-q') continue;
    else if (a[i] === '-m') i++;
    else if (a[i] === '-l' || a[i] === '-M') out.push(a[i], a[++i]);
    else throw new Error(`unhandled trec_eval argument ${a[i]}`);
  }
  return out;
}

function load(f: IndexFile) {
  const golden: Golden = JSON.parse(readFileSync(join(GOLDEN_908_DIR, f.file), 'utf8'));
  const dir = join(GOLDEN_DIR, golden.case);
  const qrelsPath = join(dir, 'qrels.txt');
  const runPath = join(dir, 'run.txt');
  const opts: EvalOptions = { ...SEMANTICS['9.0.8'].options };
  const fl = flags(golden);
  for (let i = 0; i < fl.length; i += 2) {
    if (fl[i] === '-l') opts.relevanceLevel = Number(fl[i + 1]);
    else opts.maxDocs = Number(fl[i + 1]);
  }
  return {
    golden,
    qrels: parseQrels(readFileSync(qrelsPath, 'utf8'), 'qrels.txt'),
    run: parseRun(readFileSync(runPath, 'utf8'), 'run.txt'),
    opts,
    flags: fl,
    qrelsPath,
    runPath,
    text: readFileSync(join(GOLDEN_908_DIR, f.text), 'utf8'),
  };
}

const GEOMETRIC = ['gm_map', 'gm_bpref'];
/** trec_eval's string measures: Loupe does not print them. */
const STRING_MEASURE = /^(relstring|runid) /;

describe('trec_eval 9.0.8 -m all_trec golden vectors (../shared/golden/metrics-908)', () => {
  it('has the 13 files and 14,079 values its README describes', () => {
    expect(index.reference).toBe('trec_eval 9.0.8');
    expect(index.files).toHaveLength(13);
    expect(index.files.reduce((s, f) => s + f.values, 0)).toBe(14079);
    expect(index.values).toBe(14079);
  });

  it("allTrecMeasures('9.0.8') is exactly the 93 names 9.0.8 prints (10.0's 98 without rbp, rbp_resid, unj_*)", () => {
    const names = allTrecMeasures('9.0.8');
    expect(names).toHaveLength(93);
    for (const f of index.files)
      expect([...names].sort(), f.file).toEqual([...load(f).golden.measures].sort());
    expect(allTrecMeasures('10.0').filter((m) => !names.includes(m))).toEqual([
      'rbp',
      'rbp_resid',
      'unj_5',
      'unj_10',
      'unj_20',
    ]);
  });

  let values = 0;
  let worstGeometric = 0;
  for (const f of index.files) {
    it(`${f.file}: every per-query and 'all' value exactly (gm_* within 1 ulp)`, () => {
      const { golden, qrels, run, opts } = load(f);
      const r = evaluate(qrels, run, allTrecMeasures('9.0.8'), opts);
      expect(r.evaluatedQueries).toEqual(Object.keys(golden.per_query_full).sort());
      const check = (got: number | undefined, want: number, where: string) => {
        values++;
        if (!Object.is(got, want)) expect.fail(`${f.file} ${where}: got ${got}, trec_eval 9.0.8 ${want}`);
      };
      for (const [q, want] of Object.entries(golden.per_query_full)) {
        const mine = r.perQuery.get(q)!;
        expect(Object.keys(mine).sort(), `${f.file} ${q}`).toEqual(Object.keys(want).sort());
        for (const [m, v] of Object.entries(want)) check(mine[m], v, `${q} ${m}`);
      }
      expect(Object.keys(r.all).sort()).toEqual(Object.keys(golden.all_full).sort());
      for (const [m, v] of Object.entries(golden.all_full)) {
        if (!GEOMETRIC.includes(m)) {
          check(r.all[m], v, `all ${m}`);
          continue;
        }
        values++;
        const d = Math.abs(ulps(r.all[m], v));
        worstGeometric = Math.max(worstGeometric, d);
        expect(d, `${f.file} all ${m}: ${r.all[m]} vs ${v}`).toBeLessThanOrEqual(1);
      }
    });
  }

  it('compared all 14,079 values', () => {
    // runs after the cases above (vitest runs a file's tests in order)
    expect(values).toBe(14079);
    expect(worstGeometric).toBeLessThanOrEqual(1);
  });

  let lines = 0;
  for (const f of index.files) {
    it(`${f.text}: every line npm run trec-eval -- --semantics 9.0.8 prints, byte for byte`, () => {
      const { golden, qrelsPath, runPath, text, flags: fl } = load(f);
      const args = ['--semantics', '9.0.8', '-q', ...fl, '-m', 'all_trec', qrelsPath, runPath];
      const got = trecEvalCli(args, (p) => readFileSync(p, 'utf8')).split('\n');
      const want = text.split('\n').filter((l) => !STRING_MEASURE.test(l));
      // relstring: one per query; runid: one 'all' line.
      expect(text.split('\n').length - want.length).toBe(Object.keys(golden.per_query).length + 1);
      expect(got.length, f.text).toBe(want.length);
      for (let i = 0; i < want.length; i++) {
        if (got[i] !== want[i]) expect.fail(`${f.text} line ${i + 1}: got '${got[i]}', 9.0.8 '${want[i]}'`);
        if (want[i]) lines++;
      }
      // The 4-decimal JSON values are those lines' numbers.
      const printed = got.filter((l) => l.includes('\tall\t'));
      expect(printed).toHaveLength(Object.keys(golden.all).length);
    });
  }

  it('compared every printed line (14,079 without relstring and runid: one per value)', () => {
    expect(lines).toBe(
      index.files.reduce((s, f) => {
        const t = readFileSync(join(GOLDEN_908_DIR, f.text), 'utf8');
        return s + t.split('\n').filter((l) => l && !STRING_MEASURE.test(l)).length;
      }, 0),
    );
    expect(lines).toBe(14079);
  });
});

describe("9.0.8's recall cutoff (long) (p·R + 0.9) against 10.0's lround(p·R)", () => {
  it('rounds any fraction above 0.1 up in 9.0.8, to nearest in 10.0', () => {
    // R = 12: 0.6·12 = 7.2 → 8 (9.0.8), 7 (10.0); 0.1·12 = 1.2 → 2, 1; 0.5·12 = 6 → 6, 6.
    expect([0.1, 0.5, 0.6].map((p) => recallCutoff(p, 12, '9.0.8'))).toEqual([2, 6, 8]);
    expect([0.1, 0.5, 0.6].map((p) => recallCutoff(p, 12, '10.0'))).toEqual([1, 6, 7]);
    // A fraction of at most 0.1 rounds down in 9.0.8: 0.3·3 = 0.9 (0.8999... in double) → 1; 0.1·1 → 1.
    expect(recallCutoff(0.3, 3, '9.0.8')).toBe(1);
    expect(recallCutoff(0.1, 1, '9.0.8')).toBe(1);
    expect(recallCutoff(0, 7, '9.0.8')).toBe(0);
  });

  it('is what SEMANTICS chooses: 9.0.8 mode truncates, the default rounds', () => {
    expect(SEMANTICS['9.0.8'].options.trecEvalVersion).toBe('9.0.8');
    expect(SEMANTICS['10.0-c'].options.trecEvalVersion).toBe('10.0');
  });
});

describe('-M 0 in the 9.0.8 mode: an empty ranking, as trec_eval 9.0.8 prints it', () => {
  // q1: R = 3 (grades 1, 2, 1); q2: R = 0 (only grade 0). Checked against a trec_eval 9.0.8 build: its
  // whole `-q -M 0 -m all_trec` output is what trecEvalCli prints, relstring and runid aside.
  const qrelsText = 'q1 0 a 1\nq1 0 b 2\nq1 0 c 1\nq1 0 d 0\nq2 0 e 0\n';
  const runText = 'q1 Q0 a 1 3 r\nq1 Q0 x 2 2 r\nq1 Q0 b 3 1 r\nq2 Q0 e 1 1 r\n';
  const files: Record<string, string> = { qrels: qrelsText, run: runText };
  const cli = (...args: string[]) => trecEvalCli([...args, 'qrels', 'run'], (p) => files[p]);

  it('divides 0 by 0 (printed -nan) only at the levels whose cutoff (long) (p·R + 0.9) is 0', () => {
    const out = cli('--semantics', '9.0.8', '-q', '-M', '0', '-m', 'all_trec');
    const nan = out
      .split('\n')
      .filter((l) => l.endsWith('\t  -nan'))
      .map((l) => l.split('\t').slice(0, 2).join(' ').replace(/ +/, ' '));
    const levels = expandMeasureSpec('iprec_at_recall');
    // R = 3: only recall 0.00 (0.1·3 + 0.9 = 1.2 → 1 relevant doc; 10.0's lround(0.3) = 0 gives -nan there).
    expect(nan.filter((l) => l.endsWith(' q1'))).toEqual(['iprec_at_recall_0.00 q1', '11pt_avg q1']);
    expect(out).toContain('iprec_at_recall_0.10  \tq1\t0.0000\n');
    // R = 0: every level, and so every mean.
    expect(nan.filter((l) => l.endsWith(' q2'))).toEqual([...levels.map((m) => `${m} q2`), '11pt_avg q2']);
    expect(nan.filter((l) => l.endsWith(' all'))).toEqual([...levels.map((m) => `${m} all`), '11pt_avg all']);
    // 10.0 (default flags, double scores) is -nan at 0.10 for q1.
    expect(cli('-q', '-M', '0', '-m', 'iprec_at_recall.0.1')).toContain(
      'iprec_at_recall_0.10  \tq1\t  -nan\n',
    );
  });

  it('rejects the measures 9.0.8 lacks, and -c', () => {
    expect(() => cli('--semantics', '9.0.8', '-m', 'rbp')).toThrow(CliError);
    expect(() => cli('--semantics', '9.0.8', '-m', 'unj.5')).toThrow(/9.0.8 has no measure unj_5/);
    expect(() => cli('--semantics', '9.0.8', '-c')).toThrow(/cannot go with -c/);
    expect(cli('-m', 'rbp')).toContain('rbp');
  });
});

describe('scripts/trec-eval.ts --semantics 9.0.8 as a process', () => {
  it('prints what trecEvalCli returns (realistic, -M 10)', () => {
    const root = resolve(import.meta.dirname, '../..');
    const f = index.files.find((x) => x.file === 'realistic.M-10.json')!;
    const { qrelsPath, runPath, text } = load(f);
    const out = execFileSync(
      process.execPath,
      [
        join(root, 'node_modules/tsx/dist/cli.mjs'),
        join(root, 'scripts/trec-eval.ts'),
        '--semantics',
        '9.0.8',
        '-q',
        '-M',
        '10',
        '-m',
        'all_trec',
        qrelsPath,
        runPath,
      ],
      { encoding: 'utf8' },
    );
    expect(out).toBe(
      text
        .split('\n')
        .filter((l) => !STRING_MEASURE.test(l))
        .join('\n'),
    );
  });
});
