// Streaming line reader for JSON Lines and TSV files. Works on raw byte chunks so that a line is decoded
// (and UTF-8-validated) exactly once, whatever the chunking, and a huge line costs O(n).

import type { ShardIssue } from './source';
import type { ShardWarning } from '../types';

import { DEFAULT_LIMITS, LIMIT_OPTIONS } from './limits';

/** Default cap on one line (and on whole small files read in one piece): DEFAULT_LIMITS.maxLineBytes. */
export const DEFAULT_MAX_LINE_BYTES = DEFAULT_LIMITS.maxLineBytes;

/** One line of a file, without its `\n` (and without a `\r` before it). */
export interface Line {
  text: string;
  /** 1-based physical line number (blank and skipped lines are counted). */
  line: number;
  /** Byte offset of the line's first byte in the file. */
  offset: number;
}

/** Options of {@link readLines}. */
export interface LineReaderOptions {
  /** Shard-relative path used in issues and warnings. */
  file: string;
  /** Longest line accepted, in bytes (default {@link DEFAULT_MAX_LINE_BYTES}). */
  maxLineBytes?: number;
  /**
   * Strict mode (the "BEIR + images" rules): a BOM, `\r\n` endings and blank lines are issues.
   * Lenient mode strips the BOM and `\r`, skips blank lines, and reports them as warnings. Default true.
   */
  strict?: boolean;
  /** Called with every raw chunk before it is split (hashing, byte counts, cancellation); may await. */
  onChunk?: (chunk: Uint8Array) => void | Promise<void>;
  /** Non-fatal problems (the line is skipped or repaired). Without it they throw {@link LineReadError}. */
  onIssue?: (issue: ShardIssue) => void;
  /** Lenient-mode notes, each reported once per file. */
  onWarning?: (warning: ShardWarning) => void;
  /**
   * Reading from the middle of a file (a resumed import): the file offset of the stream's first byte,
   * how many of its bytes to pass to onChunk without splitting (up to the first line wanted, which must
   * start a line), and that line's number.
   */
  from?: { streamOffset: number; skip: number; line: number };
}

/** A problem that stops reading the file (or any problem when no `onIssue` is given). */
export class LineReadError extends Error {
  readonly issue: ShardIssue;
  constructor(issue: ShardIssue) {
    super(`${issue.file}${issue.line ? `:${issue.line}` : ''}: ${issue.message}`);
    this.name = 'LineReadError';
    this.issue = issue;
  }
}

const NL = 0x0a;
const CR = 0x0d;

/**
 * Splits a byte stream into lines on `\n`. The source must not modify a chunk after yielding it (pieces of
 * a long line are kept by reference until the line is complete). Throws {@link LineReadError} with code
 * `line-too-large` as soon as a line exceeds the cap, without reading the rest of it.
 */
export async function* readLines(
  chunks: AsyncIterable<Uint8Array>,
  opts: LineReaderOptions,
): AsyncGenerator<Line> {
  const { file, onChunk, onIssue, onWarning } = opts;
  const maxLineBytes = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const strict = opts.strict ?? true;
  // One fatal decoder reused per line; ignoreBOM keeps a U+FEFF visible instead of silently eating it at the
  // start of every decode() call (we handle the file-start BOM ourselves at byte level).
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const report = (issue: ShardIssue): void => {
    if (onIssue) onIssue(issue);
    else throw new LineReadError(issue);
  };

  let pieces: Uint8Array[] = [];
  let pending = 0;
  let lineNo = opts.from?.line ?? 1;
  let skip = opts.from?.skip ?? 0;
  let chunkStart = opts.from?.streamOffset ?? 0;
  let lineStart = chunkStart + skip;
  let sawCr = false;
  let blankLines = 0;
  let firstBlank = 0;

  const finish = (raw: Uint8Array): Line | null => {
    let bytes = raw;
    let start = lineStart;
    if (lineNo === 1 && bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
      if (strict) {
        report({
          file,
          line: 1,
          code: 'bom',
          message: 'file starts with a UTF-8 byte order mark (BOM); save it as UTF-8 without BOM',
        });
      } else {
        onWarning?.({
          file,
          code: 'bom',
          message: 'byte order mark (BOM) at the start of the file was stripped',
        });
      }
      bytes = bytes.subarray(3);
      start += 3;
    }
    if (bytes.length > 0 && bytes[bytes.length - 1] === CR) {
      if (!sawCr) {
        sawCr = true;
        if (strict) {
          report({
            file,
            line: lineNo,
            code: 'crlf',
            message:
              'line ends with \\r\\n; use \\n line endings (first such line; \\r is ignored in the rest of the file)',
          });
        } else {
          onWarning?.({
            file,
            code: 'crlf',
            message: '\\r\\n line endings: the \\r characters were stripped',
          });
        }
      }
      bytes = bytes.subarray(0, bytes.length - 1);
    }
    let text: string;
    try {
      text = decoder.decode(bytes);
    } catch {
      const at = invalidUtf8Offset(bytes);
      report({
        file,
        line: lineNo,
        code: 'invalid-utf8',
        message: `invalid UTF-8 at byte ${start + at + 1} of the file (byte ${at + 1} of the line; bytes counted from 1); the file must be UTF-8 encoded`,
      });
      return null;
    }
    if (text.trim() === '') {
      if (strict) {
        report({
          file,
          line: lineNo,
          code: 'blank-line',
          message: 'blank line; the file must have one record per line and no blank lines',
        });
      } else {
        if (blankLines === 0) firstBlank = lineNo;
        blankLines++;
      }
      return null;
    }
    return { text, line: lineNo, offset: start };
  };

  const tooLarge = (): LineReadError =>
    new LineReadError({
      file,
      line: lineNo,
      code: 'line-too-large',
      message:
        `line is longer than ${maxLineBytes} bytes (the limit); reading stopped here. No real corpus has ` +
        `such a record: check the export, or raise the limit with ${LIMIT_OPTIONS.maxLineBytes.name}=<MiB>`,
    });

  for await (const chunk of chunks) {
    if (onChunk) {
      const r = onChunk(chunk);
      if (r) await r;
    }
    let pos = 0;
    if (skip > 0) {
      pos = Math.min(skip, chunk.length);
      skip -= pos;
    }
    while (pos < chunk.length) {
      const nl = chunk.indexOf(NL, pos);
      const end = nl < 0 ? chunk.length : nl;
      if (pending + (end - pos) > maxLineBytes) throw tooLarge();
      if (nl < 0) {
        pieces.push(chunk.subarray(pos));
        pending += chunk.length - pos;
        break;
      }
      const tail = chunk.subarray(pos, nl);
      const raw = pieces.length === 0 ? tail : concat(pieces, tail, pending + tail.length);
      pieces = [];
      pending = 0;
      const out = finish(raw);
      if (out) yield out;
      lineNo++;
      lineStart = chunkStart + nl + 1;
      pos = nl + 1;
    }
    chunkStart += chunk.length;
  }
  // A last line without a trailing newline is accepted.
  if (pending > 0) {
    const out = finish(concat(pieces, new Uint8Array(0), pending));
    if (out) yield out;
  }
  if (blankLines > 0) {
    onWarning?.({
      file,
      code: 'blank-line',
      message: `${blankLines} blank line(s) skipped (first on line ${firstBlank})`,
      count: blankLines,
    });
  }
}

function concat(pieces: Uint8Array[], tail: Uint8Array, total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  out.set(tail, at);
  return out;
}

/**
 * Index of the first byte that does not start a valid UTF-8 sequence (overlong forms, surrogates and
 * code points above U+10FFFF are invalid), or `bytes.length` when the whole buffer is valid.
 */
export function invalidUtf8Offset(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b = bytes[i];
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lo = 0xa0;
      else if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) lo = 0x90;
      else if (b === 0xf4) hi = 0x8f;
    } else return i;
    if (i + need >= n) return i; // truncated sequence
    const b1 = bytes[i + 1];
    if (b1 < lo || b1 > hi) return i;
    for (let k = 2; k <= need; k++) {
      const c = bytes[i + k];
      if (c < 0x80 || c > 0xbf) return i;
    }
    i += need + 1;
  }
  return n;
}
