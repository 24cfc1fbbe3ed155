// Permalinks of the Benchmark view: the URL names the shard, the task and the compared retrievers
// (with parameters), so a link restores the screen; opening one reuses stored runs with the same
// configuration and runs only what is missing.
import {
  formatFuseSpec,
  formatRunSpec,
  fuseSpecOf,
  parseFuseSpec,
  parseRunSpecs,
  specMatches,
  specOf,
  type FuseSpec,
  type RunSpec,
} from '../core/eval/permalink';
import type { Dtype } from '../core/retrieval/models';
import type { Device } from '../platform/gpu/backend';
import { densePlan } from '../core/retrieval/dense-plan';
import { modelSpec } from './retrievers.svelte';
import type { CompareState } from './compare.svelte';
import type { Library } from './library.svelte';
import type { Messages } from './messages.svelte';
import type { Retrievers } from './retrievers.svelte';
import type { RunStore } from './runs.svelte';
import type { AppPhase } from './phase';

/** What this module needs of the page's state (App composes it and passes itself). */
export interface LinksHost {
  phase: AppPhase;
  readonly compare: CompareState;
  readonly library: Library;
  readonly messages: Messages;
  readonly retrievers: Retrievers;
  readonly runs: RunStore;
}

/** Reopens a shared comparison (see the header comment); `compare=1` computes it. */
export async function openPermalink(app: LinksHost, params: URLSearchParams) {
  const { library, runs, retrievers, compare, messages } = app;
  let specs: RunSpec[];
  let fuseSpec: FuseSpec | null = null;
  try {
    specs = parseRunSpecs(params.get('runs') ?? '');
    if (params.get('fuse')) fuseSpec = parseFuseSpec(params.get('fuse')!);
  } catch (e) {
    messages.error(`Reading the link failed: ${e instanceof Error ? e.message : String(e)}`, 'shard');
    return;
  }
  const ids: string[] = [];
  const skipped: string[] = [];
  for (const spec of specs) {
    // A retriever that cannot serve this task (BM25 or a text encoder on image-only queries) is skipped.
    const task = library.task;
    const dense = spec.kind === 'dense' ? (modelSpec(spec.model, retrievers.customModels) ?? null) : null;
    if (
      task &&
      (spec.kind === 'bm25' ? task.queryModality === 'image' : dense ? !densePlan(dense, task).canRun : true)
    ) {
      skipped.push(formatRunSpec(spec));
      continue;
    }
    let found = runs.taskRuns.filter((r) => specMatches(spec, r.meta.config));
    if (!found.length) {
      const before = new Set(runs.all.map((r) => r.meta.id));
      if (spec.kind === 'bm25') {
        retrievers.kind = 'bm25';
        retrievers.bm25 = { ...retrievers.bm25, k1: spec.k1, b: spec.b };
        await retrievers.runBm25();
      } else {
        retrievers.kind = 'dense';
        retrievers.denseModelId = spec.model;
        retrievers.dtype = spec.dtype as Dtype | 'auto';
        retrievers.device = spec.device as Device | 'auto';
        retrievers.fusionMode = spec.fusion;
        retrievers.textWeight = spec.alpha;
        retrievers.denseSearch = 'exact';
        retrievers.chunking = {
          aggregate: spec.chunks ?? 'first',
          overlap: spec.overlap ?? retrievers.chunking.overlap,
        };
        retrievers.multiImageMode = spec.images ?? 'first';
        await retrievers.runDense();
      }
      if (app.phase !== 'done') return;
      found = runs.taskRuns.filter((r) => !before.has(r.meta.id) && specMatches(spec, r.meta.config));
    }
    // The newest run of each configuration (a dense `both` spec has a score and a feature run).
    const seen = new Set<string>();
    for (const r of found) {
      const key = JSON.stringify(r.meta.config);
      if (seen.has(key)) continue;
      seen.add(key);
      if (!ids.includes(r.meta.id)) ids.push(r.meta.id);
    }
  }
  compare.setPicks(ids);
  if (fuseSpec && ids.length >= 2) {
    const fused = await compare.fuseSpec(fuseSpec);
    if (fused) ids.push(fused.meta.id);
    compare.setPicks(ids);
  }
  // baseline=<a runs= spec> or baseline=fuse; default: the first run.
  const want = params.get('baseline');
  let baseline: string | undefined;
  if (want === 'fuse') baseline = ids.at(-1);
  else if (want) {
    try {
      const [spec] = parseRunSpecs(want);
      baseline = ids.find((id) => spec && specMatches(spec, runs.byId(id)!.meta.config));
    } catch {
      // An unreadable baseline falls back to the first run.
    }
  }
  compare.baselineId = baseline ?? ids[0] ?? null;
  if (ids.length) runs.select(ids[0]);
  app.phase = 'done';
  if (skipped.length)
    messages.warn(`Not run on ${library.taskId} (cannot serve its queries): ${skipped.join('; ')}.`);
  if (params.get('compare') === '1' && ids.length >= 2) await compare.compare();
}

/**
 * A URL that reopens the current comparison of the selected task (null when a compared run
 * cannot be described: imports and reranks have no spec). Derived from the picks, never stored.
 */
export function permalinkOf(app: LinksHost): string | null {
  const s = app.library.shard;
  if (!s) return null;
  const picked = app.compare.picked;
  const specs: string[] = [];
  let fuse: string | null = null;
  for (const r of picked) {
    const c = r.meta.config;
    if (c.kind === 'fusion') {
      // A tuning on a grid of its own cannot be written in the link.
      const f = fuseSpecOf(c);
      if (!f) return null;
      fuse = formatFuseSpec(f);
      continue;
    }
    const spec = specOf(c);
    if (!spec) return null;
    const f = formatRunSpec(spec);
    if (!specs.includes(f)) specs.push(f);
  }
  const u = new URL(location.href);
  u.search = '';
  u.hash = '#/benchmark';
  // A URL shard reopens anywhere; a folder or zip shard only where it is cached (by content hash).
  if (/^https?:\/\//.test(s.summary.sourceLabel)) u.searchParams.set('shard', s.summary.sourceLabel);
  else u.searchParams.set('cached', s.summary.hash);
  u.searchParams.set('task', app.library.taskId);
  u.searchParams.set('runs', specs.join(';'));
  if (fuse) u.searchParams.set('fuse', fuse);
  const base = picked.find((r) => r.meta.id === app.compare.baselineId);
  if (base) {
    const spec = specOf(base.meta.config);
    u.searchParams.set(
      'baseline',
      spec ? formatRunSpec(spec) : base.meta.config.kind === 'fusion' ? 'fuse' : '',
    );
  }
  u.searchParams.set('compare', '1');
  // Runs made with generated random-weight models say so in the link itself.
  if (picked.some((r) => r.meta.randomWeights)) u.searchParams.set('random-weights', '1');
  return u.href;
}
