// A version 2 corpus.offsets.bin (core/shard/doc-offsets-v2.ts) read by HTTP Range, never whole: its
// header and top level on open (a few kilobytes up to ~100 KB at a million documents), a row's
// 16-byte entry when its line is wanted (neighbouring rows in one request), and one block of sorted
// ids per id looked up (blocks are kept). RangeDocReader (range-docs.ts) uses it for such a file.
import {
  DOC_OFFSETS_V2,
  ROW_ENTRY_BYTES,
  blockOf,
  decodeDocOffsetsHead,
  decodeIdBlock,
  decodeRowEntry,
  docOffsetsVersion,
  rowInBlock,
  type DocOffsetsHead,
  type IdBlock,
  type RowEntry,
} from '../../core/shard/doc-offsets-v2';

/** The first read of an offsets file: enough for the header and, mostly, the top level. */
export const FIRST_READ_BYTES = 16 << 10;
/** Row entries closer than this many rows are fetched in one request. */
const ROW_GAP = 64;
/** Requests in flight at once. */
const MAX_CONCURRENT = 6;

/** Bytes [start, end) of `url` (the reader counts them); `total` the file's size when the host said. */
export type RangeFetch = (
  url: string,
  start: number,
  end: number,
  signal?: AbortSignal,
) => Promise<{ bytes: Uint8Array; total?: number; whole: boolean }>;

/** Runs `fn` over `items`, at most MAX_CONCURRENT at a time. */
async function pool<T>(items: T[], fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(MAX_CONCURRENT, items.length) }, worker));
}

export class RangeDocIndex {
  #blocks = new Map<number, Promise<IdBlock>>();
  #entries = new Map<number, RowEntry>();
  /** The whole file, when the host answered the first read with all of it (no Range support). */
  #whole: Uint8Array | null;

  private constructor(
    readonly url: string,
    readonly head: DocOffsetsHead,
    private range: RangeFetch,
    whole: Uint8Array | null,
  ) {
    this.#whole = whole;
  }

  /**
   * Reads the first bytes of the offsets file at `url`: a version 2 file gives its index; any other
   * version resolves `{ version, bytes }` (the first bytes, or all of them when the host sent all).
   */
  static async open(
    url: string,
    range: RangeFetch,
    signal?: AbortSignal,
  ): Promise<RangeDocIndex | { version: number; whole: Uint8Array | null }> {
    const first = await range(url, 0, FIRST_READ_BYTES, signal);
    const version = docOffsetsVersion(first.bytes, url);
    if (version !== DOC_OFFSETS_V2) return { version, whole: first.whole ? first.bytes : null };
    const total = first.whole ? first.bytes.length : first.total;
    let got = decodeDocOffsetsHead(first.bytes, url, total);
    if (!got.complete) {
      const more = await range(url, 0, got.headBytes, signal);
      got = decodeDocOffsetsHead(more.bytes, url, total);
      if (!got.complete) throw new Error(`${url}: its top level could not be read whole`);
    }
    return new RangeDocIndex(url, got.head, range, first.whole ? first.bytes : null);
  }

  async #read(start: number, end: number, signal?: AbortSignal): Promise<Uint8Array> {
    if (this.#whole) {
      if (end > this.#whole.length) throw new Error(`${this.url}: truncated (needs byte ${end - 1})`);
      return this.#whole.subarray(start, end);
    }
    const got = await this.range(this.url, start, end, signal);
    if (got.bytes.length !== end - start)
      throw new Error(`${this.url}: asked for bytes ${start}–${end - 1}, got ${got.bytes.length} bytes`);
    return got.bytes;
  }

  #block(b: number, signal?: AbortSignal): Promise<IdBlock> {
    let p = this.#blocks.get(b);
    if (!p) {
      const h = this.head;
      p = this.#read(h.blockStarts[b], h.blockStarts[b + 1], signal).then((bytes) =>
        decodeIdBlock(bytes, h, b, this.url),
      );
      this.#blocks.set(b, p);
      // A failed read is tried again next time.
      p.catch(() => this.#blocks.delete(b));
    }
    return p;
  }

  /** The rows of `ids` the shard has (one block read per block not read before). */
  async rowsOf(ids: Iterable<string>, signal?: AbortSignal): Promise<Map<string, number>> {
    const byBlock = new Map<number, string[]>();
    for (const id of new Set(ids)) {
      const b = blockOf(this.head, id);
      if (b < 0) continue;
      const list = byBlock.get(b);
      if (list) list.push(id);
      else byBlock.set(b, [id]);
    }
    const out = new Map<string, number>();
    await pool([...byBlock], async ([b, list]) => {
      const block = await this.#block(b, signal);
      for (const id of list) {
        const r = rowInBlock(block, id);
        if (r >= 0) out.set(id, r);
      }
    });
    return out;
  }

  /** Where the lines of `rows` lie (rows past the end are left out); entries are kept. */
  async entries(rows: Iterable<number>, signal?: AbortSignal): Promise<Map<number, RowEntry>> {
    const n = this.head.n;
    const want = [...new Set(rows)].filter((r) => r >= 0 && r < n).sort((a, b) => a - b);
    const missing = want.filter((r) => !this.#entries.has(r));
    const groups: number[][] = [];
    for (const r of missing) {
      const g = groups[groups.length - 1];
      if (g && r - g[g.length - 1] <= ROW_GAP) g.push(r);
      else groups.push([r]);
    }
    await pool(groups, async (g) => {
      const from = g[0];
      const at = this.head.rowsAt + ROW_ENTRY_BYTES * from;
      const bytes = await this.#read(at, at + ROW_ENTRY_BYTES * (g[g.length - 1] - from + 1), signal);
      for (const r of g)
        this.#entries.set(r, decodeRowEntry(bytes, ROW_ENTRY_BYTES * (r - from), this.head, r, this.url));
    });
    return new Map(want.map((r) => [r, this.#entries.get(r)!]));
  }
}
