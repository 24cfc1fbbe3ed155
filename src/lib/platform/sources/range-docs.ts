// Documents of a shard on a static host, read by HTTP Range without importing the corpus (issue 19):
// the shard's corpus.offsets.bin says where each document's line lies in corpus.jsonl. A version 2
// file (core/shard/doc-offsets-v2.ts) is itself read by Range (range-doc-index.ts: header and top
// level, then the entries and id blocks wanted); a version 1 file is fetched once whole and kept. A
// document is then its one line of corpus.jsonl, fetched by a Range request (neighbouring lines in
// one request, at most 6 requests at a time) and checked by the importer's own corpus reader
// (core/shard/read-corpus.ts: same fields, same messages, with the file and line named).
import type { Doc, ProgressFn } from '../../core/types';
import { findDocRow } from '../../core/shard/doc-directory';
import { decodeDocOffsets, type DocOffsets } from '../../core/shard/doc-offsets';
import { ShardReadContext } from '../../core/shard/read-context';
import { readCorpus } from '../../core/shard/read-corpus';
import { ShardValidationError, type ShardSource } from '../../core/shard/source';
import type { Line } from '../../core/shard/lines';
import type { RowEntry } from '../../core/shard/doc-offsets-v2';
import { RangeDocIndex } from './range-doc-index';
import { readBody } from './reporting-source';

/** Lines closer than this many bytes are fetched in one request (the bytes between come along). */
export const MERGE_GAP_BYTES = 256;
/** One request fetches at most this many bytes (unless one line is longer). */
const MAX_REQUEST_BYTES = 4 << 20;
/** Requests in flight at once. */
export const MAX_CONCURRENT = 6;

/** A read context whose corpus lines are the ones fetched (with their real line numbers and offsets). */
class FetchedLines extends ShardReadContext {
  constructor(
    label: string,
    private fetched: Line[],
  ) {
    const none: ShardSource = {
      label,
      list: async () => null,
      open: async () => null,
      size: async () => undefined,
    };
    super(none, {});
  }

  override async *lines(): AsyncGenerator<Line> {
    for (const l of this.fetched) {
      this.lastLine = l;
      yield l;
    }
  }
}

/** An offsets file as read: version 1 whole, or version 2's index read by Range. */
export type DocLayout = { v1: DocOffsets; v2?: undefined } | { v2: RangeDocIndex; v1?: undefined };

/** Documents read lately, by row, kept so that a row read for its id is not read again to be shown. */
const KEEP_DOCS = 2000;

export class RangeDocReader {
  readonly corpusUrl: string;
  readonly offsetsUrl: string;
  #layout: Promise<DocLayout> | null = null;
  #inverse: Uint32Array | null = null;
  #docs = new Map<number, Doc>();
  /** Body bytes received so far (the offsets file and every range). */
  bytesRead = 0;
  /** Range requests made so far. */
  requests = 0;

  /**
   * `shardUrl`: the shard's folder (with or without a trailing slash); `offsetsFile` and `corpusFile`
   * are relative to it.
   */
  constructor(shardUrl: string, offsetsFile: string, corpusFile = 'corpus.jsonl') {
    const base = shardUrl.endsWith('/') ? shardUrl : `${shardUrl}/`;
    this.corpusUrl = new URL(corpusFile, base).href;
    this.offsetsUrl = new URL(offsetsFile, base).href;
  }

  /**
   * The offsets file's layout, read on the first call and kept (a failed read is tried again).
   * `onProgress`: told the bytes of a version 1 file as it is read whole.
   */
  layout(signal?: AbortSignal, onProgress?: ProgressFn): Promise<DocLayout> {
    this.#layout ??= (async (): Promise<DocLayout> => {
      const opened = await RangeDocIndex.open(this.offsetsUrl, (...a) => this.#fetchRange(...a), signal);
      if (opened instanceof RangeDocIndex) return { v2: opened };
      let bytes = opened.whole;
      if (!bytes) {
        // Version 1: the whole file (every id and every line's place).
        const res = await fetch(this.offsetsUrl, { signal });
        if (!res.ok) throw new Error(`${this.offsetsUrl}: HTTP ${res.status} ${res.statusText}`.trim());
        bytes = await readBody(res, this.offsetsUrl, onProgress);
        this.bytesRead += bytes.length;
      }
      return { v1: decodeDocOffsets(bytes, this.offsetsUrl) };
    })();
    this.#layout.catch(() => (this.#layout = null));
    return this.#layout;
  }

  /** The version 1 offsets file (throws for version 2, which is never read whole). */
  async offsets(signal?: AbortSignal): Promise<DocOffsets> {
    const l = await this.layout(signal);
    if (!l.v1) throw new Error(`${this.offsetsUrl}: version 2 is read by Range, not whole`);
    return l.v1;
  }

  /** The rows of `ids` the shard has. */
  async rowsOf(ids: Iterable<string>, signal?: AbortSignal): Promise<Map<string, number>> {
    const l = await this.layout(signal);
    if (l.v2) return l.v2.rowsOf(ids, signal);
    const out = new Map<string, number>();
    for (const id of ids) {
      const r = findDocRow(l.v1.dir, id);
      if (r >= 0) out.set(id, r);
    }
    return out;
  }

  /** The documents of `ids` the shard has (ids it does not have are left out). */
  async readIds(ids: Iterable<string>, signal?: AbortSignal): Promise<Map<string, Doc>> {
    const rows = await this.rowsOf(ids, signal);
    const out = new Map<string, Doc>();
    const got = await this.readRows(rows.values(), signal);
    for (const [id, r] of rows) {
      const d = got.get(r);
      if (!d) continue;
      // A version 2 file names no id per row: the line must hold the id its block named.
      if (d.id !== id) {
        const e = (await this.#entries(await this.layout(signal), [r], signal)).get(r);
        throw staleError('corpus.jsonl', e?.line ?? 0, d.id, id);
      }
      out.set(id, d);
    }
    return out;
  }

  /** The documents at corpus `rows` (rows past the end are skipped), checked as the importer checks them. */
  async readRows(rows: Iterable<number>, signal?: AbortSignal): Promise<Map<number, Doc>> {
    const l = await this.layout(signal);
    const asked = [...new Set(rows)];
    const out = new Map<number, Doc>();
    for (const r of asked) {
      const d = this.#docs.get(r);
      if (d) out.set(r, d);
    }
    const entries = await this.#entries(
      l,
      asked.filter((r) => !out.has(r)),
      signal,
    );
    const corpusBytes = l.v1 ? l.v1.corpusBytes : l.v2.head.corpusBytes;
    const format = l.v1 ? l.v1.format : l.v2.head.format;
    const want = [...entries.keys()].sort((a, b) => entries.get(a)!.start - entries.get(b)!.start);
    // Neighbouring lines go in one request.
    const groups: number[][] = [];
    for (const r of want) {
      const g = groups[groups.length - 1];
      const last = g ? entries.get(g[g.length - 1])! : null;
      const e = entries.get(r)!;
      if (
        g &&
        last &&
        e.start - (last.start + last.length) <= MERGE_GAP_BYTES &&
        e.start + e.length - entries.get(g[0])!.start <= MAX_REQUEST_BYTES
      )
        g.push(r);
      else groups.push([r]);
    }
    const lines = new Map<number, Line>();
    const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    let next = 0;
    const worker = async () => {
      while (next < groups.length) {
        const g = groups[next++];
        const start = entries.get(g[0])!.start;
        const last = entries.get(g[g.length - 1])!;
        const bytes = await this.#range(start, last.start + last.length, corpusBytes, signal);
        for (const r of g) {
          const e = entries.get(r)!;
          const raw = bytes.subarray(e.start - start, e.start - start + e.length);
          let text: string;
          try {
            text = decoder.decode(raw);
          } catch {
            throw new ShardValidationError([
              { file: 'corpus.jsonl', line: e.line, code: 'invalid-utf8', message: 'invalid UTF-8' },
            ]);
          }
          lines.set(r, { text, line: e.line, offset: e.start });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(MAX_CONCURRENT, groups.length) }, worker));
    // The importer's corpus reader, over the fetched lines in row order.
    const ordered = want.slice().sort((a, b) => a - b);
    const ctx = new FetchedLines(
      this.corpusUrl,
      ordered.map((r) => lines.get(r)!),
    );
    ctx.format = format;
    ctx.strict = format === 'beir+images';
    try {
      if (ordered.length) await readCorpus(ctx, 'corpus.jsonl');
    } catch (e) {
      if (!(e instanceof ShardValidationError)) throw e;
    }
    if (ctx.issues.length) throw new ShardValidationError(ctx.issues);
    ordered.forEach((r, i) => {
      const d = ctx.docs[i];
      if (l.v1) {
        const id = this.#idOfRow(l.v1, r);
        if (d?.id !== id) throw staleError('corpus.jsonl', entries.get(r)!.line, d?.id, id);
      }
      out.set(r, d);
      this.#docs.delete(r);
      this.#docs.set(r, d);
    });
    for (const r of this.#docs.keys()) {
      if (this.#docs.size <= KEEP_DOCS) break;
      this.#docs.delete(r);
    }
    return out;
  }

  /** Where the lines of `rows` lie. */
  async #entries(l: DocLayout, rows: number[], signal?: AbortSignal): Promise<Map<number, RowEntry>> {
    if (l.v2) return l.v2.entries(rows, signal);
    const o = l.v1;
    const out = new Map<number, RowEntry>();
    for (const r of rows)
      if (r >= 0 && r < o.starts.length)
        out.set(r, { start: o.starts[r], length: o.lengths[r], line: o.lines[r] });
    return out;
  }

  #idOfRow(o: DocOffsets, row: number): string {
    if (!this.#inverse) {
      const inv = new Uint32Array(o.dir.rows.length);
      o.dir.rows.forEach((r, i) => (inv[r] = i));
      this.#inverse = inv;
    }
    const i = this.#inverse[row];
    return o.dir.ids.slice(i === 0 ? 0 : o.dir.ends[i - 1], o.dir.ends[i]);
  }

  /** Bytes [start, end) of `url` by one Range request (the whole file when the host ignores Range). */
  async #fetchRange(url: string, start: number, end: number, signal?: AbortSignal) {
    this.requests++;
    const res = await fetch(url, { headers: { Range: `bytes=${start}-${end - 1}` }, signal });
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status} ${res.statusText}`.trim());
    const bytes = new Uint8Array(await res.arrayBuffer());
    this.bytesRead += bytes.length;
    const total = /\/(\d+)$/.exec(res.headers.get('Content-Range') ?? '')?.[1];
    return {
      bytes,
      whole: res.status !== 206,
      ...(total !== undefined ? { total: Number(total) } : {}),
    };
  }

  /** Bytes [start, end) of the corpus, by one Range request; the host must answer 206 for the size packed. */
  async #range(start: number, end: number, size: number, signal?: AbortSignal): Promise<Uint8Array> {
    this.requests++;
    const res = await fetch(this.corpusUrl, { headers: { Range: `bytes=${start}-${end - 1}` }, signal });
    if (res.status !== 206) {
      await res.body?.cancel().catch(() => undefined);
      throw new Error(
        res.ok
          ? `${this.corpusUrl}: the host answered a Range request with the whole file (HTTP ${res.status}); documents cannot be read on demand from it: import the shard`
          : `${this.corpusUrl}: HTTP ${res.status} ${res.statusText}`.trim(),
      );
    }
    const total = /\/(\d+)$/.exec(res.headers.get('Content-Range') ?? '')?.[1];
    if (total !== undefined && Number(total) !== size) {
      await res.body?.cancel().catch(() => undefined);
      throw new Error(
        `${this.corpusUrl} has ${total} bytes, corpus.offsets.bin was written for ${size}: the corpus changed after it was packed; run npm run pack-shard again`,
      );
    }
    const bytes = new Uint8Array(await res.arrayBuffer());
    this.bytesRead += bytes.length;
    if (bytes.length !== end - start)
      throw new Error(`${this.corpusUrl}: asked for bytes ${start}–${end - 1}, got ${bytes.length} bytes`);
    return bytes;
  }
}

/** A line that holds another document than the offsets file names for it. */
function staleError(
  file: string,
  line: number,
  found: string | undefined,
  named: string,
): ShardValidationError {
  return new ShardValidationError([
    {
      file,
      ...(line > 0 ? { line } : {}),
      code: 'offsets-stale',
      message: `holds document ${JSON.stringify(found)}, where corpus.offsets.bin names ${JSON.stringify(named)}: the corpus changed after it was packed; run npm run pack-shard again`,
    },
  ]);
}
