// Turns a run over one task into what the UI and the headless runner show: every measure overall,
// per query, and per metadata facet (field, organ, modality, question type…).
import { evaluate, geometricMeanAp, measureLabel, type EvalOptions } from './metrics';
import { DEFAULT_SEMANTICS, SEMANTICS, type Semantics } from './semantics';
import type { Doc, Qrels, Query, Run } from '../types';

/** FACET_MAX_VALUES: a metadata key with more distinct values than this is not a facet (ids, urls…). */
export const FACET_MAX_VALUES = 40;

export interface FacetValue {
  value: string;
  queries: number;
  means: Record<string, number>;
}

export interface Facet {
  key: string;
  /** Where the values come from: the query itself or the document of the query's image. */
  origin: 'query' | 'query-image';
  values: FacetValue[];
}

export interface TaskReport {
  taskId: string;
  /** Which trec_eval the numbers follow (semantics.ts); exports name it. */
  semantics: Semantics;
  measures: string[];
  queries: number;
  overall: Record<string, number>;
  perQuery: Map<string, Record<string, number>>;
  facets: Facet[];
}

/** The per-query measure whose geometric mean each summary-only measure is. */
const GEOMETRIC_BASE: Readonly<Record<string, string>> = { gm_map: 'map', gm_bpref: 'bpref' };

/** The qrels rows of the given queries (one shard-wide qrels file holds every task's rows). */
export function qrelsFor(qrels: Qrels, queryIds: Iterable<string>): Qrels {
  const out: Qrels = new Map();
  for (const id of queryIds) {
    const rows = qrels.get(id);
    if (rows) out.set(id, rows);
  }
  return out;
}

/**
 * Facet values of each query: its own string metadata, plus, for a query whose image is also a
 * corpus document's image (vqa-rad image-to-image), that document's metadata it lacks.
 */
export function queryFacets(
  queries: Query[],
  docs: Iterable<Pick<Doc, 'image' | 'meta'>>,
): Map<string, Map<string, { value: string; origin: Facet['origin'] }>> {
  const byImage = new Map<string, Pick<Doc, 'image' | 'meta'>>();
  for (const d of docs) if (d.image) byImage.set(d.image, d);
  const out = new Map<string, Map<string, { value: string; origin: Facet['origin'] }>>();
  for (const q of queries) {
    const f = new Map<string, { value: string; origin: Facet['origin'] }>();
    for (const [k, v] of Object.entries(q.meta))
      if (typeof v === 'string' && v) f.set(k, { value: v, origin: 'query' });
    const doc = q.image ? byImage.get(q.image) : undefined;
    if (doc)
      for (const [k, v] of Object.entries(doc.meta))
        if (typeof v === 'string' && v && !f.has(k)) f.set(k, { value: v, origin: 'query-image' });
    out.set(q.id, f);
  }
  return out;
}

/**
 * Scores a run over one task. With the default semantics (trec_eval 10.0 -c) every query of the task
 * with qrels is counted, including queries the retriever returned nothing for, so the numbers equal
 * `trec_eval -c` on the task's qrels; with '9.0.8' they equal trec_eval 9.0.8 / pytrec_eval (missing
 * queries skipped, float32 score ties). `options` overrides single evaluation options (e.g. -M).
 */
export function buildTaskReport(args: {
  taskId: string;
  queries: Query[];
  /** Documents whose image is a query's (facets of image queries); other documents are ignored. */
  docs: Iterable<Pick<Doc, 'image' | 'meta'>>;
  qrels: Qrels;
  run: Run;
  measures: string[];
  semantics?: Semantics;
  options?: EvalOptions;
}): TaskReport {
  const semantics = args.semantics ?? DEFAULT_SEMANTICS;
  const taskQueries = args.queries.filter((q) => q.task === args.taskId);
  const taskQrels = qrelsFor(
    args.qrels,
    taskQueries.map((q) => q.id),
  );
  // gm_map and gm_bpref have no per-query value: facets take the geometric mean of the queries' AP
  // (bpref), so AP (bpref) is computed too, and dropped again when it was not asked for.
  const added = Object.entries(GEOMETRIC_BASE)
    .filter(([gm, base]) => args.measures.includes(gm) && !args.measures.includes(base))
    .map(([, base]) => base);
  const measures = [...args.measures, ...added];
  const result = evaluate(taskQrels, args.run, measures, {
    ...SEMANTICS[semantics].options,
    ...args.options,
  });
  const facetsByQuery = queryFacets(taskQueries, args.docs);
  const groups = new Map<string, { origin: Facet['origin']; values: Map<string, string[]> }>();
  for (const q of taskQueries) {
    if (!result.perQuery.has(q.id)) continue;
    for (const [key, { value, origin }] of facetsByQuery.get(q.id) ?? []) {
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { origin, values: new Map() }));
      const list = g.values.get(value) ?? [];
      list.push(q.id);
      g.values.set(value, list);
    }
  }
  const facets: Facet[] = [];
  for (const [key, g] of groups) {
    if (g.values.size < 2 || g.values.size > FACET_MAX_VALUES) continue;
    const values: FacetValue[] = [...g.values]
      .map(([value, ids]) => ({
        value,
        queries: ids.length,
        means: meanOf(ids, result.perQuery, args.measures),
      }))
      .sort((a, b) => b.queries - a.queries || (a.value < b.value ? -1 : 1));
    facets.push({ key, origin: g.origin, values });
  }
  for (const base of added) {
    delete result.all[base];
    for (const v of result.perQuery.values()) delete v[base];
  }
  facets.sort((a, b) => (a.origin === b.origin ? (a.key < b.key ? -1 : 1) : a.origin === 'query' ? -1 : 1));
  return {
    taskId: args.taskId,
    semantics,
    measures: args.measures,
    queries: result.perQuery.size,
    overall: result.all,
    perQuery: result.perQuery,
    facets,
  };
}

function meanOf(ids: string[], perQuery: Map<string, Record<string, number>>, measures: string[]) {
  const out: Record<string, number> = {};
  for (const m of measures) {
    if (m in GEOMETRIC_BASE) {
      out[m] = geometricMeanAp(ids.map((id) => perQuery.get(id)?.[GEOMETRIC_BASE[m]] ?? 0));
      continue;
    }
    let s = 0;
    for (const id of ids) s += perQuery.get(id)?.[m] ?? 0;
    out[m] = s / ids.length;
  }
  return out;
}

/**
 * The metrics CSV of a report: `scope,value,queries,<measure>...,semantics`, then the overall row (scope
 * `overall`, value = task id), one row per facet value and one per query. Headers are human labels, or
 * trec_eval's names with `header: 'name'`. A measure without a per-query value (gm_map) is empty on
 * query rows. The last column names the semantics on every row (`trec_eval 10.0 -c`), so a row copied
 * elsewhere still says which trec_eval it follows.
 */
export function reportCsv(report: TaskReport, opts: { header?: 'label' | 'name' } = {}): string {
  const ms = report.measures;
  const esc = (v: string) => (/[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
  const head = ms.map((m) => (opts.header === 'name' ? m : measureLabel(m)));
  const rows = [['scope', 'value', 'queries', ...head, 'semantics'].map(esc).join(',')];
  const sem = esc(SEMANTICS[report.semantics].label);
  const line = (scope: string, value: string, n: number, m: Record<string, number>) =>
    [esc(scope), esc(value), String(n), ...ms.map((k) => (k in m ? String(m[k]) : '')), sem].join(',');
  rows.push(line('overall', report.taskId, report.queries, report.overall));
  for (const f of report.facets)
    for (const v of f.values) rows.push(line(f.key, v.value, v.queries, v.means));
  for (const [qid, m] of report.perQuery) rows.push(line('query', qid, 1, m));
  return rows.join('\n') + '\n';
}
