// Comparing and fusing runs of the selected task. Picks, baseline and the computed comparison are
// kept per (shard, task), for the page's lifetime (switching to another shard and back finds them); a comparison is shown only while its task is selected and its runs are exactly the
// picked ones, so a task switch can never leave another task's comparison, plots or link on screen.
import { queryImageDocs } from './shard-docs.svelte';
import type { Comparison } from '../core/eval/compare';
import { fusionRequestOf, type FuseSpec, type FusionRequest } from '../core/eval/permalink';
import { queryFacets, qrelsFor } from '../core/eval/report';
import {
  describeFusion,
  fuse,
  fusionConfig,
  fusionLabel,
  METHOD_LABELS,
  type FusionBase,
  type FusionDescriptor,
  type FusionGridSpec,
  type FusionOptions,
  type FusionParams,
} from '../core/retrieval/fusion';
import { DEFAULT_FOLDS } from '../core/retrieval/fusion-tuning';
import type { Run } from '../core/types';
import type { RetrieverConfig } from '../core/retrieval/runs';
import { compareInWorker, curvesInWorker, tuneFusionInWorker } from '../clients/stats-client';
import { isAbortError } from '../clients/worker-client';
import { SEMANTICS, type Semantics } from '../core/eval/semantics';
import type { Jobs } from './jobs.svelte';
import type { Library } from './library.svelte';
import type { Messages } from './messages.svelte';
import type { RunStore } from './runs.svelte';
import type { AppPhase } from './phase';
import type { RunResult } from './runs.svelte';

/** What this module needs of the page's state (App composes it and passes itself). */
export interface CompareHost {
  phase: AppPhase;
  readonly jobs: Jobs;
  readonly library: Library;
  readonly messages: Messages;
  readonly runs: RunStore;
}

/** Measures compared; the first is the primary one (facets, changed queries). */
export const COMPARE_MEASURES = ['ndcg_cut_10', 'recall_100', 'recip_rank', 'map', 'P_10'];

/** A fused run and how to describe it given its inputs' names. */
type Fused = { run: Run; describe: (names: string[]) => FusionDescriptor };

interface ComputedComparison {
  taskId: string;
  /** The compared run ids, sorted (the picks it was computed for). */
  key: string;
  /** The semantics of the reports it compared (RunStore's setting at the time). */
  semantics: Semantics;
  result: Comparison;
  curves: { id: string; curves: Record<string, number[]> }[];
}

export class CompareState {
  #picks = $state<Record<string, string[]>>({});
  #baseline = $state<Record<string, string>>({});
  /** The last comparison computed for each task (task id → comparison). */
  #computed = $state.raw<Record<string, ComputedComparison>>({});

  constructor(private app: CompareHost) {}

  /** Where picks, baseline and comparison are kept: the open shard's content hash and the task. */
  get #key(): string {
    return `${this.app.library.shard?.summary.hash ?? ''}|${this.app.library.taskId}`;
  }

  /** Picked run ids of the selected task (only ids of its existing runs). */
  get pickedIds(): string[] {
    const runs = new Set(this.app.runs.taskRuns.map((r) => r.meta.id));
    return (this.#picks[this.#key] ?? []).filter((id) => runs.has(id));
  }

  /** Picked runs of the selected task, in run-list order. */
  get picked(): RunResult[] {
    const ids = new Set(this.pickedIds);
    return this.app.runs.taskRuns.filter((r) => ids.has(r.meta.id));
  }

  isPicked(id: string): boolean {
    return this.pickedIds.includes(id);
  }

  setPicked(id: string, on: boolean) {
    const now = this.pickedIds.filter((x) => x !== id);
    this.#picks[this.#key] = on ? [...now, id] : now;
  }

  setPicks(ids: string[]) {
    this.#picks[this.#key] = [...ids];
  }

  /** The baseline among the picked runs (default: the oldest picked). */
  get baselineId(): string | null {
    const picked = this.picked;
    const want = this.#baseline[this.#key];
    return picked.find((r) => r.meta.id === want)?.meta.id ?? picked.at(-1)?.meta.id ?? null;
  }

  set baselineId(id: string | null) {
    if (id) this.#baseline[this.#key] = id;
  }

  /** The comparison of exactly the picked runs of the selected task, if it was computed. */
  get current(): ComputedComparison | null {
    const c = this.#computed[this.#key];
    if (!c) return null;
    if (c.key !== [...this.pickedIds].sort().join(',')) return null;
    if (c.result.baselineId !== this.baselineId) return null;
    // Computed under another trec_eval semantics: its numbers are not the reports' any more.
    if (c.semantics !== this.app.runs.semantics) return null;
    return c;
  }

  /**
   * Compares the picked runs against the baseline in the stats worker: bootstrap CIs, paired
   * randomization and t tests (Holm), facets, changed queries; then metric@k curves.
   */
  async compare() {
    const s = this.app.library.shard;
    const taskId = this.app.library.taskId;
    const where = this.#key;
    const picked = this.picked;
    const baselineId = this.baselineId;
    if (!s || picked.length < 2 || !baselineId) {
      this.app.messages.error('Pick at least two runs of this task to compare.');
      return;
    }
    const semantics = this.app.runs.semantics;
    const key = picked
      .map((r) => r.meta.id)
      .sort()
      .join(',');
    await this.app.jobs.run(
      'Comparing runs (bootstrap and randomization tests)',
      'Comparing runs',
      async (job) => {
        const taskQueries = s.queries.filter((q) => q.task === taskId);
        const facets = new Map<string, Map<string, string>>();
        for (const [qid, f] of queryFacets(taskQueries, queryImageDocs(s)))
          facets.set(qid, new Map([...f].map(([k, v]) => [k, v.value])));
        const result = await compareInWorker(
          {
            // Only the compared measures cross to the worker (a report holds dozens per query).
            inputs: picked.map((r) => ({
              id: r.meta.id,
              name: r.meta.name,
              perQuery: new Map(
                [...r.report.perQuery].map(([q, m]) => [
                  q,
                  Object.fromEntries(COMPARE_MEASURES.filter((k) => k in m).map((k) => [k, m[k]])),
                ]),
              ),
            })),
            baselineId,
            measures: COMPARE_MEASURES,
            facets,
            options: { seed: 42, bootstrapResamples: 2000, randomizationResamples: 10000 },
          },
          job.signal,
        );
        job.onProgress({ kind: 'status', message: 'Computing metric@k curves' });
        const qrels = qrelsFor(
          s.qrels,
          taskQueries.map((q) => q.id),
        );
        const curves = await curvesInWorker(
          picked.map((r) => ({ id: r.meta.id, run: r.run })),
          qrels,
          ['ndcg_cut', 'recall'],
          100,
          SEMANTICS[semantics].options,
        );
        this.#computed = { ...this.#computed, [where]: { taskId, key, semantics, result, curves } };
        performance.mark('loupe:compared');
      },
    );
  }

  /**
   * Fuses the picked runs as a `fuse=` spec says (core/eval/permalink.ts): with fixed parameters, or
   * tuned by cross-validation.
   */
  async fuseSpec(spec: FuseSpec) {
    let request: FusionRequest;
    try {
      request = fusionRequestOf(spec, this.pickedIds.length);
    } catch (e) {
      this.app.messages.error(`Fusing runs failed: ${e instanceof Error ? e.message : String(e)}`);
      return;
    }
    return request.kind === 'fixed' ? this.fuse(request.options) : this.fuseTuned(request);
  }

  /** Fuses the picked runs of the task into a new stored run (or finds the same fusion stored). */
  async fuse(opts: FusionOptions) {
    return this.#fuse((runs) => ({
      run: fuse(runs, opts),
      describe: (names) => describeFusion(opts, names),
    }));
  }

  /**
   * Tunes a fusion of the picked runs by k-fold cross-validation over the task's queries
   * (core/retrieval/fusion-tuning.ts) in the stats worker, as a job with progress and cancel, and
   * stores the held-out run, with its folds and per-fold parameters in its configuration. The measure
   * is evaluated under the current trec_eval semantics.
   */
  async fuseTuned(req: {
    base: FusionBase;
    grid: FusionParams[];
    gridSpec?: FusionGridSpec;
    measure: string;
    folds?: number;
    seed?: number;
  }) {
    const s = this.app.library.shard;
    const taskId = this.app.library.taskId;
    const { complete } = SEMANTICS[this.app.runs.semantics].options;
    const { base, grid, gridSpec, measure, folds, seed } = req;
    const label = `Tuning ${METHOD_LABELS[base.method]} by ${folds ?? DEFAULT_FOLDS}-fold cross-validation (${grid.length} grid points)`;
    return this.app.jobs.run(label, 'Tuning the fusion', (job) =>
      this.#fuse(async (runs) => {
        const qrels = qrelsFor(
          s!.qrels,
          s!.queries.filter((q) => q.task === taskId).map((q) => q.id),
        );
        const opts = { fusion: base, grid, gridSpec, measure, folds, seed };
        const evalOptions = complete ? { complete } : {};
        const tuned = await tuneFusionInWorker(runs, qrels, { ...opts, evalOptions }, job);
        return { run: tuned.run, describe: (names) => describeFusion(base, names, tuned.tuning) };
      }),
    );
  }

  /** Fuses the picked runs with `make` and stores the result (or finds the same fusion stored). */
  async #fuse(make: (runs: Run[]) => Fused | Promise<Fused>) {
    const picked = this.picked;
    if (!this.app.library.shard || picked.length < 2) {
      this.app.messages.error('Pick at least two runs of this task to fuse.');
      return;
    }
    try {
      const { run, describe } = await make(picked.map((r) => r.run));
      const d = describe(picked.map((r) => r.meta.name));
      const config: RetrieverConfig = fusionConfig(
        d,
        picked.map((r) => r.meta.id),
      );
      const { result, added } = await this.app.runs.add(
        this.app.runs.meta({
          name: `${fusionLabel(d)} (${picked.map((r) => r.meta.name).join(' + ')})`,
          taskId: this.app.library.taskId,
          config,
          depth: Math.max(...[...run.values()].map((l) => l.length), 0),
          ms: 0,
        }),
        run,
      );
      if (!added) this.app.messages.info(`This fusion exists already: ${result.meta.name}.`);
      this.app.phase = 'done';
      return result;
    } catch (e) {
      if (isAbortError(e)) throw e;
      this.app.messages.error(`Fusing runs failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
}
