// Cross-encoder reranking of a stored run: the top N documents of each query reordered by a
// cross-encoder into a new stored run (core/rerank.ts), with progress in (query, document) pairs.
import type { Run } from '../core/types';
import type { RetrieverConfig } from '../core/retrieval/runs';
import { pairText, rerankRun as rerankTopN } from '../core/retrieval/rerank';
import {
  RERANKER_REGISTRY,
  encoderBackend,
  loadEncoder,
  rerankPairs,
  rerankerModel,
  type LoadOptions,
} from '../clients/encoder-client';
import { Job } from './jobs.svelte';
import type { Jobs } from './jobs.svelte';
import type { Library } from './library.svelte';
import type { Messages } from './messages.svelte';
import type { Retrievers } from './retrievers.svelte';
import type { RunStore } from './runs.svelte';
import { withOfflineChoices } from './hub-fallback';
import type { StorageState } from './storage.svelte';
import type { AppPhase } from './phase';
import type { RunResult } from './runs.svelte';

/** What this module needs of the page's state (App composes it and passes itself). */
/** Every document that can be in a query's top `n` (ties at the n-th score included), over all queries. */
function topDocIds(run: Run, n: number): Set<string> {
  const out = new Set<string>();
  for (const list of run.values()) {
    if (list.length <= n) {
      for (const d of list) out.add(d.docId);
      continue;
    }
    const nth = list.map((d) => d.score).sort((a, b) => b - a)[n - 1];
    for (const d of list) if (!(d.score < nth)) out.add(d.docId);
  }
  return out;
}

export interface RerankHost {
  phase: AppPhase;
  failedPhase(): AppPhase;
  readonly jobs: Jobs;
  readonly library: Library;
  readonly messages: Messages;
  readonly retrievers: Retrievers;
  readonly runs: RunStore;
  readonly storage: StorageState;
}

export class Reranker {
  /** Cross-encoder (registry id) and how many documents per query it reorders. */
  #modelId = $state<string | null>(null);
  topN = $state(20);

  constructor(private app: RerankHost) {}

  /** The cross-encoder: the one picked, else the registry's first that can load now (hub or not). */
  get modelId(): string {
    return this.#modelId ?? this.app.storage.usable(RERANKER_REGISTRY[0])?.id ?? '';
  }

  set modelId(id: string) {
    this.#modelId = id;
  }

  /**
   * Why a run cannot be reranked with a cross-encoder (null when it can): cross-encoders read
   * (query text, document text) pairs, so the run's task needs text queries and text documents.
   */
  blocker(r: RunResult | null): string | null {
    const s = this.app.library.shard;
    if (!s || !r) return 'open a shard and pick a run first.';
    if (RERANKER_REGISTRY.length === 0) return 'the model registry lists no cross-encoder.';
    const task = s.summary.manifest.tasks.find((t) => t.id === r.meta.taskId);
    if (!task) return `task ${r.meta.taskId} is not in this shard.`;
    if (task.queryModality !== 'text' || task.corpusModality !== 'text')
      return (
        `cross-encoders read text pairs, and task ${task.id} has ${task.queryModality} queries and ` +
        `${task.corpusModality} documents.`
      );
    return null;
  }

  /**
   * Reranks the top N documents of each query of a stored run with a cross-encoder (on the dense
   * backend setting) into a new stored run; documents below N keep their order after them
   * (core/rerank.ts). Progress counts (query, document) pairs; cancel stores nothing.
   */
  async rerank(runId: string, modelId: string, topN: number) {
    const s = this.app.library.shard;
    const input = this.app.runs.byId(runId) ?? null;
    const spec = rerankerModel(modelId);
    const blocked = this.blocker(input);
    const msg = this.app.messages;
    if (blocked || !s || !input) return void msg.error(`Cannot rerank: ${blocked}`);
    if (!spec) return void msg.error(`Cannot rerank: ${modelId} is not a cross-encoder of the registry.`);
    if (!Number.isInteger(topN) || topN < 1)
      return void msg.error('Cannot rerank: N must be a whole number of at least 1.');
    const label = spec.label ?? spec.id;
    const r = this.app.retrievers;
    this.app.phase = 'running';
    const t0 = performance.now();
    const job = new PairsJob(`Reranking with ${label}`);
    const ok = await this.app.jobs.run(
      job.label,
      'Reranking',
      async () => {
        const dtype = r.dtype === 'auto' || spec.dtypes.includes(r.dtype) ? r.dtype : 'auto';
        const encoder = await loadEncoder(spec, {
          device: r.device,
          dtype,
          simulateWebGpuFailure: r.simulateWebGpuFailure,
          signal: job.signal,
          onProgress: job.onProgress,
        }).catch(async (e: unknown) => Promise.reject(await withOfflineChoices(this.app.storage, e, spec)));
        r.encoder = encoder;
        // Later loads (after a cancel or a WebGPU failure) keep what this one chose.
        const chosen: LoadOptions = { device: encoder.device, dtype: encoder.dtype };
        // The candidates' documents, read from the shard's store (the page holds no corpus at size).
        const docs = await s.docs.load(topDocIds(input.run, topN));
        const t1 = performance.now();
        const result = await rerankTopN(input.run, {
          topN,
          queryText: (q) => s.queryById.get(q)?.text,
          docText: (d) => {
            const doc = docs.get(d);
            return doc ? pairText(doc) : undefined;
          },
          score: (q, docs) =>
            rerankPairs(
              spec,
              q.text,
              docs.map((d) => d.text),
              { signal: job.signal, load: chosen },
            ),
          onProgress: (done, total) => job.pairs(done, total, performance.now() - t1),
        });
        // A WebGPU failure during the run moved the model to WASM: record where it really ran.
        const backend = await encoderBackend().catch(() => null);
        const config: RetrieverConfig = {
          kind: 'rerank',
          modelId: spec.id,
          revision: spec.revision,
          dtype: backend?.dtype ?? encoder.dtype,
          device: backend?.device ?? encoder.device,
          deviceReason: backend?.deviceReason ?? encoder.deviceReason,
          topN,
          input: input.meta.id,
        };
        await this.app.runs.add(
          this.app.runs.meta({
            name: `${input.meta.name} · top ${topN} reranked by ${label}`,
            taskId: input.meta.taskId,
            config,
            depth: input.meta.depth,
            ms: performance.now() - t0,
          }),
          result.run,
        );
        const notes = [
          result.queriesWithoutText.length
            ? `${result.queriesWithoutText.length} queries without text kept as they were`
            : '',
          result.docsWithoutText
            ? `${result.docsWithoutText} top-${topN} documents without text kept below the reranked ones`
            : '',
        ].filter(Boolean);
        msg.info(
          `Reranked ${result.pairs.toLocaleString('en')} pairs in ${((performance.now() - t1) / 1000).toFixed(1)} s.` +
            (notes.length ? ` ${notes.join('; ')}.` : ''),
        );
        return true;
      },
      { job, cancelled: 'Reranking cancelled; no run was stored.' },
    );
    this.app.phase = ok ? 'done' : this.app.failedPhase();
  }
}

/** A job whose bar follows (query, document) pairs scored once scoring starts (model loading before). */
class PairsJob extends Job {
  #done = $state(0);
  #total = $state(0);

  /** Scoring progress: pairs done of total, `ms` since scoring started. */
  pairs(done: number, total: number, ms: number) {
    this.#done = done;
    this.#total = total;
    const rate = ms > 0 ? (done / ms) * 1000 : 0;
    this.onProgress({
      kind: 'status',
      message:
        `Reranking: ${done.toLocaleString('en')} / ${total.toLocaleString('en')} pairs` +
        (rate > 0 ? ` · ${rate.toFixed(0)} pairs/s` : ''),
    });
  }

  override get fraction(): number | null {
    return this.#total > 0 ? this.#done / this.#total : super.fraction;
  }
}
