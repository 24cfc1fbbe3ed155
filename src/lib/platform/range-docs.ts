// Documents of a shard on a static host, read by HTTP Range without importing the corpus (issue 19):
// the shard's corpus.offsets.bin (core/shard/doc-offsets.ts, written by pack-shard) is fetched once and
// kept; a document is then its one line of corpus.jsonl, fetched by a Range request (neighbouring lines
// in one request, at most 6 requests at a time) and checked by the importer's own corpus reader
// (core/shard/read-corpus.ts: same fields, same messages, with the file and line named).
import type { Doc } from '../core/types';
import { findDocRow } from '../core/shard/doc-directory';
import { decodeDocOffsets, type DocOffsets } from '../core/shard/doc-offsets';
import { ShardReadContext } from '../core/shard/read-context';
import { readCorpus } from '../core/shard/read-corpus';
import { ShardValidationError, type ShardSource } from '../core/shard/source';
import type { Line } from '../core/shard/lines';

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

export class RangeDocReader {
  readonly corpusUrl: string;
  readonly offsetsUrl: string;
  #offsets: Promise<DocOffsets> | null = null;
  #inverse: Uint32Array | null = null;
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

  /** The offsets file, fetched on the first call and kept. */
  offsets(signal?: AbortSignal): Promise<DocOffsets> {
    this.#offsets ??= (async () => {
      const res = await fetch(this.offsetsUrl, { signal });
      if (!res.ok) throw new Error(`${this.offsetsUrl}: HTTP ${res.status} ${res.statusText}`.trim());
      const bytes = new Uint8Array(await res.arrayBuffer());
      this.bytesRead += bytes.length;
      return decodeDocOffsets(bytes, this.offsetsUrl);
    })();
    // A failed fetch is tried again on the next call.
    this.#offsets.catch(() => (this.#offsets = null));
    return this.#offsets;
  }

  /** The documents of `ids` the shard has (ids it does not have are left out). */
  async readIds(ids: Iterable<string>, signal?: AbortSignal): Promise<Map<string, Doc>> {
    const o = await this.offsets(signal);
    const rows: number[] = [];
    for (const id of ids) {
      const r = findDocRow(o.dir, id);
      if (r >= 0) rows.push(r);
    }
    const out = new Map<string, Doc>();
    for (const d of (await this.readRows(rows, signal)).values()) out.set(d.id, d);
    return out;
  }

  /** The documents at corpus `rows` (rows past the end are skipped), checked as the importer checks them. */
  async readRows(rows: Iterable<number>, signal?: AbortSignal): Promise<Map<number, Doc>> {
    const o = await this.offsets(signal);
    const n = o.starts.length;
    const want = [...new Set(rows)].filter((r) => r >= 0 && r < n).sort((a, b) => o.starts[a] - o.starts[b]);
    // Neighbouring lines go in one request.
    const groups: number[][] = [];
    for (const r of want) {
      const g = groups[groups.length - 1];
      const last = g?.[g.length - 1];
      if (
        g &&
        o.starts[r] - (o.starts[last!] + o.lengths[last!]) <= MERGE_GAP_BYTES &&
        o.starts[r] + o.lengths[r] - o.starts[g[0]] <= MAX_REQUEST_BYTES
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
        const start = o.starts[g[0]];
        const last = g[g.length - 1];
        const bytes = await this.#range(start, o.starts[last] + o.lengths[last], o.corpusBytes, signal);
        for (const r of g) {
          const at = o.starts[r] - start;
          const raw = bytes.subarray(at, at + o.lengths[r]);
          let text: string;
          try {
            text = decoder.decode(raw);
          } catch {
            throw new ShardValidationError([
              { file: 'corpus.jsonl', line: o.lines[r], code: 'invalid-utf8', message: 'invalid UTF-8' },
            ]);
          }
          lines.set(r, { text, line: o.lines[r], offset: o.starts[r] });
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
    ctx.format = o.format;
    ctx.strict = o.format === 'beir+images';
    try {
      if (ordered.length) await readCorpus(ctx, 'corpus.jsonl');
    } catch (e) {
      if (!(e instanceof ShardValidationError)) throw e;
    }
    if (ctx.issues.length) throw new ShardValidationError(ctx.issues);
    const out = new Map<number, Doc>();
    ordered.forEach((r, i) => {
      const d = ctx.docs[i];
      const id = this.#idOfRow(o, r);
      if (d?.id !== id)
        throw new ShardValidationError([
          {
            file: 'corpus.jsonl',
            line: o.lines[r],
            code: 'offsets-stale',
            message: `holds document ${JSON.stringify(d?.id)}, where corpus.offsets.bin names ${JSON.stringify(id)}: the corpus changed after it was packed; run npm run pack-shard again`,
          },
        ]);
      out.set(r, d);
    });
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
