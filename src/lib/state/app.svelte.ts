// The page's state: which shards exist (demo + cached), the open shard, jobs with progress/cancel,
// runs and their reports. Components read this and call its methods; they never touch a worker.
import type { Bm25Params } from '../core/bm25';
import { formatQrels, formatRun } from '../core/trec';
import { buildTaskReport, qrelsFor, type TaskReport } from '../core/report';
import { measureLabel, standardMeasures } from '../core/metrics';
import type { Doc, Qrels, Query, Run, TaskInfo } from '../core/types';
import type { ShardIssue } from '../core/source';
import { openShardStore, type ShardSummary } from '../adapters/shard-store';
import { importShard, type SourceDescriptor } from '../adapters/shard-client';
import {
  explainBm25Doc,
  prepareBm25,
  resetRetrieval,
  runBm25Task,
  searchBm25Adhoc,
} from '../adapters/retrieval-client';
import { Job, isAbortError } from './jobs.svelte';

/** Default BM25 parameters: Pyserini/Anserini's BEIR baselines (Lucene BM25, k1=0.9, b=0.4). */
export const DEFAULT_BM25: Bm25Params = { k1: 0.9, b: 0.4, lossyLengths: true };
/** Cutoffs every report shows. */
export const REPORT_KS = [1, 5, 10, 100];
/** Default run depth (documents kept per query); trec_eval measures up to @100 need 100. */
export const DEFAULT_DEPTH = 100;

export interface OpenShard {
  summary: ShardSummary;
  docs: Doc[];
  queries: Query[];
  qrels: Qrels;
  docById: Map<string, Doc>;
  queryById: Map<string, Query>;
}

export interface RunResult {
  id: string;
  shardHash: string;
  shardName: string;
  taskId: string;
  retriever: 'bm25';
  params: Bm25Params;
  depth: number;
  run: Run;
  report: TaskReport;
  ms: number;
  createdAt: string;
  /** TREC run tag: loupe-bm25-k1_0.9-b_0.4 */
  tag: string;
}

export type AppPhase =
  'starting' | 'idle' | 'importing' | 'preparing' | 'ready' | 'running' | 'done' | 'error';

export class AppState {
  phase = $state<AppPhase>('starting');
  demoShards = $state<{ name: string; url: string }[]>([]);
  cached = $state<ShardSummary[]>([]);
  estimate = $state<{ usage?: number; quota?: number; persisted?: boolean } | null>(null);
  /** The open shard: big arrays, so not deeply reactive. */
  shard = $state.raw<OpenShard | null>(null);
  job = $state<Job | null>(null);
  issues = $state.raw<ShardIssue[] | null>(null);
  message = $state<string | null>(null);
  taskId = $state('');
  bm25 = $state<Bm25Params>({ ...DEFAULT_BM25 });
  depth = $state(DEFAULT_DEPTH);
  /** Key of the BM25 index ready in the worker (shard hash + params), null when none. */
  preparedKey = $state<string | null>(null);
  indexedDocs = $state<number | null>(null);
  runs = $state.raw<RunResult[]>([]);
  currentRunId = $state<string | null>(null);
  selectedQueryId = $state<string | null>(null);
  readyMs = $state<number | null>(null);
  #imageUrls = new Map<string, string>();

  get currentRun(): RunResult | null {
    return this.runs.find((r) => r.id === this.currentRunId) ?? null;
  }

  get task(): TaskInfo | null {
    return this.shard?.summary.manifest.tasks.find((t) => t.id === this.taskId) ?? null;
  }

  get measures(): string[] {
    return standardMeasures(REPORT_KS);
  }

  get crossOriginIsolated(): boolean {
    return globalThis.crossOriginIsolated === true;
  }

  /** Page start: demo shard list, cached shards, then whatever the URL asks for. */
  async start(params: URLSearchParams) {
    await Promise.all([this.refreshCache(), this.loadDemoList()]);
    this.phase = 'idle';
    const k1 = Number(params.get('k1'));
    const b = Number(params.get('b'));
    if (params.has('k1') && Number.isFinite(k1)) this.bm25.k1 = k1;
    if (params.has('b') && Number.isFinite(b)) this.bm25.b = b;
    const depth = Number(params.get('depth'));
    if (params.has('depth') && Number.isInteger(depth) && depth > 0) this.depth = depth;
    const url = params.get('shard');
    if (url) {
      const absolute = new URL(url, location.href).href;
      const hit = this.cached.find((s) => s.sourceLabel === absolute);
      if (hit) await this.open(hit.hash);
      else await this.importFrom({ kind: 'url', url: absolute });
      if (!this.shard) return;
      const task = params.get('task');
      if (task && this.shard.summary.manifest.tasks.some((t) => t.id === task)) this.taskId = task;
      await this.prepare();
      // `phase` changed inside the awaits above; TypeScript's narrowing from `= 'idle'` does not know.
      if (params.get('run') === '1' && (this.phase as AppPhase) === 'ready') await this.runTask();
    }
  }

  async loadDemoList() {
    try {
      const res = await fetch('/shards/index.json');
      if (res.ok) this.demoShards = (await res.json()).shards ?? [];
    } catch {
      // A static deployment without demo shards: the list stays empty.
    }
  }

  async refreshCache() {
    const store = await openShardStore();
    this.cached = await store.list();
    this.estimate = await store.estimate();
  }

  /** Imports a shard from a source; on success opens it. Invalid shards leave nothing cached. */
  async importFrom(source: SourceDescriptor) {
    const label = source.kind === 'url' ? source.url : source.kind === 'zip' ? source.file.name : 'folder';
    const job = new Job(`Loading ${label}`);
    this.job = job;
    this.issues = null;
    this.message = null;
    this.phase = 'importing';
    try {
      const result = await importShard(source, { signal: job.signal, onProgress: job.onProgress });
      if (!result.ok) {
        this.issues = result.issues;
        this.phase = this.shard ? 'ready' : 'idle';
        return;
      }
      await this.refreshCache();
      await this.open(result.summary.hash);
    } catch (e) {
      this.fail(e, 'Loading the shard');
    } finally {
      if (this.job === job) this.job = null;
    }
  }

  /** Opens a cached shard (documents, queries and qrels from IndexedDB). */
  async open(hash: string) {
    this.issues = null;
    this.message = null;
    try {
      const store = await openShardStore();
      const { summary, docs, queries, qrels } = await store.load(hash);
      this.#revokeImages();
      this.shard = {
        summary,
        docs,
        queries,
        qrels,
        docById: new Map(docs.map((d) => [d.id, d])),
        queryById: new Map(queries.map((q) => [q.id, q])),
      };
      this.taskId = summary.manifest.tasks[0]?.id ?? '';
      this.preparedKey = null;
      this.selectedQueryId = null;
      this.phase = 'idle';
    } catch (e) {
      this.fail(e, 'Opening the cached shard');
      await this.refreshCache();
    }
  }

  get bm25Key(): string | null {
    const s = this.shard;
    return s ? `${s.summary.hash}|${this.bm25.k1}|${this.bm25.b}|${this.bm25.lossyLengths}` : null;
  }

  /** Makes the BM25 index of the open shard ready (cached artifact or a fresh build). */
  async prepare() {
    const s = this.shard;
    if (!s) return;
    const key = this.bm25Key;
    if (this.preparedKey === key) {
      this.phase = 'ready';
      return;
    }
    const job = new Job('Preparing BM25 index');
    this.job = job;
    this.phase = 'preparing';
    try {
      const res = await prepareBm25(s.summary.hash, $state.snapshot(this.bm25), {
        signal: job.signal,
        onProgress: job.onProgress,
      });
      this.preparedKey = key;
      this.indexedDocs = res.indexedDocs;
      this.phase = 'ready';
      this.readyMs = performance.now();
      performance.mark('loupe:ready');
    } catch (e) {
      this.preparedKey = null;
      this.fail(e, 'Building the BM25 index');
    } finally {
      if (this.job === job) this.job = null;
    }
  }

  /** Runs BM25 over every query of the selected task and scores the run. */
  async runTask(taskId = this.taskId) {
    const s = this.shard;
    if (!s) return;
    if (this.preparedKey !== this.bm25Key) await this.prepare();
    if (this.phase !== 'ready' && this.phase !== 'done') return;
    const job = new Job(`Running BM25 on ${taskId}`);
    this.job = job;
    this.phase = 'running';
    const t0 = performance.now();
    try {
      const lists = await runBm25Task(taskId, this.depth, { signal: job.signal, onProgress: job.onProgress });
      const run: Run = new Map();
      for (const l of lists)
        run.set(
          l.queryId,
          l.docIds.map((docId, i) => ({ docId, score: l.scores[i] })),
        );
      const params = $state.snapshot(this.bm25);
      const report = buildTaskReport({
        taskId,
        queries: s.queries,
        docs: s.docs,
        qrels: s.qrels,
        run,
        measures: this.measures,
      });
      const result: RunResult = {
        id: `run-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`,
        shardHash: s.summary.hash,
        shardName: s.summary.name,
        taskId,
        retriever: 'bm25',
        params,
        depth: this.depth,
        run,
        report,
        ms: performance.now() - t0,
        createdAt: new Date().toISOString(),
        tag: `loupe-bm25-k1_${params.k1}-b_${params.b}`,
      };
      this.runs = [
        result,
        ...this.runs.filter((r) => !(r.shardHash === s.summary.hash && r.taskId === taskId)),
      ];
      this.currentRunId = result.id;
      this.selectedQueryId = null;
      this.phase = 'done';
      performance.mark('loupe:done');
    } catch (e) {
      if (isAbortError(e)) {
        // The worker was terminated; its index must be prepared again.
        this.preparedKey = null;
        this.message = 'Run cancelled.';
        this.phase = 'idle';
      } else this.fail(e, 'Running BM25');
    } finally {
      if (this.job === job) this.job = null;
    }
  }

  /** Runs every task of the shard one after another (tasks BM25 cannot serve are skipped). */
  async runAllTasks() {
    for (const t of this.shard?.summary.manifest.tasks ?? []) {
      if (t.queryModality === 'image') continue;
      await this.runTask(t.id);
      if (this.phase !== 'done') return;
    }
  }

  cancelJob() {
    this.job?.cancel();
  }

  async deleteShard(hash: string) {
    const store = await openShardStore();
    await store.delete(hash);
    if (this.shard?.summary.hash === hash) {
      this.shard = null;
      this.preparedKey = null;
      this.#revokeImages();
      resetRetrieval();
      this.phase = 'idle';
    }
    this.runs = this.runs.filter((r) => r.shardHash !== hash);
    await this.refreshCache();
  }

  async adhocSearch(text: string, k = 20) {
    if (!this.shard || this.preparedKey !== this.bm25Key) await this.prepare();
    return searchBm25Adhoc(text, k);
  }

  explain(text: string, docId: string) {
    return explainBm25Doc(text, docId);
  }

  /** Object URL of a shard image, created once and revoked when the shard closes. */
  async imageUrl(path: string): Promise<string | null> {
    const s = this.shard;
    if (!s) return null;
    const hit = this.#imageUrls.get(path);
    if (hit) return hit;
    const blob = await (await openShardStore()).getImage(s.summary.hash, path);
    if (!blob) return null;
    const url = URL.createObjectURL(blob);
    this.#imageUrls.set(path, url);
    return url;
  }

  #revokeImages() {
    for (const u of this.#imageUrls.values()) URL.revokeObjectURL(u);
    this.#imageUrls.clear();
  }

  fail(e: unknown, what: string) {
    if (isAbortError(e)) {
      this.message = `${what}: cancelled.`;
      this.phase = 'idle';
      return;
    }
    console.error(e);
    this.message = `${what} failed: ${e instanceof Error ? e.message : String(e)}`;
    this.phase = 'error';
  }

  // ---- exports (the headless runner downloads these through the same buttons) ----

  exportRunTrec(r: RunResult): string {
    return formatRun(r.run, r.tag);
  }

  exportQrelsTrec(r: RunResult): string {
    const s = this.shard;
    if (!s) return '';
    const ids = s.queries.filter((q) => q.task === r.taskId).map((q) => q.id);
    return formatQrels(qrelsFor(s.qrels, ids));
  }

  exportMetricsJson(r: RunResult): string {
    return JSON.stringify(
      {
        tool: 'loupe',
        shard: { name: r.shardName, hash: r.shardHash },
        task: r.taskId,
        retriever: r.retriever,
        params: r.params,
        depth: r.depth,
        evaluation: 'trec_eval -c semantics over the task qrels; trec_eval 10 tie order',
        createdAt: r.createdAt,
        queries: r.report.queries,
        overall: r.report.overall,
        facets: r.report.facets,
        perQuery: Object.fromEntries(r.report.perQuery),
      },
      null,
      2,
    );
  }

  exportMetricsCsv(r: RunResult): string {
    const ms = r.report.measures;
    const esc = (v: string) => (/[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
    const rows = [['scope', 'value', 'queries', ...ms.map(measureLabel)].map(esc).join(',')];
    const line = (scope: string, value: string, n: number, m: Record<string, number>) =>
      [esc(scope), esc(value), String(n), ...ms.map((k) => String(m[k] ?? ''))].join(',');
    rows.push(line('overall', r.taskId, r.report.queries, r.report.overall));
    for (const f of r.report.facets)
      for (const v of f.values) rows.push(line(f.key, v.value, v.queries, v.means));
    for (const [qid, m] of r.report.perQuery) rows.push(line('query', qid, 1, m));
    return rows.join('\n') + '\n';
  }
}
