// Reading and writing TREC qrels / run files and trec_eval's printed output. Pure: no DOM, no Node APIs.
// File rules follow trec_eval 10.0 (get_qrels.c, get_trec_results.c); see
// ../shared/golden/metrics/README.md (beside the repo).
import { compareBytes, rankQuery, sortMeasures, type EvalResult, type RankOptions } from './metrics';
import type { Qrels, Run, ScoredDoc } from '../types';

/** A malformed line in a qrels or run file. `line` is 1-based. */
export class TrecParseError extends Error {
  readonly file: string;
  readonly line: number;
  constructor(file: string, line: number, message: string) {
    super(`${file}:${line}: ${message}`);
    this.name = 'TrecParseError';
    this.file = file;
    this.line = line;
  }
}

// C isspace() in the C locale: trec_eval splits on these bytes only (not on U+00A0 and friends).
const WS = /[ \t\n\v\f\r]+/;

function* lines(text: string): Generator<[number, string[]]> {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const all = text.split('\n');
  for (let i = 0; i < all.length; i++) {
    const fields = all[i].split(WS).filter((f) => f !== '');
    if (fields.length === 0 || fields[0].startsWith('#')) continue;
    yield [i + 1, fields];
  }
}

/**
 * C `atol`: optional sign and leading digits, the rest ignored (`2.0` → 2). Unlike atol, a field with no
 * leading integer is an error rather than a silent 0.
 */
function parseGrade(s: string, file: string, line: number): number {
  const m = /^[+-]?[0-9]+/.exec(s);
  if (!m) throw new TrecParseError(file, line, `relevance '${s}' is not an integer`);
  const v = Number(m[0]);
  return v === 0 ? 0 : v;
}

const DECIMAL = /^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/;
const INFINITY = /^([+-]?)inf(inity)?$/i;

/** A score as C `atof` reads it (= JS parseFloat for these forms); anything else is an error. */
function parseScore(s: string, file: string, line: number): number {
  if (DECIMAL.test(s)) return parseFloat(s);
  const inf = INFINITY.exec(s);
  if (inf) return inf[1] === '-' ? -Infinity : Infinity;
  throw new TrecParseError(file, line, `score '${s}' is not a number`);
}

function addJudgment(
  qrels: Qrels,
  lineOf: Map<string, number>,
  qid: string,
  doc: string,
  rel: number,
  file: string,
  line: number,
): void {
  let m = qrels.get(qid);
  if (!m) qrels.set(qid, (m = new Map()));
  if (m.has(doc)) {
    const first = lineOf.get(`${qid}\n${doc}`);
    throw new TrecParseError(
      file,
      line,
      `duplicate judgment for query '${qid}', doc '${doc}' (first at line ${first})`,
    );
  }
  m.set(doc, rel);
  lineOf.set(`${qid}\n${doc}`, line);
}

/**
 * Parses TREC qrels: `qid iter docno rel` per line, whitespace-separated, exactly 4 fields; `iter` is
 * ignored, `rel` is read like C atol. Blank and `#` lines are skipped. A (qid, docno) pair twice is an error.
 */
export function parseQrels(text: string, file = 'qrels'): Qrels {
  const qrels: Qrels = new Map();
  const lineOf = new Map<string, number>();
  for (const [line, f] of lines(text)) {
    if (f.length !== 4) {
      throw new TrecParseError(file, line, `expected 4 fields (qid iter docno rel), found ${f.length}`);
    }
    addJudgment(qrels, lineOf, f[0], f[2], parseGrade(f[3], file, line), file, line);
  }
  return qrels;
}

/** True when the text is a BEIR qrels TSV (first line is the `query-id corpus-id score` header). */
export function isBeirQrels(text: string): boolean {
  const first = text.replace(/^\uFEFF/, '').split('\n', 1)[0];
  const f = first.split(WS).filter((x) => x !== '');
  return f.length === 3 && f[0] === 'query-id' && f[1] === 'corpus-id' && f[2] === 'score';
}

/** Parses BEIR qrels TSV: header `query-id corpus-id score`, then `qid<TAB>docid<TAB>grade` rows. */
export function parseBeirQrels(text: string, file = 'qrels.tsv'): Qrels {
  if (!isBeirQrels(text)) throw new TrecParseError(file, 1, "expected the header 'query-id corpus-id score'");
  const qrels: Qrels = new Map();
  const lineOf = new Map<string, number>();
  const rows = text.replace(/^\uFEFF/, '').split('\n');
  for (let i = 1; i < rows.length; i++) {
    const row = rows[i].replace(/\r$/, '');
    if (row.trim() === '') continue;
    const f = row.split('\t');
    if (f.length !== 3 || f[0] === '' || f[1] === '') {
      throw new TrecParseError(
        file,
        i + 1,
        `expected 3 tab-separated fields (query-id corpus-id score), found ${f.length}`,
      );
    }
    addJudgment(qrels, lineOf, f[0], f[1], parseGrade(f[2].trim(), file, i + 1), file, i + 1);
  }
  return qrels;
}

/** Parses qrels in TREC format or BEIR TSV, detected from the header. */
export function parseQrelsAuto(text: string, file?: string): Qrels {
  return isBeirQrels(text) ? parseBeirQrels(text, file) : parseQrels(text, file);
}

/**
 * Parses a TREC run: `qid Q0 docno rank score tag` per line, at least 6 whitespace-separated fields
 * (more are ignored, as trec_eval does). `Q0`, `rank` and `tag` are ignored: the ranking is rebuilt from
 * the scores. Blank and `#` lines are skipped. A docno twice in one query is an error.
 */
export function parseRun(text: string, file = 'run'): Run {
  const run: Run = new Map();
  const seen = new Map<string, Map<string, number>>();
  for (const [line, f] of lines(text)) {
    if (f.length < 6) {
      throw new TrecParseError(
        file,
        line,
        `expected 6 fields (qid Q0 docno rank score tag), found ${f.length}`,
      );
    }
    const [qid, , docId, , score] = f;
    let docs = run.get(qid);
    let lineOf = seen.get(qid);
    if (!docs || !lineOf) {
      run.set(qid, (docs = []));
      seen.set(qid, (lineOf = new Map()));
    }
    const first = lineOf.get(docId);
    if (first !== undefined) {
      throw new TrecParseError(
        file,
        line,
        `duplicate doc '${docId}' in query '${qid}' (first at line ${first})`,
      );
    }
    lineOf.set(docId, line);
    docs.push({ docId, score: parseScore(score, file, line) });
  }
  return run;
}

function checkToken(kind: string, s: string): void {
  if (s === '' || /[ \t\n\v\f\r]/.test(s) || s.startsWith('#')) {
    throw new Error(`${kind} '${s}' cannot be written in a TREC file (empty, whitespace or leading '#')`);
  }
}

/**
 * Writes a run as TREC lines: queries in byte order, docs in trec_eval's ranking order with ranks 1..n.
 * Scores are the shortest JS repr, which parses back to the same double, so trec_eval rebuilds exactly
 * this ranking. With `float32Ties`, scores are written as their float32 values, so trec_eval 10.0 (double)
 * and 9.x / pytrec_eval (float) both rebuild it too.
 */
export function formatRun(run: Run, tag: string, opts: RankOptions = {}): string {
  checkToken('tag', tag);
  const out: string[] = [];
  for (const qid of [...run.keys()].sort(compareBytes)) {
    checkToken('query id', qid);
    const ranked = rankQuery(run.get(qid)!, opts);
    ranked.forEach((d: ScoredDoc, i) => {
      checkToken('doc id', d.docId);
      if (Number.isNaN(d.score)) throw new Error(`score of doc '${d.docId}' in query '${qid}' is NaN`);
      const s = opts.float32Ties ? Math.fround(d.score) : d.score;
      out.push(`${qid} Q0 ${d.docId} ${i + 1} ${s} ${tag}\n`);
    });
  }
  return out.join('');
}

/** Writes qrels as TREC lines `qid 0 docno rel`, queries then docs in byte order. */
export function formatQrels(qrels: Qrels): string {
  const out: string[] = [];
  for (const qid of [...qrels.keys()].sort(compareBytes)) {
    checkToken('query id', qid);
    const judged = qrels.get(qid)!;
    for (const doc of [...judged.keys()].sort(compareBytes)) {
      checkToken('doc id', doc);
      const rel = judged.get(doc)!;
      if (!Number.isInteger(rel))
        throw new Error(`grade ${rel} of doc '${doc}' in query '${qid}' is not an integer`);
      out.push(`${qid} 0 ${doc} ${rel}\n`);
    }
  }
  return out.join('');
}

/**
 * C printf `%.{decimals}f` of a double: the exact binary value rounded half-to-even (JS toFixed rounds
 * exact halves up, e.g. 0.03125 → "0.0313" where trec_eval prints "0.0312").
 */
export function formatFixed(value: number, decimals: number): string {
  if (Number.isNaN(value)) return 'nan';
  const neg = value < 0 || Object.is(value, -0);
  if (!Number.isFinite(value)) return neg ? '-inf' : 'inf';
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, Math.abs(value));
  const hi = view.getUint32(0);
  const expBits = (hi >>> 20) & 0x7ff;
  let mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(view.getUint32(4));
  let exp = -1074;
  if (expBits !== 0) {
    mant |= 1n << 52n;
    exp = expBits - 1075;
  }
  const scaled = mant * 10n ** BigInt(decimals);
  let q: bigint;
  if (exp >= 0) q = scaled << BigInt(exp);
  else {
    const den = 1n << BigInt(-exp);
    q = scaled / den;
    const twice = (scaled % den) * 2n;
    if (twice > den || (twice === den && (q & 1n) === 1n)) q += 1n;
  }
  let digits = q.toString().padStart(decimals + 1, '0');
  if (decimals > 0) digits = `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
  return (neg ? '-' : '') + digits;
}

const LONG_MEASURES = new Set(['num_q', 'num_ret', 'num_rel', 'num_rel_ret', 'num_nonrel_judged_ret']);

function trecEvalLine(measure: string, qid: string, value: number): string {
  // meas_print_single.c / meas_print_final.c: "%-22s\t%s\t%6.4f\n", counters as "%ld".
  // trec_eval's only NaNs are 0/0 (iprec_at_recall and 11pt_avg with -M 0): on x86-64 that is the
  // default NaN, sign bit set, which glibc prints as "-nan".
  const fixed = Number.isNaN(value) ? '-nan' : formatFixed(value, 4);
  const v = LONG_MEASURES.has(measure) ? String(Math.trunc(value)) : fixed.padStart(6);
  return `${measure.padEnd(22)}\t${qid}\t${v}\n`;
}

/**
 * trec_eval's printed output for an `evaluate` result: with `perQuery` (-q), every evaluated query's
 * measures first (num_q is not printed per query), then the `all` lines; measures in trec_eval's order.
 */
export function formatTrecEval(result: EvalResult, opts: { perQuery?: boolean } = {}): string {
  const measures = sortMeasures(Object.keys(result.all));
  const out: string[] = [];
  if (opts.perQuery) {
    for (const qid of result.evaluatedQueries) {
      const values = result.perQuery.get(qid)!;
      for (const m of measures) if (m in values) out.push(trecEvalLine(m, qid, values[m]));
    }
  }
  for (const m of measures) out.push(trecEvalLine(m, 'all', result.all[m]));
  return out.join('');
}
