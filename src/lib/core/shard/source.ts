// Where a shard's files come from. Adapters implement this for a browser folder, a .zip, a URL
// and (in tests and scripts) a Node directory; the core parser only sees this interface.

/** A read-only tree of files addressed by shard-relative paths (`qrels/test.tsv`, `images/a.jpg`). */
export interface ShardSource {
  /** Human label for messages: folder name, zip file name or URL. */
  readonly label: string;
  /** Every file path in the source, or null when it cannot be enumerated (a URL). */
  list(): Promise<string[] | null>;
  /**
   * Files come over the network without a listing (a URL): asking for a file that is not there costs
   * a request and a 404, so optional files are asked for only when the manifest names them.
   */
  readonly remote?: boolean;
  /** The file's bytes as a stream of chunks, or null when the file does not exist. */
  open(path: string): Promise<AsyncIterable<Uint8Array> | null>;
  /** The file's size in bytes when known without reading it. */
  size(path: string): Promise<number | undefined>;
  /**
   * Random access to a file (Parquet needs its footer first), or null when it does not exist. Sources
   * without it are read whole into memory by the Parquet reader.
   */
  openRandom?(path: string): Promise<RandomAccessFile | null>;
  /**
   * Reads the shard's image packs (zips named by shard.json's `images_pack`) now, each with one
   * request, and serves the images they hold from them from then on (others are read as before).
   * Only sources for which one request per image is the cost implement it (a URL). Throws a
   * ShardValidationError naming the pack when one is missing or is not a readable zip.
   */
  usePacks?(files: string[], opts?: PackReadOptions): Promise<void>;
}

/** How a source reports and stops the download of image packs (the read's progress and cancel). */
export interface PackReadOptions {
  /** Bytes of `file` received so far, and its size when known. */
  onBytes?(file: string, bytes: number, totalBytes?: number): void;
  /** Throws (an AbortError) when the read was cancelled; called between received chunks. */
  checkCancelled?(): void;
}

/** A file read by byte ranges (hyparquet's AsyncBuffer): a Blob, a stored zip entry, an HTTP range. */
export interface RandomAccessFile {
  byteLength: number;
  /** Bytes [start, end) of the file (end defaults to its length). */
  slice(start: number, end?: number): ArrayBuffer | Promise<ArrayBuffer>;
}

/** One problem found while reading a shard: where it is and what is wrong. */
export interface ShardIssue {
  /** Shard-relative file path, e.g. `corpus.jsonl`. */
  file: string;
  /** 1-based line number when the problem is on a line. */
  line?: number;
  /** Parquet: 0-based row group of the file the problem is in. */
  rowGroup?: number;
  /** Parquet: 0-based row of the file (counted over all its row groups, as pandas/pyarrow do). */
  row?: number;
  /** Stable machine-readable code, e.g. `malformed-json`, `duplicate-id`. */
  code: string;
  message: string;
}

/** Thrown when a shard fails validation; carries every issue found (capped). */
export class ShardValidationError extends Error {
  readonly issues: ShardIssue[];
  constructor(issues: ShardIssue[]) {
    const first = issues[0];
    const where = first ? `${issueLocation(first)}: ` : '';
    const more = issues.length > 1 ? ` (+${issues.length - 1} more)` : '';
    super(`${where}${first?.message ?? 'invalid shard'}${more}`);
    this.name = 'ShardValidationError';
    this.issues = issues;
  }
}

/** `file:line`, or for Parquet `file (row group g, row r)`, for messages. */
export function issueLocation(i: ShardIssue): string {
  if (i.rowGroup !== undefined || i.row !== undefined) {
    const parts = [
      ...(i.rowGroup !== undefined ? [`row group ${i.rowGroup}`] : []),
      ...(i.row !== undefined ? [`row ${i.row}`] : []),
    ];
    return `${i.file} (${parts.join(', ')})`;
  }
  return `${i.file}${i.line ? `:${i.line}` : ''}`;
}

/** The byte length a source's stream may carry (an HTTP response's Content-Length), for progress. */
const BYTE_LENGTH = Symbol('loupe.byteLength');

/** `stream` marked with its length in bytes (when known); returns the same object. */
export function withByteLength<T extends AsyncIterable<Uint8Array>>(stream: T, n: number | undefined): T {
  if (n !== undefined && Number.isFinite(n) && n >= 0)
    Object.defineProperty(stream, BYTE_LENGTH, { value: n, enumerable: false });
  return stream;
}

/** The length in bytes a stream from a source was marked with (withByteLength), if any. */
export function byteLengthOf(stream: AsyncIterable<Uint8Array>): number | undefined {
  return (stream as { [BYTE_LENGTH]?: number })[BYTE_LENGTH];
}
