// Runs of the open shard as stored objects, and what the Benchmark view shows of them: the selected
// task's runs, its current run and its selected query. Everything task-bound is derived from the
// library's (shard, task), so switching either cannot leave another task's runs on screen.
import { queryImageDocs } from './shard-docs.svelte';
import { formatQrels, formatRun, parseRun } from '../core/eval/trec';
import { buildTaskReport, qrelsFor, reportCsv, type TaskReport } from '../core/eval/report';
import { allTrecMeasures, EXTRA_MEASURES, describeMeasures, standardMeasures } from '../core/eval/metrics';
import { DEFAULT_SEMANTICS, SEMANTICS, type Semantics } from '../core/eval/semantics';
import { TIE_TOP_K, queriesWithTies } from '../core/eval/ties';
import type { Run } from '../core/types';
import {
  configKey,
  configUsesTestModel,
  decodeRun,
  encodeRun,
  runTag,
  type RetrieverConfig,
  type RunMeta,
  type StoredRun,
} from '../core/retrieval/runs';
import { withShardStore } from '../platform/storage/shard-store';
import type { Library, OpenShard } from './library.svelte';
import type { Messages } from './messages.svelte';

/** The measure sets of the metrics panel's Measures choice. */
export type MeasureSet = 'standard' | 'extra' | 'all_trec';

/** Cutoffs every report shows. */
export const REPORT_KS = [1, 5, 10, 100];

/** A run with its report; `meta` is what is stored (with the ranked lists) in IndexedDB. */
export interface RunResult {
  meta: RunMeta;
  run: Run;
  report: TaskReport;
}

export class RunStore {
  /** Every stored run of the open shard, newest first. */
  all = $state.raw<RunResult[]>([]);
  /** The run shown per task (task id → run id); a task without an entry shows its newest run. */
  #current = $state<Record<string, string>>({});
  /** The query opened in the drill-down, per task. */
  #query = $state<Record<string, string>>({});

  constructor(
    private library: Library,
    private messages: Messages,
  ) {
    library.onShardChange(async (s) => {
      this.#current = {};
      this.#query = {};
      this.all = s ? await this.#load(s) : [];
    });
  }

  /**
   * Which measures every report computes: the standard ones, plus those for incompletely judged
   * collections (bpref, infAP, Judged@10…), plus every other measure of `trec_eval -m all_trec` (of the
   * semantics' trec_eval version).
   */
  #measureSet = $state<MeasureSet>('standard');
  /** Which trec_eval the numbers follow: the one setting the metrics panel and every export read. */
  #semantics = $state<Semantics>(DEFAULT_SEMANTICS);

  get measures(): string[] {
    const std = standardMeasures(REPORT_KS);
    if (this.#measureSet === 'standard') return std;
    const out = [...std, ...EXTRA_MEASURES];
    // The semantics' own all_trec: trec_eval 9.0.8 has no rbp, rbp_resid or unj.
    const version = SEMANTICS[this.#semantics].options.trecEvalVersion;
    if (this.#measureSet === 'all_trec')
      for (const m of allTrecMeasures(version)) if (!out.includes(m)) out.push(m);
    return out;
  }

  get measureSet(): MeasureSet {
    return this.#measureSet;
  }

  /** Changes the measure set: every run of the shard is scored again. */
  set measureSet(set: MeasureSet) {
    if (set === this.#measureSet) return;
    this.#measureSet = set;
    this.#rescore();
  }

  get semantics(): Semantics {
    return this.#semantics;
  }

  /** Switches trec_eval semantics: every run of the shard is scored again. */
  set semantics(s: Semantics) {
    if (s === this.#semantics) return;
    this.#semantics = s;
    this.#rescore();
  }

  #rescore() {
    const s = this.library.shard;
    if (s) this.all = this.all.map((r) => ({ ...r, report: this.#report(s, r.meta, r.run) }));
  }

  /** Runs of the selected task, newest first. */
  get taskRuns(): RunResult[] {
    const t = this.library.taskId;
    return this.all.filter((r) => r.meta.taskId === t);
  }

  /** The run the Benchmark view shows: of the selected task only. */
  get current(): RunResult | null {
    const runs = this.taskRuns;
    const id = this.#current[this.library.taskId];
    return runs.find((r) => r.meta.id === id) ?? runs[0] ?? null;
  }

  select(id: string) {
    const r = this.all.find((x) => x.meta.id === id);
    if (r) this.#current[r.meta.taskId] = id;
  }

  /** The query open in the drill-down (of the selected task). */
  get selectedQueryId(): string | null {
    const id = this.#query[this.library.taskId];
    return id && this.library.shard?.queryById.get(id)?.task === this.library.taskId ? id : null;
  }

  set selectedQueryId(id: string | null) {
    if (id) this.#query[this.library.taskId] = id;
    else delete this.#query[this.library.taskId];
  }

  byId(id: string): RunResult | undefined {
    return this.all.find((r) => r.meta.id === id);
  }

  /** A stored run of the task with the same configuration, if any. */
  findSame(config: RetrieverConfig, taskId: string, depth: number): RunResult | undefined {
    const key = configKey(config, taskId, depth);
    return this.all.find((r) => configKey(r.meta.config, r.meta.taskId, r.meta.depth) === key);
  }

  /** Metadata of a new run of the open shard. */
  meta(m: Pick<RunMeta, 'name' | 'taskId' | 'config' | 'depth' | 'ms'>): RunMeta {
    const s = this.library.shard!;
    const c = m.config;
    const inputs = c.kind === 'fusion' ? c.inputs : c.kind === 'rerank' ? [c.input] : [];
    const randomWeights =
      configUsesTestModel(c) || inputs.some((id) => this.byId(id)?.meta.randomWeights === true);
    return {
      id: newRunId(),
      shardHash: s.summary.hash,
      shardName: s.summary.name,
      createdAt: new Date().toISOString(),
      tag: runTag(c),
      ...(randomWeights ? { randomWeights } : {}),
      ...m,
    };
  }

  #report(s: OpenShard, meta: RunMeta, run: Run): TaskReport {
    return buildTaskReport({
      taskId: meta.taskId,
      queries: s.queries,
      docs: queryImageDocs(s),
      qrels: s.qrels,
      run,
      measures: this.measures,
      semantics: this.#semantics,
    });
  }

  /**
   * Scores a run, stores it in IndexedDB and lists it first, unless a run of the same configuration
   * exists: then that one is returned (and shown) and nothing is added.
   */
  async add(meta: RunMeta, run: Run): Promise<{ result: RunResult; added: boolean }> {
    const same = this.findSame(meta.config, meta.taskId, meta.depth);
    if (same) {
      this.select(same.meta.id);
      return { result: same, added: false };
    }
    const s = this.library.shard!;
    const result: RunResult = { meta, run, report: this.#report(s, meta, run) };
    await withShardStore((store) => store.putArtifact(meta.shardHash, 'run', meta.id, encodeRun(meta, run)));
    if (this.library.shard === s) this.all = [result, ...this.all];
    this.select(meta.id);
    return { result, added: true };
  }

  /** Stored runs of a shard, re-scored with the current metric code; unreadable ones are dropped. */
  async #load(s: OpenShard): Promise<RunResult[]> {
    const out: RunResult[] = [];
    await withShardStore(async (store) => {
      for (const [key, stored] of await store.listArtifacts<StoredRun>(s.summary.hash, 'run')) {
        try {
          const { meta, run } = decodeRun(stored);
          out.push({ meta, run, report: this.#report(s, meta, run) });
        } catch (e) {
          console.warn(`dropping unreadable stored run ${key}`, e);
          await store.deleteArtifact(s.summary.hash, 'run', key);
        }
      }
    });
    return out.sort((a, b) => (a.meta.createdAt < b.meta.createdAt ? 1 : -1));
  }

  async rename(id: string, name: string) {
    const r = this.byId(id);
    const clean = name.trim();
    if (!r || !clean) return;
    const meta = { ...r.meta, name: clean };
    await withShardStore((store) => store.putArtifact(meta.shardHash, 'run', id, encodeRun(meta, r.run)));
    this.all = this.all.map((x) => (x.meta.id === id ? { ...x, meta } : x));
  }

  async delete(id: string) {
    const r = this.byId(id);
    if (!r) return;
    await withShardStore((store) => store.deleteArtifact(r.meta.shardHash, 'run', id));
    this.all = this.all.filter((x) => x.meta.id !== id);
  }

  /**
   * Imports a TREC run file produced elsewhere (pyserini, MTEB, a paper's release) for the selected
   * task. Lines of other queries are ignored; unknown document ids are kept (they count as
   * non-relevant, as in trec_eval) and reported.
   */
  async importTrec(file: File) {
    const s = this.library.shard;
    const taskId = this.library.taskId;
    if (!s) return;
    this.messages.clearInfo();
    try {
      const all = parseRun(await file.text(), file.name);
      const taskQueries = new Set(s.queries.filter((q) => q.task === taskId).map((q) => q.id));
      const run: Run = new Map();
      let unknownDocs = 0;
      for (const [qid, list] of all) {
        if (!taskQueries.has(qid)) continue;
        run.set(qid, list);
        for (const d of list) if (!s.docs.has(d.docId)) unknownDocs++;
      }
      if (run.size === 0) {
        this.messages.error(
          `${file.name}: none of its ${all.size} queries belong to task ${taskId}. ` +
            'Pick the task the run was made for, or check that its query ids are this shard’s.',
        );
        return;
      }
      const firstLine = (await file.slice(0, 4096).text())
        .split('\n')
        .find((l) => l.trim() && !l.startsWith('#'));
      const tag = firstLine?.trim().split(/\s+/)[5] ?? '';
      const depth = Math.max(...[...run.values()].map((l) => l.length));
      const config: RetrieverConfig = { kind: 'import', fileName: file.name, tag };
      await this.add(this.meta({ name: `${file.name} · ${taskId}`, taskId, config, depth, ms: 0 }), run);
      const skipped = all.size - run.size;
      const notes = [
        skipped ? `${skipped} queries of other tasks ignored` : '',
        unknownDocs ? `${unknownDocs} ranked documents are not in this shard (scored as non-relevant)` : '',
      ].filter(Boolean);
      if (notes.length) this.messages.warn(`Imported ${file.name}: ${notes.join('; ')}.`);
    } catch (e) {
      this.messages.error(
        `Importing ${file.name} failed: ${e instanceof Error ? e.message : String(e)}. ` +
          'A TREC run has six columns per line: query Q0 document rank score tag.',
      );
    }
  }

  // ---- exports (the headless runner downloads these through the same buttons) ----

  exportTrec(r: RunResult): string {
    return formatRun(r.run, r.meta.tag);
  }

  exportQrels(r: RunResult): string {
    const s = this.library.shard;
    if (!s) return '';
    const ids = s.queries.filter((q) => q.task === r.meta.taskId).map((q) => q.id);
    return formatQrels(qrelsFor(s.qrels, ids));
  }

  /** The run's configuration: the JSON sidecar of an exported TREC run. */
  exportSidecar(r: RunResult): string {
    return JSON.stringify(
      {
        tool: 'loupe',
        ...r.meta,
        randomWeights: r.meta.randomWeights === true,
        ...(r.meta.randomWeights
          ? {
              warning:
                'Made with a generated test model with random weights: these results measure the pipeline, not retrieval quality.',
            }
          : {}),
        queries: r.run.size,
      },
      null,
      2,
    );
  }

  exportMetricsJson(r: RunResult): string {
    const m = r.meta;
    return JSON.stringify(
      {
        tool: 'loupe',
        run: {
          id: m.id,
          name: m.name,
          tag: m.tag,
          config: m.config,
          depth: m.depth,
          createdAt: m.createdAt,
          randomWeights: m.randomWeights === true,
        },
        shard: { name: m.shardName, hash: m.shardHash },
        task: m.taskId,
        // Derived from the report, which was computed with the store's one semantics setting.
        semantics: r.report.semantics,
        evaluation: `${SEMANTICS[r.report.semantics].label}: ${SEMANTICS[r.report.semantics].description}`,
        queries: r.report.queries,
        measures: describeMeasures(r.report.measures),
        overall: r.report.overall,
        facets: r.report.facets,
        perQuery: Object.fromEntries(r.report.perQuery),
        // Queries whose top 10 holds a tie (src/lib/core/eval/ties.ts): their measures depend on document ids.
        ties: {
          topK: TIE_TOP_K,
          queries: queriesWithTies(
            r.run,
            r.report.perQuery.keys(),
            TIE_TOP_K,
            SEMANTICS[this.#semantics].options,
          ),
        },
      },
      null,
      2,
    );
  }

  exportMetricsCsv(r: RunResult): string {
    return reportCsv(r.report);
  }
}

function newRunId(): string {
  return `run-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
