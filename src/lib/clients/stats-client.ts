import type { StatsWorkerApi } from '../../../workers/stats.worker';
import { WorkerClient, proxyProgress, type JobOptions } from './worker-client';

const client = new WorkerClient<StatsWorkerApi>(
  () => new Worker(new URL('../../../workers/stats.worker.ts', import.meta.url), { type: 'module' }),
);

type Api = StatsWorkerApi;

/** Runs a comparison in the stats worker; abort terminates it. */
export function compareInWorker(args: Parameters<Api['compare']>[0], signal?: AbortSignal) {
  return client.run((r) => r.compare(args), signal);
}

/** Metric@k curves in the stats worker. */
export function curvesInWorker(...args: Parameters<Api['curves']>) {
  return client.run((r) => r.curves(...args));
}

/** Each measure's overall mean over tie orders (best-first, worst-first), in the stats worker. */
export function tieRangeInWorker(...args: Parameters<Api['tieRange']>) {
  return client.run((r) => r.tieRange(...args));
}

/** Tunes a fusion by cross-validation in the stats worker, with progress; abort terminates it. */
export function tuneFusionInWorker(
  runs: Parameters<Api['tuneFusion']>[0],
  qrels: Parameters<Api['tuneFusion']>[1],
  opts: Parameters<Api['tuneFusion']>[2],
  job: JobOptions = {},
) {
  return client.run((r) => r.tuneFusion(runs, qrels, opts, proxyProgress(job.onProgress)), job.signal);
}

/** All pairs of N runs on one measure (Tukey's HSD or its randomized version); abort terminates it. */
export function allPairsInWorker(args: Parameters<Api['allPairs']>[0], signal?: AbortSignal) {
  return client.run((r) => r.allPairs(args), signal);
}

/** The quality-under-approximation table; abort terminates it. */
export function approximationInWorker(args: Parameters<Api['approximation']>[0], signal?: AbortSignal) {
  return client.run((r) => r.approximation(args), signal);
}

/** All pairs on each task and on the tasks pooled; abort terminates it. */
export function allPairsAcrossTasksInWorker(
  args: Parameters<Api['allPairsAcrossTasks']>[0],
  signal?: AbortSignal,
) {
  return client.run((r) => r.allPairsAcrossTasks(args), signal);
}
