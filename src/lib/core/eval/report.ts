// Turns a run over one task into what the UI and the headless runner show: every measure overall,
// per query, and per metadata facet (field, organ, modality, question type…).
import { evaluate, geometricMeanAp, measureLabel, type EvalOptions } from './metrics';
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
  measures: string[];
  queries: number;
  overall: Record<string, number>;
  perQuery: Map<string, Record<string, number>>;
  facets: Facet[];
}

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
  docs: Doc[],
): Map<string, Map<string, { value: string; origin: Facet['origin'] }>> {
  const byImage = new Map<string, Doc>();
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
 * Scores a run over one task. Every query of the task with qrels is counted, including queries the
 * retriever returned nothing for (trec_eval -c), so the numbers equal `trec_eval -c` on the task's qrels.
 */
export function buildTaskReport(args: {
  taskId: string;
  queries: Query[];
  docs: Doc[];
  qrels: Qrels;
  run: Run;
  measures: string[];
  options?: EvalOptions;
}): TaskReport {
  const taskQueries = args.queries.filter((q) => q.task === args.taskId);
  const taskQrels = qrelsFor(
    args.qrels,
    taskQueries.map((q) => q.id),
  );
  // gm_map has no per-query value: facets take the geometric mean of the queries' AP, so AP is computed
  // too (and dropped again when it was not asked for).
  const addMap = args.measures.includes('gm_map') && !args.measures.includes('map');
  const measures = addMap ? [...args.measures, 'map'] : args.measures;
  const result = evaluate(taskQrels, args.run, measures, { complete: true, ...args.options });
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
  if (addMap) {
    delete result.all.map;
    for (const v of result.perQuery.values()) delete v.map;
  }
  facets.sort((a, b) => (a.origin === b.origin ? (a.key < b.key ? -1 : 1) : a.origin === 'query' ? -1 : 1));
  return {
    taskId: args.taskId,
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
    if (m === 'gm_map') {
      out[m] = geometricMeanAp(ids.map((id) => perQuery.get(id)?.map ?? 0));
      continue;
    }
    let s = 0;
    for (const id of ids) s += perQuery.get(id)?.[m] ?? 0;
    out[m] = s / ids.length;
  }
  return out;
}

/**
 * The metrics CSV of a report: `scope,value,queries,<measure>...`, then the overall row (scope `overall`,
 * value = task id), one row per facet value and one per query. Headers are human labels, or trec_eval's
 * names with `header: 'name'`. A measure without a per-query value (gm_map) is empty on query rows.
 */
export function reportCsv(report: TaskReport, opts: { header?: 'label' | 'name' } = {}): string {
  const ms = report.measures;
  const esc = (v: string) => (/[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
  const head = ms.map((m) => (opts.header === 'name' ? m : measureLabel(m)));
  const rows = [['scope', 'value', 'queries', ...head].map(esc).join(',')];
  const line = (scope: string, value: string, n: number, m: Record<string, number>) =>
    [esc(scope), esc(value), String(n), ...ms.map((k) => (k in m ? String(m[k]) : ''))].join(',');
  rows.push(line('overall', report.taskId, report.queries, report.overall));
  for (const f of report.facets)
    for (const v of f.values) rows.push(line(f.key, v.value, v.queries, v.means));
  for (const [qid, m] of report.perQuery) rows.push(line('query', qid, 1, m));
  return rows.join('\n') + '\n';
}
