// The words of a job's progress line: what it does now (downloading a model file with its rate and
// the time left, compiling, embedding the corpus or using the shard's precomputed embeddings,
// searching…), and the phase each progress tick belongs to, for the timing of each phase.
import type { Progress } from '../core/types';

/** A job's phases, as timed (`loupe:phase:<name>` measures) and as `bench:first-query` reports them. */
export type JobPhase =
  | 'read'
  | 'parse'
  | 'store'
  | 'index'
  | 'search'
  | 'download'
  | 'load'
  | 'prepare'
  | 'compile'
  | 'embed'
  | 'queries'
  | 'precomputed'
  | 'reuse'
  | 'other';

/** The phase a progress tick belongs to. */
export function phaseOf(p: Progress): JobPhase {
  switch (p.kind) {
    case 'index':
      return p.what === 'ids' ? 'store' : 'index';
    case 'read':
    case 'parse':
    case 'store':
    case 'search':
    case 'download':
    case 'compile':
      return p.kind;
    case 'embed':
      if (p.items) return 'queries';
      return p.from === 'precomputed' ? 'precomputed' : p.done > 0 && p.reused === p.done ? 'reuse' : 'embed';
    case 'status':
      return /^Loading /.test(p.message)
        ? 'load'
        : /^Preparing the model/.test(p.message)
          ? 'prepare'
          : 'other';
  }
}

/** A model file's start ("Loading onnx/model.onnx") and the session's preparation after a file is in. */
const FILE_STATUS = /^(Loading \S+|Preparing the model.*)$/;

/**
 * A model's files as they download side by side (the tokenizer's beside the weights): one line for
 * all of them, summed, instead of a line that flips between the files, "Loading" the next one and
 * "Preparing the model" while another is still coming in.
 */
export class DownloadTally {
  #files = new Map<string, { loaded: number; total?: number }>();

  /** The tick to show for `p` (downloads summed), or null to keep the line as it is. */
  take(p: Progress): Progress | null {
    if (p.kind === 'download') {
      this.#files.set(p.file, { loaded: p.loaded, total: p.total });
      return this.sum();
    }
    if (p.kind === 'status' && FILE_STATUS.test(p.message)) return this.busy() ? null : p;
    this.#files.clear();
    return p;
  }

  /** Whether a file is still coming in (its length unknown or not reached). */
  busy(): boolean {
    for (const f of this.#files.values()) if (f.total === undefined || f.loaded < f.total) return true;
    return false;
  }

  sum(): Progress {
    let loaded = 0;
    let total: number | undefined = 0;
    let big = '';
    let bigSize = -1;
    for (const [file, f] of this.#files) {
      loaded += f.loaded;
      total = total === undefined || f.total === undefined ? undefined : total + f.total;
      if ((f.total ?? f.loaded) > bigSize) [big, bigSize] = [file, f.total ?? f.loaded];
    }
    const more = this.#files.size - 1;
    const file = more ? `${big} and ${more} more file${more > 1 ? 's' : ''}` : big;
    return { kind: 'download', file, loaded, total };
  }
}

/** A download's first sample (per file): its rate is measured from there. */
export interface DownloadSample {
  file: string;
  at: number;
  loaded: number;
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

/** Seconds as the line shows them: "4 s", "2 min 5 s". */
export function formatSeconds(s: number): string {
  const n = Math.max(1, Math.ceil(s));
  return n < 60 ? `${n} s` : `${Math.floor(n / 60)} min ${n % 60} s`;
}

const count = (n: number) => n.toLocaleString('en');

/** " · 1,234 docs/s · 2 min 5 s left" (the parts that are known). */
function rates(perSec: number | undefined, eta: number | undefined, unit: string): string {
  return (
    (perSec ? ` · ${count(Math.round(perSec))} ${unit}/s` : '') +
    (eta !== undefined && eta > 0 ? ` · ${formatSeconds(eta)} left` : '')
  );
}

/** A counted step's first sample (index, search, store): its time left is measured from there. */
export interface CountSample {
  kind: Progress['kind'];
  at: number;
  done: number;
}

/** " · 2 min 5 s left" for a counted step, once a second of it has passed and it has moved on. */
function countedLeft(
  p: { kind: Progress['kind']; done: number; total: number },
  since: CountSample | null,
  now: number,
) {
  if (!since || since.kind !== p.kind || p.done >= p.total) return '';
  const dt = (now - since.at) / 1000;
  const moved = p.done - since.done;
  return dt >= 1 && moved > 0 ? ` · ${formatSeconds(((p.total - p.done) * dt) / moved)} left` : '';
}

/**
 * The progress line. `since`: the download's first sample of this file (the rate is measured from
 * it once a quarter second has passed), `now`: the time of this tick; `counted`: the first sample of
 * the counted step under way (index, search, store), for its time left.
 */
export function progressText(
  p: Progress,
  since: DownloadSample | null,
  now: number,
  counted: CountSample | null = null,
): string {
  switch (p.kind) {
    case 'read':
      return (
        `Reading ${p.file}: ${formatBytes(p.bytes)}${p.totalBytes ? ` of ${formatBytes(p.totalBytes)}` : ''}` +
        rates(
          p.docsPerSec,
          p.etaSeconds,
          /corpus\.jsonl$/.test(p.file) ? 'docs' : /\.parquet$/.test(p.file) ? 'rows' : 'lines',
        )
      );
    case 'parse': {
      // With the bytes read of the file (and its length when known): the rate and the time left.
      const row = /\.parquet$/.test(p.file);
      const read =
        p.bytes === undefined
          ? ''
          : ` (${formatBytes(p.bytes)}${p.totalBytes ? ` of ${formatBytes(p.totalBytes)}` : ''})`;
      return (
        `Parsing ${p.file}: ${row ? 'row' : 'line'} ${count(p.lines)}${read}` +
        rates(p.docsPerSec, p.etaSeconds, /corpus\.jsonl$/.test(p.file) ? 'docs' : row ? 'rows' : 'lines')
      );
    }
    case 'store': {
      if (p.what !== 'documents' || p.docTotal === undefined)
        return `Caching in IndexedDB: ${count(p.done)} / ${count(p.total)}` + countedLeft(p, counted, now);
      // Counted in documents, as the offer to resume an import that stopped counts them; the
      // queries, judgements and images stored after them are counted on their own.
      const rest = p.total - p.docTotal;
      const left = rates(p.docsPerSec, p.etaSeconds, 'records');
      if (p.done < p.docTotal || rest === 0)
        return (
          `Caching in IndexedDB: ${count(Math.min(p.done, p.docTotal))} / ${count(p.docTotal)} documents` +
          (rest ? ` (then ${count(rest)} queries, judgements and images)` : '') +
          left
        );
      return (
        `Caching in IndexedDB: ${count(p.docTotal)} documents, ` +
        `${count(p.done - p.docTotal)} / ${count(rest)} queries, judgements and images${left}`
      );
    }
    case 'index':
      return (
        (p.what === 'ids'
          ? `Indexing document ids: ${count(p.done)} / ${count(p.total)}`
          : `Indexing: ${count(p.done)} / ${count(p.total)} documents`) + countedLeft(p, counted, now)
      );
    case 'search':
      return `Searching: ${count(p.done)} / ${count(p.total)} queries` + countedLeft(p, counted, now);
    case 'download': {
      let line = `Downloading ${p.file}: ${formatBytes(p.loaded)}${p.total ? ` of ${formatBytes(p.total)}` : ''}`;
      const dt = since && since.file === p.file ? (now - since.at) / 1000 : 0;
      if (dt >= 0.25 && p.loaded > since!.loaded) {
        const rate = (p.loaded - since!.loaded) / dt;
        line += ` · ${formatBytes(rate)}/s`;
        if (p.total && p.total > p.loaded) line += ` · ${formatSeconds((p.total - p.loaded) / rate)} left`;
      }
      return line;
    }
    case 'compile':
      // Every load runs the model once before its first use (each worker compiles its kernels anew).
      return `Warming up ${p.model} on ${p.device} (compiling its kernels)`;
    case 'embed': {
      if (p.items) return `Embedding the ${p.items}: ${count(p.done)} / ${count(p.total)}`;
      const of = `${count(p.done)} / ${count(p.total)} documents`;
      if (p.from === 'precomputed') return `Using the shard's precomputed embeddings: ${of}`;
      if (p.done > 0 && p.reused === p.done) return `Reading the stored corpus embeddings: ${of}`;
      // Before the first batch it is not known yet whether batches stored earlier cover the corpus.
      if (p.done === 0) return `Corpus embeddings: ${of}`;
      const eta = p.etaSeconds ?? (p.docsPerSec > 0 ? (p.total - p.done) / p.docsPerSec : null);
      return (
        `Embedding the corpus: ${of}` +
        (p.docsPerSec > 0 ? ` · ${p.docsPerSec.toFixed(1)} docs/s` : '') +
        (eta !== null && p.done < p.total ? ` · ${formatSeconds(eta)} left` : '')
      );
    }
    case 'status':
      return p.message;
  }
}
