// Builds a BM25 index from documents given in batches, never holding the whole corpus: each batch
// is analysed into a segment (that batch's postings, grouped by term, already in the final
// variable-length encoding), and finish() lays the segments out term by term in the final arrays
// (bm25-index.ts). Peak memory is about the final index plus its postings once more (the segments)
// plus one batch of documents. Because documents arrive in order and each posting's gap is taken
// from the term's previous document in the whole corpus, a term's final postings are its segments'
// bytes concatenated: the result does not depend on how the corpus was cut into batches.
import { analyzerIdForLanguage, getAnalyzer, loadAnalyzers, type AnalyzerId } from './analyzers';
import { throttle } from '../throttle';
import { compareUtf8 } from './topk';
import type { ProgressFn } from '../types';
import {
  assemble,
  checkParams,
  DEFAULT_BM25_PARAMS,
  varintLength,
  writeVarint,
  type Bm25Index,
  type Bm25Params,
} from './bm25-index';

/** The fields of a document BM25 reads; it indexes `title + " " + text`. */
export interface Bm25Doc {
  id: string;
  title: string;
  text: string;
  /** The document's language (ISO 639-1 tag); it picks the analyzer. */
  language?: string;
}

/** Options of buildBm25Index and Bm25Builder. */
export interface BuildBm25Options {
  onProgress?: ProgressFn;
  /** Polled between documents; when it returns true the build throws an Error named 'AbortError'. */
  isCancelled?: () => boolean;
  /** The shard's declared document language, for documents without their own (default English). */
  language?: string;
}

function abortError(): Error {
  const e = new Error('BM25 indexing was cancelled');
  e.name = 'AbortError';
  return e;
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

type Growable = Uint8Array | Uint32Array | Int32Array | Float64Array;
function grow<T extends Growable>(a: T, need: number, fill?: number): T {
  if (need <= a.length) return a;
  const b = new (a.constructor as new (n: number) => T)(Math.max(need, a.length * 2));
  b.set(a as never);
  if (fill !== undefined) b.fill(fill, a.length);
  return b;
}

/** One batch's postings: those of terms[i] are bytes[starts[i], starts[i + 1]). */
interface Segment {
  terms: Uint32Array;
  starts: Uint32Array;
  bytes: Uint8Array;
}

const encoder = new TextEncoder();
/** Documents an index may hold: below 2^30, posting gaps encode in 31 bits (search decodes with int ops). */
const MAX_DOCS = 2 ** 30 - 1;

/**
 * Incremental BM25 build: add() documents in order, in batches of any size, then finish(). Yields
 * to the event loop every ~50 ms, reports progress at most every 100 ms (out of `total`, when
 * known) and throws an Error named 'AbortError' once `isCancelled()` returns true.
 */
export class Bm25Builder {
  private readonly params: Bm25Params;
  private readonly report: ReturnType<typeof throttle>;
  private readonly cancelled: () => boolean;
  private readonly language: string | undefined;
  private readonly total: number | undefined;
  private started = false;
  private finished = false;
  private sliceStart = 0;
  private n = 0;
  // Per term (build ids, in first-appearance order).
  private readonly terms = new Map<string, number>();
  private termLast = new Int32Array(1 << 12).fill(-1);
  private termDf = new Uint32Array(1 << 12);
  private termBytes = new Float64Array(1 << 12);
  private batchBytes = new Uint32Array(1 << 12);
  private docTf = new Uint32Array(1 << 12);
  // Per document.
  private docLengths = new Uint32Array(1 << 12);
  private docAnalyzer = new Uint8Array(1 << 12);
  private idOffsets = new Uint32Array(1 << 12);
  private idBytes = new Uint8Array(1 << 16);
  private readonly analyzers: AnalyzerId[] = [];
  private readonly groupLanguages: string[][] = [];
  private segments: (Segment | null)[] = [];
  // Scratch of one batch: its (term, encoded gap, tf) triples in document order.
  private bTerm = new Uint32Array(1 << 16);
  private bVal = new Float64Array(1 << 16);
  private bTf = new Uint32Array(1 << 16);

  constructor(
    params: Partial<Bm25Params> = DEFAULT_BM25_PARAMS,
    opts: BuildBm25Options & { total?: number } = {},
  ) {
    this.params = checkParams(params);
    this.report = throttle(opts.onProgress);
    this.cancelled = opts.isCancelled ?? (() => false);
    this.language = opts.language;
    this.total = opts.total;
  }

  /** Documents added so far. */
  get docCount(): number {
    return this.n;
  }

  /** Analyses a batch of documents (the next ones in corpus order) into a segment. */
  async add(docs: readonly Bm25Doc[]): Promise<void> {
    if (this.finished) throw new Error('BM25 build already finished');
    await loadAnalyzers(new Set(docs.map((d) => analyzerIdForLanguage(d.language || this.language))));
    if (!this.started) {
      this.started = true;
      this.report({ kind: 'index', done: 0, total: this.total ?? docs.length });
      this.sliceStart = Date.now();
    }
    const seen: number[] = [];
    const batchTerms: number[] = [];
    let nTriples = 0;
    for (const doc of docs) {
      const d = this.n;
      if (d >= MAX_DOCS) throw new RangeError(`BM25 indexes at most ${MAX_DOCS} documents`);
      if ((d & 31) === 0) {
        if (this.cancelled()) throw abortError();
        if (Date.now() - this.sliceStart >= 50) {
          this.report({ kind: 'index', done: d, total: this.total ?? d });
          await yieldToEventLoop();
          if (this.cancelled()) throw abortError();
          this.sliceStart = Date.now();
        }
      }
      this.addId(d, doc.id);
      const tag = doc.language || this.language || '';
      const analyzerId = analyzerIdForLanguage(tag);
      let group = this.analyzers.indexOf(analyzerId);
      if (group < 0) {
        group = this.analyzers.push(analyzerId) - 1;
        this.groupLanguages.push([]);
      }
      if (!this.groupLanguages[group].includes(tag)) this.groupLanguages[group].push(tag);
      this.docAnalyzer = grow(this.docAnalyzer, d + 1);
      this.docAnalyzer[d] = group;
      const tokens = getAnalyzer(analyzerId).analyze(`${doc.title ?? ''} ${doc.text ?? ''}`);
      this.docLengths = grow(this.docLengths, d + 1);
      this.docLengths[d] = tokens.length;
      const terms = this.terms;
      let docTf = this.docTf;
      for (let i = 0; i < tokens.length; i++) {
        let id = terms.get(tokens[i]);
        if (id === undefined) {
          id = terms.size;
          terms.set(tokens[i], id);
          this.termLast = grow(this.termLast, id + 1, -1);
          this.termDf = grow(this.termDf, id + 1);
          this.termBytes = grow(this.termBytes, id + 1);
          this.batchBytes = grow(this.batchBytes, id + 1);
          docTf = this.docTf = grow(docTf, id + 1);
        }
        if (docTf[id]++ === 0) seen.push(id);
      }
      this.bTerm = grow(this.bTerm, nTriples + seen.length);
      this.bVal = grow(this.bVal, nTriples + seen.length);
      this.bTf = grow(this.bTf, nTriples + seen.length);
      for (const id of seen) {
        const tf = this.docTf[id];
        const v = 2 * (d - this.termLast[id]) + (tf === 1 ? 1 : 0);
        const len = varintLength(v) + (tf === 1 ? 0 : varintLength(tf));
        if (this.batchBytes[id] === 0) batchTerms.push(id);
        this.batchBytes[id] += len;
        this.termBytes[id] += len;
        this.termDf[id]++;
        this.termLast[id] = d;
        this.bTerm[nTriples] = id;
        this.bVal[nTriples] = v;
        this.bTf[nTriples++] = tf;
        this.docTf[id] = 0;
      }
      seen.length = 0;
      this.n++;
    }
    if (batchTerms.length === 0) return;
    // Lay the batch out term by term; triples are in document order, so each term's stays ascending.
    const terms = Uint32Array.from(batchTerms);
    const starts = new Uint32Array(terms.length + 1);
    for (let i = 0; i < terms.length; i++) {
      const id = terms[i];
      starts[i + 1] = starts[i] + this.batchBytes[id];
      this.batchBytes[id] = starts[i]; // now the term's write cursor
    }
    const bytes = new Uint8Array(starts[terms.length]);
    for (let i = 0; i < nTriples; i++) {
      const id = this.bTerm[i];
      let at = writeVarint(bytes, this.batchBytes[id], this.bVal[i]);
      if (this.bTf[i] !== 1) at = writeVarint(bytes, at, this.bTf[i]);
      this.batchBytes[id] = at;
    }
    for (const id of terms) this.batchBytes[id] = 0;
    this.segments.push({ terms, starts, bytes });
  }

  private addId(d: number, id: string): void {
    const b = encoder.encode(id);
    this.idOffsets = grow(this.idOffsets, d + 2);
    const at = this.idOffsets[d];
    this.idBytes = grow(this.idBytes, at + b.length);
    this.idBytes.set(b, at);
    this.idOffsets[d + 1] = at + b.length;
  }

  /** Lays the segments out in the final arrays and returns the index; the builder is then spent. */
  finish(): Bm25Index {
    if (this.finished) throw new Error('BM25 build already finished');
    if (this.cancelled()) throw abortError();
    this.finished = true;
    const n = this.n;
    const termCount = this.terms.size;
    // Term ids become positions in UTF-8 byte order (compareUtf8 is that order on strings).
    const list = [...this.terms.keys()];
    this.terms.clear();
    const order = new Uint32Array(termCount).map((_, i) => i).sort((a, b) => compareUtf8(list[a], list[b]));
    const encoded = list.map((t) => encoder.encode(t));
    const termOffsets = new Uint32Array(termCount + 1);
    for (let r = 0; r < termCount; r++) termOffsets[r + 1] = termOffsets[r] + encoded[order[r]].length;
    const termBytes = new Uint8Array(termOffsets[termCount]);
    for (let r = 0; r < termCount; r++) termBytes.set(encoded[order[r]], termOffsets[r]);
    list.length = 0;
    encoded.length = 0;

    const termDf = new Uint32Array(termCount);
    const postingOffsets = new Uint32Array(termCount + 1);
    const cursor = new Float64Array(termCount); // by build id
    for (let r = 0; r < termCount; r++) {
      const id = order[r];
      termDf[r] = this.termDf[id];
      const end = postingOffsets[r] + this.termBytes[id];
      if (end > 0xffffffff) throw new RangeError('BM25 index postings exceed 4 GiB');
      postingOffsets[r + 1] = end;
      cursor[id] = postingOffsets[r];
    }
    const postings = new Uint8Array(postingOffsets[termCount]);
    for (let s = 0; s < this.segments.length; s++) {
      const seg = this.segments[s]!;
      this.segments[s] = null; // let each segment go as soon as it is copied
      for (let i = 0; i < seg.terms.length; i++) {
        const id = seg.terms[i];
        postings.set(seg.bytes.subarray(seg.starts[i], seg.starts[i + 1]), cursor[id]);
        cursor[id] += seg.starts[i + 1] - seg.starts[i];
      }
    }
    this.segments = [];
    // A spent builder keeps nothing big (its per-term and per-batch scratch).
    this.termLast = new Int32Array(0);
    this.termDf = new Uint32Array(0);
    this.termBytes = new Float64Array(0);
    this.batchBytes = new Uint32Array(0);
    this.docTf = new Uint32Array(0);
    this.bTerm = new Uint32Array(0);
    this.bVal = new Float64Array(0);
    this.bTf = new Uint32Array(0);
    if (this.analyzers.length === 0) {
      this.analyzers.push(analyzerIdForLanguage(this.language));
      this.groupLanguages.push([this.language || '']);
    }
    const index = assemble(this.params, {
      docIds: { bytes: this.idBytes.slice(0, this.idOffsets[n]), offsets: this.idOffsets.slice(0, n + 1) },
      terms: { bytes: termBytes, offsets: termOffsets },
      termDf,
      postingOffsets,
      postings,
      docLengths: this.docLengths.slice(0, n),
      analyzers: this.analyzers,
      groupLanguages: this.groupLanguages,
      docAnalyzer: this.docAnalyzer.slice(0, n),
    });
    this.docLengths = new Uint32Array(0);
    this.docAnalyzer = new Uint8Array(0);
    this.idOffsets = new Uint32Array(0);
    this.idBytes = new Uint8Array(0);
    this.report({ kind: 'index', done: n, total: this.total ?? n });
    this.report.flush();
    return index;
  }
}

/**
 * Builds a BM25 index over `title + " " + text` of each document, `batchSize` documents per
 * segment (the result is the same for every batch size). See Bm25Builder.
 */
export async function buildBm25Index(
  docs: readonly Bm25Doc[],
  params: Partial<Bm25Params> = DEFAULT_BM25_PARAMS,
  opts: BuildBm25Options & { batchSize?: number } = {},
): Promise<Bm25Index> {
  const batch = Math.max(1, Math.floor(opts.batchSize ?? 10_000));
  const builder = new Bm25Builder(params, { ...opts, total: docs.length });
  for (let i = 0; i < docs.length; i += batch) await builder.add(docs.slice(i, i + batch));
  if (docs.length === 0) await builder.add([]);
  return builder.finish();
}
