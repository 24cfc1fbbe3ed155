import type { Progress } from '../core/types';
import { isAbortError } from '../clients/worker-client';
import type { Messages } from './messages.svelte';

/** A long-running job the UI shows with progress and a cancel button. */
export class Job {
  label: string;
  progress = $state<Progress | null>(null);
  startedAt = performance.now();
  /** Whether the UI shows the job's bar yet (a quick job is never shown: no flash, no layout shift). */
  shown = $state(true);
  #controller = new AbortController();

  constructor(label: string) {
    this.label = label;
  }

  get signal() {
    return this.#controller.signal;
  }

  /** Progress callback to hand to a worker client. */
  onProgress = (p: Progress) => {
    this.progress = p;
  };

  cancel() {
    this.#controller.abort();
  }

  /** 0..1 when the current step has a total, else null (indeterminate). */
  get fraction(): number | null {
    const p = this.progress;
    if (!p) return null;
    if (p.kind === 'read') return p.totalBytes ? p.bytes / p.totalBytes : null;
    if (p.kind === 'store' || p.kind === 'index' || p.kind === 'search')
      return p.total ? p.done / p.total : null;
    return null;
  }

  get text(): string {
    const p = this.progress;
    if (!p) return this.label;
    switch (p.kind) {
      case 'read':
        return `Reading ${p.file}: ${formatBytes(p.bytes)}${p.totalBytes ? ` of ${formatBytes(p.totalBytes)}` : ''}`;
      case 'parse':
        return `Parsing ${p.file}: line ${p.lines.toLocaleString('en')}`;
      case 'store':
        return `Caching in IndexedDB: ${p.done.toLocaleString('en')} / ${p.total.toLocaleString('en')}`;
      case 'index':
        return `Indexing: ${p.done.toLocaleString('en')} / ${p.total.toLocaleString('en')} documents`;
      case 'search':
        return `Searching: ${p.done.toLocaleString('en')} / ${p.total.toLocaleString('en')} queries`;
      case 'download':
        return `Downloading ${p.file}: ${formatBytes(p.loaded)}${p.total ? ` of ${formatBytes(p.total)}` : ''}`;
      case 'embed': {
        const eta = p.docsPerSec > 0 ? Math.ceil((p.total - p.done) / p.docsPerSec) : null;
        return `Embedding: ${p.done.toLocaleString('en')} / ${p.total.toLocaleString('en')} · ${p.docsPerSec.toFixed(1)} docs/s${eta !== null ? ` · ${eta} s left` : ''}`;
      }
      case 'status':
        return p.message;
    }
  }
}

/**
 * The one job the page runs at a time (import, index, run, embed, compare): shown with progress and
 * a cancel button. `run` wraps an action so that a cancel, an error and the job's end are handled
 * the same way everywhere.
 */
export class Jobs {
  current = $state<Job | null>(null);

  constructor(private messages: Messages) {}

  /**
   * A job the user can see runs (other actions wait). A quick job not shown yet (an ad-hoc query)
   * guards itself, so nothing on the page changes during it.
   */
  get busy(): boolean {
    return this.current !== null && this.current.shown;
  }

  /**
   * Runs `fn` as the current job. A failure is posted as an error naming `what` (and returns
   * undefined); a cancel posts `cancelled` (or a plain note) as information.
   */
  async run<T>(
    label: string,
    what: string,
    fn: (job: Job) => Promise<T>,
    opts: { job?: Job; cancelled?: string; revealAfterMs?: number } = {},
  ): Promise<T | undefined> {
    const job = opts.job ?? new Job(label);
    let reveal: ReturnType<typeof setTimeout> | undefined;
    if (opts.revealAfterMs) {
      job.shown = false;
      reveal = setTimeout(() => (job.shown = true), opts.revealAfterMs);
    }
    this.current = job;
    this.messages.clearInfo();
    try {
      return await fn(job);
    } catch (e) {
      if (isAbortError(e)) this.messages.info(opts.cancelled ?? `${what}: cancelled.`);
      else {
        console.error(e);
        this.messages.error(`${what} failed: ${e instanceof Error ? e.message : String(e)}`);
      }
      return undefined;
    } finally {
      clearTimeout(reveal);
      if (this.current === job) this.current = null;
    }
  }

  cancel() {
    this.current?.cancel();
  }
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

export { isAbortError };
