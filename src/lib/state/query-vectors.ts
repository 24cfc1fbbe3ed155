// A dense run's queries as vectors, whatever their shape: texts (whole, or every window of a long
// one: chunking mean/max), images (a query image that is a corpus image takes that row), several
// images per query (multi-image mean/max), and the one query typed in the Search view, whose parts
// may have been embedded ahead. Latency hidden: the Search query's image is embedded as soon as it is
// added, and its text on a typing pause, by the encoder the query will use (only when that model is
// already loaded: a first query loads it and tells its story). Pressing Search then takes these
// vectors instead of embedding again; a vector is used only for the same image (the same Blob), the
// same text and the same loaded encoder (model, options, worker), so a result never mixes encoders.
import { chunkOffsets, isChunked, meanOfChunks, type Chunking } from '../core/retrieval/chunking';
import type { EmbedPart } from '../core/retrieval/models';
import { itemImagePaths, type MultiImage } from '../core/retrieval/multi-image';
import type { Query } from '../core/types';
import { openShardStore } from '../platform/storage/shard-store';
import { stageTook, timeStage } from '../platform/page/query-timing';
import {
  activeEncoderKey,
  embedImages,
  embedQuery,
  embedTextChunks,
  embedTexts,
} from '../clients/encoder-client';
import type { JobOptions } from '../clients/worker-client';
import type { DenseQueries } from '../../../workers/retrieval.worker';

interface Pending<T> {
  value: T;
  encoder: string;
  vector: Promise<Float32Array | null>;
}

/** What the dense query path asks of the prefetcher (embedRunQueries). */
export interface PrefetchLookup {
  /** The vectors prefetched for this text / image by `encoder` (each null when there is none). */
  take(
    encoder: string,
    text: string | null,
    image: Blob | null,
  ): { text: Promise<Float32Array | null> | null; image: Promise<Float32Array | null> | null };
  /** Resolves when no prefetch is running (a query's own encoder call waits for it). */
  settled(): Promise<void>;
}

export class QueryPrefetch implements PrefetchLookup {
  #image: Pending<Blob> | null = null;
  #text: Pending<string> | null = null;
  #running = new Set<Promise<unknown>>();
  /** Prefetched vectors a query used (tests and the latency bench read it). */
  hits = 0;

  #start<T>(value: T, encoder: string, text: string | null, image: Blob | null): Pending<T> {
    const call = embedQuery(text, image);
    this.#running.add(call);
    void call.finally(() => this.#running.delete(call)).catch(() => undefined);
    const vector = call.then(
      (r) => (text !== null ? r.text : r.image),
      () => null,
    );
    return { value, encoder, vector };
  }

  /** Embeds the query image now (once per image and encoder). */
  image(blob: Blob, encoder: string): void {
    if (this.#image?.value === blob && this.#image.encoder === encoder) return;
    this.#image = this.#start(blob, encoder, null, blob);
  }

  /** Embeds the query text now (once per text and encoder). */
  text(text: string, encoder: string): void {
    if (this.#text?.value === text && this.#text.encoder === encoder) return;
    this.#text = this.#start(text, encoder, text, null);
  }

  take(encoder: string, text: string | null, image: Blob | null) {
    const copy = (p: Pending<unknown>) =>
      p.vector.then((v) => {
        if (!v) return null;
        this.hits++;
        return v.slice();
      });
    const t = this.#text;
    const i = this.#image;
    return {
      text: t && text !== null && t.value === text && t.encoder === encoder ? copy(t) : null,
      image: i && image !== null && i.value === image && i.encoder === encoder ? copy(i) : null,
    };
  }

  async settled(): Promise<void> {
    await Promise.allSettled([...this.#running]);
  }

  /** Forgets every prefetched vector (another shard; the image removed). */
  clear(): void {
    this.#image = null;
    this.#text = null;
  }
}

/** A dense run's queries and how they are embedded (the plan's settings, the loaded encoder's dim). */
export interface RunQueries {
  shardHash: string;
  queries: Query[];
  /** The query parts the model embeds (dense-plan.ts's densePlan). */
  parts: EmbedPart[];
  dim: number;
  chunking?: Chunking;
  multiImage?: MultiImage;
  /** The corpus's image rows: a query image that is a corpus image is not embedded twice. */
  corpusImages?: { rowOf: Map<string, number>; rows: Float32Array | null };
  /** One query typed in the Search view: its image(s), in one worker call with the text, stages timed. */
  adhoc?: { image: Blob | null; more: Blob[]; prefetch?: PrefetchLookup };
}

/**
 * Embeds a run's queries with the active encoder (see the file's header): first every vector, each
 * shape in its own worker call, then the windows of a chunked text and the images of a multi-image
 * query aggregated (mean → one vector per query; max → every window or image a row of its own).
 */
export async function embedRunQueries(r: RunQueries, job: JobOptions): Promise<DenseQueries> {
  const { queries: qs, parts, dim, chunking, adhoc } = r;
  const q: DenseQueries = {
    ids: qs.map((x) => x.id),
    dim,
    text: null,
    image: null,
    hasText: new Uint8Array(qs.length),
    hasImage: new Uint8Array(qs.length),
    exclude: qs.map((x) => x.excludeIds),
  };
  const chunked = isChunked(chunking) && parts.includes('text');
  const withText = qs.flatMap((x, i) => (x.text ? [i] : []));
  // An ad-hoc query: one worker call for its text and image, with the time of each stage.
  let text = adhoc && parts.includes('text') && qs[0].text && !chunked ? qs[0].text : null;
  let image = adhoc && parts.includes('image') ? adhoc.image : null;
  // Parts embedded ahead by the same encoder (the image as it was added, the text on a pause).
  const encoderKey = activeEncoderKey();
  if (adhoc?.prefetch && encoderKey) {
    const ahead = adhoc.prefetch.take(encoderKey, text, image);
    if (ahead.text || ahead.image) {
      const [t, i] = await timeStage('encode', () => Promise.all([ahead.text, ahead.image]));
      if (t) {
        q.text = t;
        q.hasText[0] = 1;
        text = null;
      }
      if (i) {
        q.image = i;
        q.hasImage[0] = 1;
        image = null;
      }
    }
    await adhoc.prefetch.settled();
  }
  // Every window of each query's text.
  const windows = chunked
    ? await embedTextChunks(
        withText.map((i) => qs[i].text),
        'query',
        chunking,
        job,
      )
    : null;
  if (adhoc) {
    if (text || image) {
      const t0 = performance.now();
      const e = await embedQuery(text, image, job);
      const s = e.stages;
      // Only the stages of the parts embedded now (a part embedded ahead has none here).
      if (text) stageTook('tokenize', t0, s.tokenizeMs);
      if (image) stageTook('preprocess', t0 + s.tokenizeMs, s.preprocessMs);
      stageTook('encode', t0 + s.tokenizeMs + s.preprocessMs, s.encodeMs);
      if (e.text) {
        q.text = e.text;
        q.hasText[0] = 1;
      }
      if (e.image) {
        q.image = e.image;
        q.hasImage[0] = 1;
      }
    }
  } else {
    if (parts.includes('text') && !chunked) {
      const vecs = await embedTexts(
        withText.map((i) => qs[i].text),
        'query',
        job,
      );
      q.text = new Float32Array(qs.length * dim);
      withText.forEach((qi, j) => {
        q.text!.set(vecs.subarray(j * dim, (j + 1) * dim), qi * dim);
        q.hasText[qi] = 1;
      });
    }
    if (parts.includes('image')) {
      q.image = new Float32Array(qs.length * dim);
      const todo: number[] = [];
      const { rowOf, rows } = r.corpusImages ?? { rowOf: new Map<string, number>(), rows: null };
      qs.forEach((x, i) => {
        if (!x.image) return;
        const row = rowOf.get(x.image);
        if (row !== undefined && rows) {
          q.image!.set(rows.subarray(row * dim, (row + 1) * dim), i * dim);
          q.hasImage[i] = 1;
        } else todo.push(i);
      });
      if (todo.length) {
        const store = await openShardStore();
        const blobs = await Promise.all(todo.map((i) => store.getImage(r.shardHash, qs[i].image!)));
        const ok = todo.filter((_, j) => blobs[j]);
        const vecs = await embedImages(
          blobs.filter((b): b is Blob => !!b),
          job,
        );
        ok.forEach((qi, j) => {
          q.image!.set(vecs.subarray(j * dim, (j + 1) * dim), qi * dim);
          q.hasImage[qi] = 1;
        });
      }
    }
  }
  // Queries with several images (the items' images after the first, or the extra images of an
  // ad-hoc query): every one embedded.
  const extra: Blob[][] = adhoc ? [adhoc.more] : qs.map(() => []);
  const several = !!r.multiImage && parts.includes('image') && !!q.image;
  if (several && !adhoc) {
    const store = await openShardStore();
    for (const [i, x] of qs.entries()) {
      const more = itemImagePaths(x).slice(1);
      if (!more.length || !q.hasImage[i]) continue;
      const blobs = await Promise.all(more.map((p) => store.getImage(r.shardHash, p)));
      extra[i] = blobs.filter((b): b is Blob => !!b);
    }
  }
  const todo = several ? extra.flatMap((l, i) => (l.length && q.hasImage[i] ? [i] : [])) : [];
  const extraVecs = todo.length
    ? await embedImages(
        todo.flatMap((i) => extra[i]),
        job,
      )
    : null;
  if (windows) {
    // Chunked texts: mean → one vector per query; max → all its windows as rows as well.
    const mean = windows.mean;
    q.text = new Float32Array(qs.length * dim);
    const counts = new Uint32Array(qs.length);
    withText.forEach((qi, j) => {
      q.text!.set(mean.subarray(j * dim, (j + 1) * dim), qi * dim);
      q.hasText[qi] = 1;
      counts[qi] = windows.counts[j];
    });
    // Queries without text have no chunks, so the chunk rows are already in query order.
    if (chunking!.aggregate === 'max')
      q.textChunks = { vectors: windows.vectors, offsets: chunkOffsets(counts) };
  }
  if (extraVecs) {
    // Several images: mean → the query's image vector is their normalised mean; max → each is a row
    // of `q.imageRows` (the retrieval worker scores a document by its best pair).
    const counts = new Uint32Array(qs.length);
    const rows: Float32Array[] = [];
    let at = 0;
    for (const i of todo) {
      const n = extra[i].length + 1;
      const all = new Float32Array(n * dim);
      all.set(q.image!.subarray(i * dim, (i + 1) * dim), 0);
      all.set(extraVecs.subarray(at * dim, (at + n - 1) * dim), dim);
      at += n - 1;
      q.image!.set(meanOfChunks(all, [n], dim, true), i * dim);
      counts[i] = n;
      rows[i] = all;
    }
    if (r.multiImage === 'max') {
      const offsets = chunkOffsets(counts);
      const vectors = new Float32Array(offsets[qs.length] * dim);
      for (const i of todo) vectors.set(rows[i], offsets[i] * dim);
      q.imageRows = { vectors, offsets };
    }
  }
  return q;
}
