import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  applyExclusions,
  compareBytes,
  evaluate,
  expandMeasureSpec,
  measureLabel,
  mrrAtK,
  rankQuery,
  standardMeasures,
  type EvalOptions,
} from '../../src/lib/core/eval/metrics';
import {
  formatFixed,
  formatQrels,
  formatRun,
  formatTrecEval,
  parseBeirQrels,
  parseQrels,
  parseQrelsAuto,
  parseRun,
  TrecParseError,
} from '../../src/lib/core/eval/trec';
import type { Qrels, Run } from '../../src/lib/core/types';
import { GOLDEN_DIR } from '../paths';

interface IndexEntry {
  case: string;
  variant: string;
  file: string;
  reference_version: string;
  trec_eval_args: string[];
}
interface Golden {
  qrels_file: string;
  run_file: string;
  per_query: Record<string, Record<string, number>>;
  all: Record<string, number>;
  per_query_full: Record<string, Record<string, number>>;
  all_full: Record<string, number>;
}

const TOL = 1e-9;
const index: { cases: IndexEntry[] } = JSON.parse(readFileSync(join(GOLDEN_DIR, 'index.json'), 'utf8'));

/** Options and measures from a trec_eval argument list and the reference version. */
function optionsFor(entry: IndexEntry): { opts: EvalOptions; measures: string[]; perQuery: boolean } {
  const v9 = entry.reference_version.startsWith('9.');
  // trec_eval 9.x reads scores as float (README section 4.1) and skips qrels-only queries; 10.0 aborts on
  // them, so a 10.0 vector can never contain one ('error' asserts that).
  const opts: EvalOptions = { float32Ties: v9, missingQueries: v9 ? 'skip' : 'error' };
  const measures: string[] = [];
  let perQuery = false;
  const a = entry.trec_eval_args;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === '-q') perQuery = true;
    else if (a[i] === '-c') opts.complete = true;
    else if (a[i] === '-l') opts.relevanceLevel = Number(a[++i]);
    else if (a[i] === '-M') opts.maxDocs = Number(a[++i]);
    else if (a[i] === '-m') measures.push(...expandMeasureSpec(a[++i]));
    else throw new Error(`unhandled trec_eval argument ${a[i]} in ${entry.file}`);
  }
  return { opts, measures, perQuery };
}

function loadCase(entry: IndexEntry) {
  const golden: Golden = JSON.parse(readFileSync(join(GOLDEN_DIR, entry.file), 'utf8'));
  const dir = join(GOLDEN_DIR, entry.case);
  const qrels = parseQrels(readFileSync(join(dir, golden.qrels_file), 'utf8'), golden.qrels_file);
  const run = parseRun(readFileSync(join(dir, golden.run_file), 'utf8'), golden.run_file);
  return { golden, qrels, run, ...optionsFor(entry) };
}

function expectClose(actual: Record<string, number>, expected: Record<string, number>, where: string) {
  expect(Object.keys(actual).sort(), where).toEqual(Object.keys(expected).sort());
  for (const [m, v] of Object.entries(expected)) {
    const got = actual[m];
    if (!(Math.abs(got - v) <= TOL)) expect.fail(`${where} ${m}: got ${got}, expected ${v}`);
  }
}

describe('golden trec_eval vectors', () => {
  it('index lists every JSON file', () => {
    expect(index.cases.length).toBeGreaterThanOrEqual(15);
  });

  for (const entry of index.cases) {
    it(`${entry.file} (trec_eval ${entry.reference_version} ${entry.trec_eval_args
      .filter((x) => x !== '-q')
      .slice(0, 2)
      .join(' ')})`, () => {
      const { golden, qrels, run, opts, measures } = loadCase(entry);
      const result = evaluate(qrels, run, measures, opts);

      // (JSON.parse puts integer-like keys first, so the file's key order is not usable: sort bytewise.)
      const expectedQueries = Object.keys(golden.per_query_full).sort(compareBytes);
      let evaluated = result.evaluatedQueries;
      // 9.x with -c averages over every qrels query but prints only the ones in the run.
      if (entry.reference_version.startsWith('9.') && opts.complete) {
        evaluated = evaluated.filter((q) => (run.get(q)?.length ?? 0) > 0);
      }
      expect(evaluated).toEqual(expectedQueries);

      for (const q of evaluated) {
        expectClose(result.perQuery.get(q)!, golden.per_query_full[q], `${entry.file} ${q}`);
        // The 4-decimal values are exactly what printf("%6.4f") gives for our value.
        for (const [m, v] of Object.entries(golden.per_query[q])) {
          expect(Number(formatFixed(result.perQuery.get(q)![m], 4)), `${q} ${m}`).toBe(v);
        }
      }
      expectClose(result.all, golden.all_full, `${entry.file} all`);
      for (const [m, v] of Object.entries(golden.all)) {
        expect(Number(formatFixed(result.all[m], 4)), `all ${m}`).toBe(v);
      }
    });
  }

  it('float32 tie mode is what separates 9.0.8 from 10.0', () => {
    const e10 = index.cases.find((c) => c.file === 'float32_scores/default.json')!;
    const { golden: g9 } = loadCase(index.cases.find((c) => c.file.endsWith('trec_eval-9.0.8.json'))!);
    const { qrels, run, measures } = loadCase(e10);
    const as10 = evaluate(qrels, run, measures, { float32Ties: false });
    const as9 = evaluate(qrels, run, measures, { float32Ties: true });
    expect(as10.all.ndcg_cut_3).not.toBeCloseTo(as9.all.ndcg_cut_3, 6);
    expect(Math.abs(as9.all.ndcg_cut_3 - g9.all_full.ndcg_cut_3)).toBeLessThanOrEqual(TOL);
  });

  it('trec_eval 10.0 behaviour for qrels queries missing from the run is available as an error', () => {
    const { qrels, run, measures } = loadCase(
      index.cases.find((c) => c.file === 'missing_queries/default.json')!,
    );
    expect(() => evaluate(qrels, run, measures, { missingQueries: 'error' })).toThrow(/'E'/);
    expect(evaluate(qrels, run, measures).evaluatedQueries).toEqual(['A', 'B', 'C', 'D']);
  });

  it('trec-eval output formatting reproduces the printed 4-decimal values', () => {
    for (const entry of index.cases) {
      const { golden, qrels, run, opts, measures, perQuery } = loadCase(entry);
      const text = formatTrecEval(evaluate(qrels, run, measures, opts), { perQuery });
      const printed: Record<string, Record<string, number>> = {};
      for (const line of text.trimEnd().split('\n')) {
        const [m, q, v] = line.split('\t');
        expect(m.length).toBeGreaterThanOrEqual(22);
        (printed[q] ??= {})[m.trimEnd()] = Number(v);
      }
      const { all, ...queries } = printed;
      expect(all).toEqual(golden.all);
      if (!(entry.reference_version.startsWith('9.') && opts.complete))
        expect(queries).toEqual(golden.per_query);
    }
  });
});

describe('README worked example', () => {
  const qrels = parseQrels('q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq1 0 d4 -1\n');
  const run = parseRun('q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq1 Q0 d4 3 3.0 r\nq1 Q0 d9 4 3.0 r\n');
  const m = [
    'P_3',
    'recall_3',
    'recip_rank',
    'map',
    'Rprec',
    'success_1',
    'success_5',
    'ndcg_cut_3',
    'num_rel',
  ];

  it('ranks d9, d4, d1, d2', () => {
    expect(rankQuery(run.get('q1')!).map((d) => d.docId)).toEqual(['d9', 'd4', 'd1', 'd2']);
  });

  it('gives the hand-computed values', () => {
    const v = evaluate(qrels, run, m).perQuery.get('q1')!;
    expect(v.num_rel).toBe(2);
    expect(v.P_3).toBe(1 / 3);
    expect(v.recall_3).toBe(1 / 2);
    expect(v.recip_rank).toBe(1 / 3);
    expect(v.map).toBe(1 / 3 / 2);
    expect(v.Rprec).toBe(0);
    expect(v.success_1).toBe(0);
    expect(v.success_5).toBe(1);
    const idcg3 = 2 / Math.log2(2) + 1 / Math.log2(3);
    expect(v.ndcg_cut_3).toBe(0.5 / idcg3);
    expect(v.ndcg_cut_3).toBeCloseTo(0.190047, 6);
    expect(formatFixed(v.ndcg_cut_3, 4)).toBe('0.1900');
  });

  it('ignores -l in ndcg_cut but not in the binary measures', () => {
    const v = evaluate(qrels, run, m, { relevanceLevel: 2 }).perQuery.get('q1')!;
    expect(v.num_rel).toBe(1);
    expect(v.recip_rank).toBe(0);
    expect(v.ndcg_cut_3).toBe(0.5 / (2 / Math.log2(2) + 1 / Math.log2(3)));
  });
});

describe('ordering', () => {
  /** Reference: C strcmp on UTF-8 bytes. */
  const byteCmp = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

  it('breaks ties by docno descending in UTF-8 byte order, not UTF-16 order', () => {
    // U+FF5E (EF BD 9E) is above a surrogate pair in UTF-16 (0xD83D...) but below U+1F600 (F0 9F 98 80) in UTF-8.
    const ids = ['a', 'z', 'é', '\uff5e', '😀', 'Z', 'é1'];
    const docs = ids.map((docId) => ({ docId, score: 1 }));
    expect(rankQuery(docs).map((d) => d.docId)).toEqual(['😀', '\uff5e', 'é1', 'é', 'z', 'a', 'Z']);
    expect('\uff5e' > '😀').toBe(true); // naive JS comparison gets it wrong
  });

  it('compareBytes agrees with a byte comparison on random strings', () => {
    const pool = [
      'a',
      'b',
      'Z',
      '0',
      '~',
      'é',
      'ß',
      '\u0800',
      '\ud7ff',
      '\ue000',
      '\uff5e',
      '\uffff',
      '😀',
      '𐀀',
      '\u{10ffff}',
    ];
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const str = () => Array.from({ length: rnd(4) }, () => pool[rnd(pool.length)]).join('');
    for (let i = 0; i < 5000; i++) {
      const a = str();
      const b = str();
      expect(Math.sign(compareBytes(a, b)), `${a} vs ${b}`).toBe(Math.sign(byteCmp(a, b)));
    }
  });

  it('ties numeric-looking ids as strings and treats 0 and -0 as equal', () => {
    const docs = ['10', '9', '500', '1', '007', '7'].map((docId) => ({ docId, score: 0 }));
    docs.push({ docId: 'neg', score: -0 });
    expect(rankQuery(docs).map((d) => d.docId)).toEqual(['neg', '9', '7', '500', '10', '1', '007']);
  });

  it('applies -M after sorting, and float32 ties on request', () => {
    const docs = [
      { docId: 'a', score: 1.00000005 },
      { docId: 'b', score: 1.00000004 },
      { docId: 'c', score: 0.5 },
    ];
    expect(rankQuery(docs, { maxDocs: 2 }).map((d) => d.docId)).toEqual(['a', 'b']);
    expect(rankQuery(docs, { float32Ties: true, maxDocs: 2 }).map((d) => d.docId)).toEqual(['b', 'a']);
  });
});

describe('trec.ts', () => {
  it('round-trips every golden run: formatRun → parseRun → evaluate gives identical values', () => {
    for (const entry of index.cases) {
      const { qrels, run, opts, measures } = loadCase(entry);
      const text = formatRun(run, 'loupe', { float32Ties: opts.float32Ties });
      const back = parseRun(text);
      expect(evaluate(qrels, back, measures, opts)).toEqual(evaluate(qrels, run, measures, opts));
      expect(parseQrels(formatQrels(qrels))).toEqual(qrels);
    }
  });

  it('writes ranks 1..n in trec_eval order with scores that round-trip exactly', () => {
    let seed = 3;
    const rnd = () => ((seed = (seed * 16807) % 2147483647), seed / 2147483647);
    const docs = Array.from({ length: 300 }, (_, i) => ({
      docId: `d${i}`,
      // full-precision doubles, exact ties, values equal only in float32, tiny and huge magnitudes
      score:
        i % 5 === 0 ? 0.25 : i % 7 === 0 ? 1 + i * 1e-12 : (rnd() - 0.5) * 10 ** Math.floor(rnd() * 40 - 20),
    }));
    const run: Run = new Map([['q', docs]]);
    const lines = formatRun(run, 'r').trimEnd().split('\n');
    const ranked = rankQuery(docs);
    lines.forEach((l, i) => {
      const [q, q0, id, rank, score, tag] = l.split(' ');
      expect([q, q0, id, rank, tag]).toEqual(['q', 'Q0', ranked[i].docId, String(i + 1), 'r']);
      expect(parseFloat(score)).toBe(ranked[i].score);
    });
    const back = parseRun(lines.join('\n'));
    expect(rankQuery(back.get('q')!)).toEqual(ranked);
    // float32 mode writes float32 values, so double and float readers rebuild the same ranking.
    const back32 = parseRun(formatRun(run, 'r', { float32Ties: true })).get('q')!;
    expect(rankQuery(back32).map((d) => d.docId)).toEqual(
      rankQuery(docs, { float32Ties: true }).map((d) => d.docId),
    );
    expect(rankQuery(back32, { float32Ties: true })).toEqual(rankQuery(back32));
  });

  it('skips comments and blank lines, ignores rank and extra columns, reads rel like atol', () => {
    const run = parseRun('# header\n\nq1 Q0 a 9 1.5 t extra\r\n  \nq1 Q0 b 1 -2.5E+1 t\n');
    expect(run.get('q1')).toEqual([
      { docId: 'a', score: 1.5 },
      { docId: 'b', score: -25 },
    ]);
    const qrels = parseQrels('q1 0 a 2.7\r\nq1\t0\tb\t-1\nq1 0 c +3\n');
    expect(qrels.get('q1')).toEqual(
      new Map([
        ['a', 2],
        ['b', -1],
        ['c', 3],
      ]),
    );
  });

  const errorOf = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return e as TrecParseError;
    }
    throw new Error('no error');
  };

  it('rejects duplicates and malformed lines with file and line', () => {
    let e = errorOf(() => parseRun('q1 Q0 a 1 1 t\nq2 Q0 a 1 1 t\n\nq1 Q0 a 2 0.5 t\n', 'my.run'));
    expect(e).toBeInstanceOf(TrecParseError);
    expect([e.file, e.line]).toEqual(['my.run', 4]);
    expect(e.message).toMatch(/^my\.run:4: duplicate doc 'a' in query 'q1' \(first at line 1\)/);

    e = errorOf(() => parseQrels('q1 0 a 1\nq1 0 b 0\nq1 0 a 0\n', 'q.txt'));
    expect([e.file, e.line]).toEqual(['q.txt', 3]);
    expect(e.message).toMatch(/duplicate judgment.*first at line 1/);

    e = errorOf(() => parseQrels('q1 0 a 1\nq1 a 1\n', 'q.txt'));
    expect([e.line, e.message]).toEqual([2, 'q.txt:2: expected 4 fields (qid iter docno rel), found 3']);
    e = errorOf(() => parseQrels('q1 0 a x\n', 'q.txt'));
    expect(e.line).toBe(1);
    e = errorOf(() => parseRun('q1 Q0 a 1 1 t\nq1 Q0 b 2 t\n', 'r'));
    expect(e.line).toBe(2);
    e = errorOf(() => parseRun('q1 Q0 a 1 high t\n', 'r'));
    expect(e.message).toBe("r:1: score 'high' is not a number");
  });

  it('reads BEIR qrels TSV and detects the format', () => {
    const tsv = 'query-id\tcorpus-id\tscore\nq1\tdoc 1\t2\nq1\td2\t0\r\n\nq2\td2\t1\n';
    const q = parseQrelsAuto(tsv, 'test.tsv');
    expect(q).toEqual(parseBeirQrels(tsv));
    expect(q.get('q1')).toEqual(
      new Map([
        ['doc 1', 2],
        ['d2', 0],
      ]),
    );
    expect(parseQrelsAuto('q1 0 d1 1\n')).toEqual(new Map([['q1', new Map([['d1', 1]])]]));
    expect(
      errorOf(() => parseQrelsAuto('query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t0\n', 't.tsv')).line,
    ).toBe(3);
  });

  it('formatFixed rounds like printf, half to even on the exact binary value', () => {
    expect(formatFixed(0.03125, 4)).toBe('0.0312');
    expect(formatFixed(0.09375, 4)).toBe('0.0938');
    expect(formatFixed(0.00005, 4)).toBe('0.0001'); // 0.00005 is slightly above the half in binary
    expect(formatFixed(1, 4)).toBe('1.0000');
    expect(formatFixed(2 / 3, 4)).toBe('0.6667');
    expect(formatFixed(0, 4)).toBe('0.0000');
    expect(formatFixed(1e21, 1)).toBe('1000000000000000000000.0');
  });
});

describe('helpers', () => {
  const qrels: Qrels = new Map([
    ['q1', new Map([['c', 1]])],
    ['q2', new Map([['x', 1]])],
  ]);
  const run: Run = new Map([
    [
      'q1',
      [
        { docId: 'a', score: 3 },
        { docId: 'b', score: 2 },
        { docId: 'c', score: 2 },
      ],
    ],
    ['q2', [{ docId: 'y', score: 1 }]],
  ]);

  it('MRR@k only looks at the top k of the trec_eval ranking', () => {
    // ranking of q1: a, c (tie with b, "c" > "b"), b
    expect(mrrAtK(qrels, run, 1).perQuery.get('q1')).toBe(0);
    expect(mrrAtK(qrels, run, 2).perQuery.get('q1')).toBe(1 / 2);
    expect(mrrAtK(qrels, run, 2).mean).toBe(1 / 4);
    expect(evaluate(qrels, run, ['recip_rank']).all.recip_rank).toBe(1 / 4);
  });

  it('MRR@10 equals recip_rank of the golden -M 10 vector', () => {
    const entry = index.cases.find((c) => c.file === 'realistic/M10.json')!;
    const { golden, qrels: q, run: r } = loadCase(entry);
    expect(Math.abs(mrrAtK(q, r, 10).mean - golden.all_full.recip_rank)).toBeLessThanOrEqual(TOL);
  });

  it('applyExclusions removes excluded docs before ranking', () => {
    const ex = applyExclusions(run, new Map([['q1', ['a']]]));
    expect(ex.get('q1')!.map((d) => d.docId)).toEqual(['b', 'c']);
    expect(run.get('q1')!.length).toBe(3);
    expect(mrrAtK(qrels, ex, 1).perQuery.get('q1')).toBe(1);
  });

  it('counts queries without relevant docs, ignores run-only queries, and -c scores missing ones 0', () => {
    const q: Qrels = new Map([
      ['a', new Map([['d1', 0]])],
      ['b', new Map([['d1', 1]])],
      ['c', new Map([['d2', 2]])],
    ]);
    const r: Run = new Map([
      ['a', [{ docId: 'd1', score: 1 }]],
      ['b', [{ docId: 'd1', score: 1 }]],
      ['zzz', [{ docId: 'd1', score: 1 }]],
    ]);
    const m = ['num_q', 'map', 'num_rel', 'ndcg_cut_10'];
    expect(evaluate(q, r, m).all).toEqual({ num_q: 2, num_rel: 1, map: 0.5, ndcg_cut_10: 0.5 });
    const c = evaluate(q, r, m, { complete: true, relevanceLevel: 2 });
    expect(c.evaluatedQueries).toEqual(['a', 'b', 'c']);
    // -c: num_rel total counts grades > 0 regardless of -l (m_num_rel.c)
    expect(c.all).toEqual({ num_q: 3, num_rel: 2, map: 0, ndcg_cut_10: 1 / 3 });
    expect(c.perQuery.get('c')).toEqual({ num_rel: 1, map: 0, ndcg_cut_10: 0 });
  });

  it('parses measure names and gives UI labels', () => {
    expect(expandMeasureSpec('ndcg_cut.10,3')).toEqual(['ndcg_cut_3', 'ndcg_cut_10']);
    expect(expandMeasureSpec('success')).toEqual(['success_1', 'success_5', 'success_10']);
    expect(() => expandMeasureSpec('P.5,5')).toThrow();
    expect(() => evaluate(qrels, run, ['relstring'])).toThrow(/unknown measure/);
    expect(evaluate(qrels, run, ['ndcg_cut_7', 'recall_1000']).all).toHaveProperty('recall_1000');
    const labels = [
      'ndcg_cut_10',
      'recip_rank',
      'recall_100',
      'P_5',
      'success_10',
      'map_cut_10',
      'Rprec',
      'map',
    ];
    expect(labels.map(measureLabel)).toEqual([
      'nDCG@10',
      'MRR',
      'Recall@100',
      'P@5',
      'Success@10',
      'MAP@10',
      'R-precision',
      'MAP',
    ]);
    const std = standardMeasures([10, 1]);
    expect(std).toEqual([
      'ndcg_cut_1',
      'ndcg_cut_10',
      'recall_1',
      'recall_10',
      'P_1',
      'P_10',
      'success_1',
      'success_10',
      'map',
      'map_cut_10',
      'recip_rank',
      'Rprec',
      'num_q',
      'num_ret',
      'num_rel',
      'num_rel_ret',
    ]);
    expect(Object.keys(evaluate(qrels, run, standardMeasures()).all)).toHaveLength(standardMeasures().length);
  });
});

describe('scripts/trec-eval.ts', () => {
  const root = resolve(import.meta.dirname, '../..');
  const cli = (args: string[]) =>
    execFileSync(
      process.execPath,
      [join(root, 'node_modules/tsx/dist/cli.mjs'), join(root, 'scripts/trec-eval.ts'), ...args],
      {
        encoding: 'utf8',
      },
    );

  it('prints trec_eval layout and values, and reads BEIR TSV qrels', () => {
    const entry = index.cases.find((c) => c.file === 'graded_basic/l2.json')!;
    const { golden, qrels } = loadCase(entry);
    const dir = join(GOLDEN_DIR, entry.case);
    const out = cli([...entry.trec_eval_args, join(dir, 'qrels.txt'), join(dir, 'run.txt')]);
    const lines = out.trimEnd().split('\n');
    expect(lines.at(-1)).toMatch(/^success_10 {12}\tall\t1\.0000$/);
    expect(lines).toContain(`num_q                 \tall\t${golden.all.num_q}`);
    for (const line of lines) {
      const [m, q, v] = line.split('\t');
      const expected = q === 'all' ? golden.all[m.trimEnd()] : golden.per_query[q][m.trimEnd()];
      expect(Number(v), line).toBe(expected);
    }

    const tmp = mkdtempSync(join(tmpdir(), 'trec-eval-'));
    try {
      const tsv = ['query-id\tcorpus-id\tscore'];
      for (const [q, judged] of qrels) for (const [d, g] of judged) tsv.push(`${q}\t${d}\t${g}`);
      writeFileSync(join(tmp, 'qrels.tsv'), tsv.join('\n') + '\n');
      expect(cli([...entry.trec_eval_args, join(tmp, 'qrels.tsv'), join(dir, 'run.txt')])).toBe(out);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
    // Two CLI runs (tsx start-up each): seconds on a shared, loaded machine.
  });
});
