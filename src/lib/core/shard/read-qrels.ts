// The judgements: qrels/<split>.tsv (BEIR's `query-id<TAB>corpus-id<TAB>score`, with its header) or
// R2MED's qrels.jsonl (`q_id`, `p_id`, `score`), each row checked against the queries and corpus read
// before; then the relevance rule (strict: every query has a relevant document; lenient: unjudged
// queries are dropped, as BEIR does).

import { EXAMPLES, describe, truncate } from './json-text';
import type { ShardReadContext } from './read-context';
import { checkId, idField, parseObject } from './read-records';

/** The header line of a BEIR qrels TSV. */
const QRELS_HEADER = 'query-id\tcorpus-id\tscore';

/** Rows the lenient formats keep but warn about, counted while one qrels file is read. */
interface QrelTally {
  unknownDocRows: number;
  unknownDocs: Set<string>;
  duplicateRows: number;
  duplicateExamples: string[];
}

/** An empty tally. */
function newTally(): QrelTally {
  return { unknownDocRows: 0, unknownDocs: new Set(), duplicateRows: 0, duplicateExamples: [] };
}

/** Reads a BEIR qrels TSV into ctx.qrels. */
export async function readTsvQrels(ctx: ShardReadContext, file: string): Promise<void> {
  const tally = newTally();
  let header = true;
  for await (const l of ctx.lines(file)) {
    const cols = l.text.split('\t');
    if (header) {
      header = false;
      if (l.text === QRELS_HEADER) continue;
      const looksLikeData = cols.length === 3 && /^-?\d+$/.test(cols[2]);
      if (ctx.strict) {
        ctx.issue({
          file,
          line: l.line,
          code: 'bad-header',
          message: `first line must be the header "query-id<TAB>corpus-id<TAB>score", found ${JSON.stringify(truncate(l.text, 80))}`,
        });
        // A missing header should not also cost the first judgement (and a "no relevant document" cascade).
        if (!looksLikeData) continue;
      } else {
        ctx.warnings.push({
          file,
          code: 'bad-header',
          message: `first line ${JSON.stringify(truncate(l.text, 80))} is not the BEIR header; skipped as a header, as BEIR's loader does`,
        });
        continue;
      }
    }
    if (cols.length !== 3) {
      ctx.issue({
        file,
        line: l.line,
        code: 'column-count',
        message: `expected 3 tab-separated columns (query-id, corpus-id, score), found ${cols.length}`,
      });
      continue;
    }
    const score = parseScore(ctx, file, l.line, cols[2]);
    addQrel(ctx, tally, file, l.line, cols[0], cols[1], score);
  }
  finishQrels(ctx, tally, file);
}

/** Reads R2MED's qrels.jsonl into ctx.qrels. */
export async function readJsonQrels(ctx: ShardReadContext, file: string): Promise<void> {
  const tally = newTally();
  for await (const l of ctx.lines(file)) {
    const o = parseObject(ctx, file, l);
    if (!o) continue;
    const q = idField(ctx, file, l.line, o, 'q_id');
    const d = idField(ctx, file, l.line, o, 'p_id');
    let score: number | null = null;
    if (o.score === undefined)
      ctx.issue({ file, line: l.line, code: 'missing-field', message: 'missing required field "score"' });
    else if (typeof o.score !== 'number' || !Number.isSafeInteger(o.score)) {
      ctx.issue({
        file,
        line: l.line,
        code: 'bad-score',
        message: `"score" must be an integer, found ${describe(o.score)}`,
      });
    } else score = o.score;
    if (q !== null && d !== null) addQrel(ctx, tally, file, l.line, q, d, score, true);
  }
  finishQrels(ctx, tally, file);
}

/** A TSV score: a (strict: non-negative) integer; null after an issue. */
function parseScore(ctx: ShardReadContext, file: string, line: number, s: string): number | null {
  // The spec asks for non-negative integers; upstream BEIR/TREC files may carry negative grades.
  const ok = (ctx.strict ? /^\d+$/ : /^-?\d+$/).test(s) && Number.isSafeInteger(Number(s));
  if (!ok) {
    ctx.issue({
      file,
      line,
      code: 'bad-score',
      message: `score ${JSON.stringify(truncate(s, 40))} must be a ${ctx.strict ? 'non-negative ' : ''}integer`,
    });
    return null;
  }
  return Number(s);
}

/** Adds one judgement, checked against the queries and corpus read before. */
function addQrel(
  ctx: ShardReadContext,
  tally: QrelTally,
  file: string,
  line: number,
  q: string,
  d: string,
  score: number | null,
  idsChecked = false,
): void {
  if (!idsChecked) {
    checkId(ctx, file, line, 'query-id', q);
    checkId(ctx, file, line, 'corpus-id', d);
  }
  const queries = ctx.format === 'r2med' ? 'query.jsonl' : 'queries.jsonl';
  let ok = score !== null;
  if (!ctx.queryLines.has(q)) {
    ctx.issue({
      file,
      line,
      code: 'unknown-query',
      message: `query ${JSON.stringify(q)} is not in ${queries}`,
    });
    ok = false;
  }
  if (!ctx.docLines.has(d)) {
    if (ctx.strict) {
      ctx.issue({
        file,
        line,
        code: 'unknown-document',
        message: `document ${JSON.stringify(d)} is not in corpus.jsonl`,
      });
      ok = false;
    } else {
      tally.unknownDocRows++;
      tally.unknownDocs.add(d);
    }
  }
  if (!ok) return;
  const key = `${q}\t${d}`;
  const first = ctx.qrelLines.get(key);
  if (first !== undefined) {
    if (ctx.strict) {
      ctx.issue({
        file,
        line,
        code: 'duplicate-qrel',
        message: `pair (${q}, ${d}) is judged twice (first on line ${first})`,
      });
      return;
    }
    tally.duplicateRows++;
    if (tally.duplicateExamples.length < EXAMPLES)
      tally.duplicateExamples.push(`${q} ${d} (lines ${first}, ${line})`);
  } else {
    ctx.qrelLines.set(key, line);
    ctx.qrelRows++;
  }
  let row = ctx.qrels.get(q);
  if (!row) ctx.qrels.set(q, (row = new Map()));
  row.set(d, score!);
}

/** The lenient formats' warnings: judgements of unknown documents, pairs judged twice. */
function finishQrels(ctx: ShardReadContext, tally: QrelTally, file: string): void {
  if (tally.unknownDocRows > 0) {
    ctx.warnings.push({
      file,
      code: 'qrels-unknown-document',
      message:
        `${tally.unknownDocRows} of ${ctx.qrelRows} judgement rows name ${tally.unknownDocs.size} document(s) missing from corpus.jsonl. ` +
        'They are kept in the qrels, so metrics match trec_eval run on the upstream qrels file; those documents can never be retrieved.',
      count: tally.unknownDocRows,
      examples: [...tally.unknownDocs].slice(0, EXAMPLES),
    });
  }
  if (tally.duplicateRows > 0) {
    ctx.warnings.push({
      file,
      code: 'duplicate-qrel',
      message: `${tally.duplicateRows} (query, document) pair(s) judged more than once; the last row wins, as in BEIR's loader`,
      count: tally.duplicateRows,
      examples: tally.duplicateExamples,
    });
  }
}

/** Spec rule (strict): every query has a relevant document. Lenient: drop unjudged queries like BEIR. */
export function checkRelevance(ctx: ShardReadContext, qrelsFile: string): void {
  if (ctx.strict) {
    // An empty corpus is reported as such (its judgements were dropped for naming no document).
    if (ctx.docLines.size === 0) return;
    if (ctx.qrelRows === 0 && ctx.queryLines.size > 0) {
      ctx.issue({ file: qrelsFile, code: 'empty-qrels', message: `${qrelsFile} has no judgements` });
      return;
    }
    for (const q of ctx.queries) {
      const row = ctx.qrels.get(q.id);
      if (!row || ![...row.values()].some((s) => s > 0)) {
        ctx.issue({
          file: 'queries.jsonl',
          line: ctx.queryLines.get(q.id),
          code: 'no-relevant',
          message: `query ${JSON.stringify(q.id)} has no relevant document in ${qrelsFile} (every query needs a row with score > 0)`,
        });
      }
    }
    return;
  }
  const kept = ctx.queries.filter((q) => ctx.qrels.has(q.id));
  const dropped = ctx.queries.length - kept.length;
  if (dropped > 0) {
    ctx.warnings.push({
      file: ctx.format === 'r2med' ? 'query.jsonl' : 'queries.jsonl',
      code: 'queries-without-qrels',
      message: `${dropped} of ${ctx.queries.length} queries have no row in ${qrelsFile} and were dropped, as BEIR does`,
      count: dropped,
      examples: ctx.queries
        .filter((q) => !ctx.qrels.has(q.id))
        .slice(0, EXAMPLES)
        .map((q) => q.id),
    });
    ctx.queries.splice(0, ctx.queries.length, ...kept);
    if (kept.length === 0 && ctx.queryLines.size > 0) {
      ctx.issue({
        file: qrelsFile,
        code: 'no-queries',
        message: `no query has a judgement in ${qrelsFile}`,
      });
    }
  }
}
