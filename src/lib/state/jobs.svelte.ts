import type { Progress } from '../core/types';
import {
  formatBytes,
  phaseOf,
  progressText,
  DownloadTally,
  type CountSample,
  type DownloadSample,
  type JobPhase,
} from './progress-story';
import { isAbortError } from '../clients/worker-client';
import { foreground } from '../platform/page/activity';
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

  /** When the current download's rate is measured from (its file's first tick). */
  #download: DownloadSample | null = null;
  /** The time of the last tick (the rate and the time left are computed as of it). */
  #at = 0;
  /** The counted step under way (index, search, store): its time left is measured from its first tick. */
  #counted: CountSample | null = null;
  #phase: { name: JobPhase; start: number } | null = null;
  /** Every phase the job went through (a query that loaded its model says so with its time). */
  readonly phases = new Set<JobPhase>();
  /** Corpus documents embedded by the model in this job, and read from embeddings stored before. */
  readonly corpus = { computed: 0, reused: 0 };

  /** Progress callback to hand to a worker client. */
  /** The model files downloading in this step, shown as one line. */
  #tally = new DownloadTally();

  onProgress = (tick: Progress) => {
    const now = performance.now();
    const p = this.#tally.take(tick);
    if (!p) return;
    // The rate is measured from the first file's first tick; a file joining renames the line only.
    if (p.kind === 'download')
      this.#download =
        this.#download && this.progress?.kind === 'download'
          ? { ...this.#download, file: p.file }
          : { file: p.file, at: now, loaded: p.loaded };
    // A counted step starts again with a new kind, or when its count goes back (the next index).
    if (
      (p.kind === 'index' || p.kind === 'search' || p.kind === 'store') &&
      (this.#counted?.kind !== p.kind || p.done < this.#counted.done)
    )
      this.#counted = { kind: p.kind, at: now, done: p.done };
    this.#at = now;
    const phase = phaseOf(p);
    this.phases.add(phase);
    if (this.#phase?.name !== phase) {
      this.endPhase(now);
      this.#phase = { name: phase, start: now };
    }
    if (p.kind === 'embed' && !p.items) {
      const reused = p.reused ?? 0;
      this.corpus.reused = Math.max(this.corpus.reused, reused);
      this.corpus.computed = Math.max(this.corpus.computed, p.done - reused - (p.precomputed ?? 0));
    }
    this.progress = p;
    // A query that loads a model or embeds the corpus is not a quick one: its story shows at once.
    if (!this.shown && phase !== 'search' && phase !== 'other') this.shown = true;
  };

  cancel() {
    this.#controller.abort();
  }

  /** 0..1 when the current step has a total, else null (indeterminate). */
  get fraction(): number | null {
    const p = this.progress;
    if (!p) return null;
    if (p.kind === 'read' || p.kind === 'parse')
      return p.totalBytes && p.bytes !== undefined ? p.bytes / p.totalBytes : null;
    if (p.kind === 'download') return p.total ? p.loaded / p.total : null;
    if (p.kind === 'store' || p.kind === 'index' || p.kind === 'search' || p.kind === 'embed')
      return p.total ? p.done / p.total : null;
    return null;
  }

  get text(): string {
    const p = this.progress;
    return p ? progressText(p, this.#download, this.#at, this.#counted) : this.label;
  }

  /** The phase the job is in (what its progress says it does), or null before its first tick. */
  get phase(): JobPhase | null {
    return this.#phase?.name ?? null;
  }

  /** Ends the current phase's `loupe:phase:<name>` measure (called as each phase ends, and at the job's end). */
  endPhase(now = performance.now()) {
    const cur = this.#phase;
    if (!cur) return;
    this.#phase = null;
    try {
      performance.measure(`loupe:phase:${cur.name}`, { start: cur.start, end: now });
    } catch {
      // A page without the User Timing API: the line works without the timings.
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
      return await foreground(fn(job));
    } catch (e) {
      if (isAbortError(e)) this.messages.info(opts.cancelled ?? `${what}: cancelled.`);
      else {
        console.error(e);
        this.messages.error(`${what} failed: ${e instanceof Error ? e.message : String(e)}`);
      }
      return undefined;
    } finally {
      clearTimeout(reveal);
      job.endPhase();
      if (this.current === job) this.current = null;
    }
  }

  cancel() {
    this.current?.cancel();
  }
}

export { formatBytes };

export { isAbortError };
