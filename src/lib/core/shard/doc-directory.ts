// A shard's document ids, sorted, with the corpus row of each: what lets the page find a document by
// id without holding the documents. At a million documents a Map of every document costs gigabytes
// and seconds on the main thread; this costs one string of the ids and two Uint32Arrays (about 20 MB
// for 1M ten-character ids) and answers by binary search. Built once per shard from the stored
// corpus (platform/storage/shard-docs.ts) together with the facts the panels show about the corpus.
import type { Doc, Metadata } from '../types';

export interface DocDirectory {
  /** Every id, sorted by JavaScript string order, concatenated. */
  ids: string;
  /** End offset in `ids` of each sorted id (its start is the previous end, or 0). */
  ends: Uint32Array;
  /** Corpus row (position in corpus order) of each sorted id. */
  rows: Uint32Array;
}

/** What the panels show about a corpus, counted once over all of it. */
export interface DocFacts {
  docs: number;
  /** Documents with an image. */
  imageDocs: number;
  /** Documents with neither title nor text. */
  textlessDocs: number;
  /** Documents with several images (multi-image items). */
  multiImageDocs: number;
  /**
   * For each query image that is also a document's image: that document's id and metadata (a query
   * image from the corpus, as in vqa-rad image-to-image, takes the facets of its document).
   */
  queryImageDocs: [path: string, docId: string, meta: Metadata][];
}

/** Sorted directory of `ids` (in corpus order: ids[r] is row r). */
export function buildDocDirectory(ids: readonly string[]): DocDirectory {
  const order = new Uint32Array(ids.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  order.sort((a, b) => (ids[a] < ids[b] ? -1 : ids[a] > ids[b] ? 1 : a - b));
  const ends = new Uint32Array(ids.length);
  const parts: string[] = [];
  let end = 0;
  order.forEach((row, i) => {
    parts.push(ids[row]);
    end += ids[row].length;
    ends[i] = end;
  });
  return { ids: parts.join(''), ends, rows: order };
}

/** The id at sorted position `i`. */
function idAt(dir: DocDirectory, i: number): string {
  return dir.ids.slice(i === 0 ? 0 : dir.ends[i - 1], dir.ends[i]);
}

/** Corpus row of document `id`, or -1 when the shard has none (the first row for a repeated id). */
export function findDocRow(dir: DocDirectory, id: string): number {
  let lo = 0;
  let hi = dir.ends.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (idAt(dir, mid) < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < dir.ends.length && idAt(dir, lo) === id ? dir.rows[lo] : -1;
}

/** Whether a stored directory has the expected shape for `count` documents (else it is rebuilt). */
export function isDocDirectory(x: unknown, count: number): x is DocDirectory {
  const d = x as DocDirectory | undefined;
  return (
    !!d &&
    typeof d.ids === 'string' &&
    d.ends instanceof Uint32Array &&
    d.rows instanceof Uint32Array &&
    d.ends.length === count &&
    d.rows.length === count &&
    (count === 0 || d.ends[count - 1] === d.ids.length)
  );
}

/** Counts the facts of a corpus batch by batch: `add` each document, then `facts()`. */
export function factCounter(queryImages: ReadonlySet<string>) {
  let docs = 0;
  let imageDocs = 0;
  let textlessDocs = 0;
  let multiImageDocs = 0;
  // The last document with a query's image wins, as a Map built over the corpus would have it.
  const byImage = new Map<string, [string, Metadata]>();
  return {
    add(d: Doc) {
      docs++;
      if (d.image) imageDocs++;
      if (!d.title && !d.text) textlessDocs++;
      if ((d.images?.length ?? 0) > 1) multiImageDocs++;
      if (d.image && queryImages.has(d.image)) byImage.set(d.image, [d.id, d.meta]);
    },
    facts: (): DocFacts => ({
      docs,
      imageDocs,
      textlessDocs,
      multiImageDocs,
      queryImageDocs: [...byImage].map(([path, [id, meta]]) => [path, id, meta]),
    }),
  };
}
