// Quality under approximation (issue 37 item 2): for the selected task and one dense model, the stored
// runs of that model read as rows (core/eval/approximation.ts: exact search, HNSW by ef, the packed
// IVF index by nprobe, the compact scans, other encoder dtypes), the table computed in the stats
// worker, and the configurations not stored yet run one after another through the retrievers (the
// same runs a user starts by hand, stored like them), cancellable, with "k of n" progress. The runs
// store is the one source of truth: a table is shown only while it answers the current runs and
// settings.
import {
  approxRole,
  bytesPerQueryOf,
  hnswMeanMs,
  indexMemoryEstimate,
  latencyOf,
  type ApproxRole,
  type ApproxRunInput,
  type ApproxTable,
} from '../core/eval/approximation';
import type { RetrieverConfig } from '../core/retrieval/runs';
import type { Dtype } from '../core/retrieval/models';
import { defaultNprobe } from '../core/retrieval/ivf';
import { approximationInWorker } from '../clients/stats-client';
import type { Jobs } from './jobs.svelte';
import type { Library } from './library.svelte';
import type { Messages } from './messages.svelte';
import type { Retrievers } from './retrievers.svelte';
import { modelSpec } from './retrievers.svelte';
import type { RunResult, RunStore } from './runs.svelte';
import type { AppPhase } from './phase';

export interface ApproximationHost {
  phase: AppPhase;
  readonly jobs: Jobs;
  readonly library: Library;
  readonly messages: Messages;
  readonly runs: RunStore;
  readonly retrievers: Retrievers;
}

type DenseConfig = Extract<RetrieverConfig, { kind: 'dense' }>;

/** A stored run as a row of the table. */
export interface ApproxCandidate extends ApproxRole {
  run: RunResult;
}

/**
 * The HNSW ef values run when missing, for runs of `depth` results: hnswlib searches with the larger
 * of ef and k (= the depth), so an ef below the depth ranks exactly as ef = depth; the grid starts at
 * the depth and doubles twice (100, 200, 400 at the usual depth).
 */
export function approxEfs(depth: number): number[] {
  return [1, 2, 4].map((m) => m * depth);
}

/** What the panel can run that is not stored yet. */
export interface MissingConfig {
  label: string;
  kind: 'exact' | 'hnsw' | 'ivf' | 'compact' | 'dtype';
  ef?: number;
  nprobe?: number;
  dtype?: Dtype;
  /** Exact search on a shard with a packed index: the index skipped, the corpus embedded here. */
  skipPacked?: boolean;
}

function dense(r: RunResult): DenseConfig | null {
  return r.meta.config.kind === 'dense' ? r.meta.config : null;
}

/** Same query handling (fusion, chunking, images): only the index or the dtype may differ. */
function sameVariant(a: DenseConfig, b: DenseConfig): boolean {
  return (
    (a.fusion?.mode ?? null) === (b.fusion?.mode ?? null) &&
    (a.fusion?.textWeight ?? null) === (b.fusion?.textWeight ?? null) &&
    (a.chunking?.aggregate ?? 'first') === (b.chunking?.aggregate ?? 'first') &&
    (a.multiImage ?? null) === (b.multiImage ?? null)
  );
}

export class ApproximationState {
  measure = $state('ndcg_cut_10');
  /** The model compared; '' follows the model of the task's newest dense run. */
  #modelId = $state('');
  /** Missing configurations being run: "k of n: label", null when none. */
  progress = $state<string | null>(null);
  #computed = $state.raw<Record<string, { request: string; table: ApproxTable }>>({});
  #stop = false;

  constructor(private app: ApproximationHost) {}

  /** Models with a dense run on the task, newest first. */
  get models(): string[] {
    const out: string[] = [];
    for (const r of this.app.runs.taskRuns) {
      const c = dense(r);
      if (c && !out.includes(c.modelId)) out.push(c.modelId);
    }
    return out;
  }

  get modelId(): string {
    return this.models.includes(this.#modelId) ? this.#modelId : (this.models[0] ?? '');
  }

  set modelId(id: string) {
    this.#modelId = id;
  }

  /** The model's exact run (newest plain run, fp32 or the model's first dtype preferred) and the others as rows. */
  get candidates(): { exact: ApproxCandidate | null; approx: ApproxCandidate[] } {
    const runs = this.app.runs.taskRuns.filter((r) => dense(r)?.modelId === this.modelId);
    const spec = modelSpec(this.modelId, this.app.retrievers.customModels);
    const plain = runs.filter((r) => {
      const c = dense(r)!;
      return !c.ann && !c.ivf && !c.index;
    });
    const prefer = ['fp32', ...(spec?.dtypes ?? [])];
    let exactRun: RunResult | undefined;
    for (const d of prefer) if ((exactRun = plain.find((r) => dense(r)!.dtype === d))) break;
    exactRun ??= plain[0];
    if (!exactRun) return { exact: null, approx: [] };
    const ec = dense(exactRun)!;
    const exact = { run: exactRun, ...approxRole(ec, ec.dtype) };
    const seen = new Set<string>([exact.label]);
    const approx: ApproxCandidate[] = [];
    for (const r of runs) {
      const c = dense(r)!;
      if (r === exactRun || !sameVariant(ec, c)) continue;
      const role = approxRole(c, ec.dtype);
      // Newest first: an older run of the same configuration is not a second row.
      if (role.kind === 'exact' || seen.has(role.label)) continue;
      seen.add(role.label);
      approx.push({ run: r, ...role });
    }
    approx.sort((a, b) => a.order - b.order);
    return { exact, approx };
  }

  /** Configurations the panel can run that are not among the rows. */
  get missing(): MissingConfig[] {
    const spec = modelSpec(this.modelId, this.app.retrievers.customModels);
    if (!spec) return [];
    const { exact, approx } = this.candidates;
    const out: MissingConfig[] = [];
    // A packed IVF index serves this model here when a stored run went through it: nprobe around its default.
    const ivfRuns = this.app.runs.taskRuns.flatMap((r) => {
      const c = dense(r);
      return c?.modelId === this.modelId && c.ivf ? [c.ivf] : [];
    });
    const packed = ivfRuns[0] ? { nlist: ivfRuns[0].nlist, nprobe: defaultNprobe(ivfRuns[0].nlist) } : null;
    if (!exact)
      out.push(
        packed
          ? { kind: 'exact', label: 'exact search (corpus embedded here)', skipPacked: true }
          : { kind: 'exact', label: 'exact search' },
      );
    if (packed) {
      const stored = new Set(ivfRuns.map((i) => i.nprobe));
      const grid = [
        Math.max(1, Math.round(packed.nprobe / 4)),
        packed.nprobe,
        Math.min(packed.nlist, packed.nprobe * 4),
      ];
      for (const nprobe of new Set(grid))
        if (!stored.has(nprobe)) out.push({ kind: 'ivf', nprobe, label: `IVF nprobe ${nprobe}` });
    }
    const local = out.length;
    this.#localRows(spec, exact, approx, out);
    // On a shard with a packed index these search here: the index is skipped for them.
    if (packed) for (const m of out.slice(local)) m.skipPacked = true;
    return out;
  }

  /** HNSW by ef, the two-pass scan and the other dtypes not stored yet (searched here, not on the host). */
  #localRows(
    spec: NonNullable<ReturnType<typeof modelSpec>>,
    exact: ApproxCandidate | null,
    approx: ApproxCandidate[],
    out: MissingConfig[],
  ) {
    const efs = new Set(approx.flatMap((a) => (a.kind === 'hnsw' ? [dense(a.run)!.ann!.efSearch] : [])));
    for (const ef of approxEfs(exact?.run.meta.depth ?? approx[0]?.run.meta.depth ?? 100))
      if (!efs.has(ef)) out.push({ kind: 'hnsw', ef, label: `HNSW ef ${ef}` });
    if (!approx.some((a) => a.kind === 'compact' && dense(a.run)!.index?.firstPass))
      out.push({ kind: 'compact', label: 'two-pass 4-bit scan' });
    const exactDtype = exact ? dense(exact.run)!.dtype : null;
    const dtypes = new Set(approx.flatMap((a) => (a.kind === 'dtype' ? [dense(a.run)!.dtype] : [])));
    for (const d of spec.dtypes)
      if (d !== exactDtype && !dtypes.has(d))
        out.push({ kind: 'dtype', dtype: d, label: `exact, ${d} encoder` });
  }

  get #where(): string {
    return `${this.app.library.shard?.summary.hash ?? ''}|${this.app.library.taskId}`;
  }

  get #request(): string {
    const { exact, approx } = this.candidates;
    return JSON.stringify([
      this.modelId,
      this.measure,
      exact?.run.meta.id ?? '',
      approx.map((a) => a.run.meta.id),
      this.app.runs.semantics,
    ]);
  }

  /** The table for the current runs and settings, if computed. */
  get current(): ApproxTable | null {
    const c = this.#computed[this.#where];
    return c && c.request === this.#request ? c.table : null;
  }

  /** Builds the table from the stored rows in the stats worker. */
  async build() {
    const { exact, approx } = this.candidates;
    if (!exact) {
      this.app.messages.error(
        `No exact run of ${this.modelId || 'a dense model'} on this task: run it first.`,
      );
      return;
    }
    const where = this.#where;
    const request = this.#request;
    const measure = this.measure;
    const n = this.app.library.shard?.summary.counts.docs ?? 0;
    const dim = modelSpec(this.modelId, this.app.retrievers.customModels)?.dim ?? 0;
    const input = (c: ApproxCandidate): ApproxRunInput => {
      const cfg = dense(c.run)!;
      return {
        id: c.run.meta.id,
        label: c.label,
        kind: c.kind,
        setting: c.setting,
        perQuery: new Map([...c.run.report.perQuery].map(([q, m]) => [q, m[measure]])),
        top: new Map([...c.run.run].map(([q, list]) => [q, list.slice(0, 10).map((d) => d.docId)])),
        latency: latencyOf(cfg),
        meanMs: hnswMeanMs(cfg),
        bytesPerQuery: dim ? bytesPerQueryOf(cfg, dim) : null,
        indexBytes: n && dim ? indexMemoryEstimate(cfg, n, dim) : null,
      };
    };
    const missingMeasure = [exact, ...approx].find((c) =>
      [...c.run.report.perQuery.values()].some((m) => typeof m[measure] !== 'number'),
    );
    if (missingMeasure) {
      this.app.messages.error(`${missingMeasure.run.meta.name} has no per-query ${measure}.`);
      return;
    }
    await this.app.jobs.run(
      `Quality under approximation: ${approx.length + 1} runs of ${this.modelId}`,
      'Comparing with exact search',
      async (job) => {
        const table = await approximationInWorker(
          { measure, exact: input(exact), approx: approx.map(input) },
          job.signal,
        );
        this.#computed = { ...this.#computed, [where]: { request, table } };
        performance.mark('loupe:approximation');
      },
      { revealAfterMs: 1000 },
    );
  }

  /** Stops after the configuration running now (its own job can be cancelled as any run). */
  stop() {
    this.#stop = true;
  }

  /**
   * Runs the missing configurations with the model, one after another, through the retrievers' own
   * dense runs (stored, reused like any other), the user's settings restored afterwards; then builds
   * the table. Stops at a run that did not finish (cancelled or failed) or at `stop()`. `labels`: only
   * these of `missing` (default: all).
   */
  async runMissing(labels?: readonly string[]): Promise<void> {
    const todo = this.missing.filter((m) => !labels || labels.includes(m.label));
    if (!todo.length) return this.build();
    const r = this.app.retrievers;
    const saved = {
      kind: r.kind,
      model: r.pickedDenseModel,
      dtype: r.dtype,
      denseSearch: r.denseSearch,
      efSearch: r.ann.efSearch,
      compactFrom: r.compactFrom,
      packed: r.packed,
    };
    const exactDtype = this.candidates.exact ? dense(this.candidates.exact.run)!.dtype : 'auto';
    this.#stop = false;
    let stopped = false;
    try {
      r.kind = 'dense';
      r.denseModelId = this.modelId;
      for (const [i, m] of todo.entries()) {
        if (this.#stop) {
          stopped = true;
          break;
        }
        this.progress = `${i + 1} of ${todo.length}: ${m.label}`;
        r.dtype = m.kind === 'dtype' ? m.dtype! : (exactDtype as Dtype | 'auto');
        r.denseSearch = m.kind === 'hnsw' ? 'hnsw' : 'exact';
        if (m.ef) r.ann = { ...r.ann, efSearch: m.ef };
        // The compact store from the first document: the two-pass scan whatever the corpus size.
        r.compactFrom = m.kind === 'compact' ? 1 : saved.compactFrom;
        r.packed = m.nprobe ? { nprobe: m.nprobe, cold: true } : m.skipPacked ? { skip: true } : saved.packed;
        // A stored run of the same settings (exact, or through the packed index) must not stand in for these.
        const reuse = m.kind !== 'compact' && m.kind !== 'ivf' && !m.skipPacked;
        await r.runDense(this.app.library.taskId, false, reuse);
        if (this.app.phase !== 'done') {
          stopped = true;
          break;
        }
      }
    } finally {
      r.kind = saved.kind;
      r.denseModelId = saved.model ?? '';
      r.dtype = saved.dtype;
      r.denseSearch = saved.denseSearch;
      r.ann = { ...r.ann, efSearch: saved.efSearch };
      r.compactFrom = saved.compactFrom;
      r.packed = saved.packed;
      this.progress = null;
    }
    if (stopped)
      this.app.messages.warn('Quality under approximation: stopped before every configuration ran.');
    await this.build();
  }
}
