// The second pass of a streamed import: the corpus file read again, line by line, with the same
// validation as readShard's first pass, each document handed to `onDoc` (the importer writes them to
// the cache in batches), and the file's digest checked against the first pass so a file changed in
// between (a folder edited during the import) fails instead of storing documents the hash does not
// describe.

import type { Doc, Progress, ProgressFn, ShardFormat } from '../types';
import { HASH_BLOCK_BYTES, toHex } from './hash';
import { ShardReadContext, type ReadShardOptions } from './read-context';
import { readCorpus } from './read-corpus';
import { ShardValidationError, type ShardSource } from './source';

/** What the first pass found (ParsedShard.streamed and the manifest's format). */
export interface StreamedCorpus {
  format: ShardFormat;
  corpusFile: string;
  corpusDigest: string;
  docCount: number;
}

/**
 * Where a document of the second pass lies: its line's first byte and number, how many documents
 * there are up to it (it included), its id, and the digests of the corpus's whole hash blocks before
 * it. A resumed import goes on from the last document committed with these (no first pass again).
 */
export interface CorpusMark {
  offset: number;
  line: number;
  docs: number;
  id: string;
  blocks: Uint8Array;
}

/**
 * A second pass that goes on from `at` (the last document committed), its corpus stream starting at
 * byte `streamOffset` (a hash block boundary at or before at.offset: 0 re-reads and re-checks the
 * part already stored).
 */
export interface CorpusResume {
  at: CorpusMark;
  streamOffset: number;
}

/**
 * Reads `corpus.corpusFile` again and hands every document to `onDoc`, in file order, with a
 * function giving its mark (asked for the last document of each stored batch). Throws
 * ShardValidationError when the file now has issues or differs from the first pass (its digest or
 * its document count), and an `AbortError` when cancelled. With `resume`, the documents up to and
 * including resume.at are not handed again; the file up to there must hash as it did.
 */
export async function streamCorpus(
  source: ShardSource,
  corpus: StreamedCorpus,
  onDoc: (doc: Doc, mark: () => Promise<CorpusMark>) => void | Promise<void>,
  opts: Omit<ReadShardOptions, 'onDoc' | 'onImage'> = {},
  resume?: CorpusResume,
): Promise<void> {
  const file = corpus.corpusFile;
  const changed = () =>
    new ShardValidationError([
      {
        file,
        code: 'changed-during-import',
        message:
          `${file} changed while it was being imported (its content differs from when it was checked); ` +
          'nothing was kept. Import it again once it no longer changes',
      },
    ]);
  let skip = resume !== undefined;
  // The first pass checked every id; this one is checked by the file's digest (same bytes, same ids),
  // so its map of ids is emptied as it goes instead of holding every id of the corpus again.
  const ctx: ShardReadContext = new ShardReadContext(source, {
    ...opts,
    onDoc: async (doc) => {
      if (ctx.docLines.size >= 4096) {
        ctx.docLines.clear();
        ctx.docLines.set(doc.id, 0); // never empty (readCorpus reports an empty corpus by it)
      }
      const line = ctx.lastLine!;
      const hasher = ctx.hasher!;
      if (skip) {
        // The last document stored: the same one, after the same bytes, or the source is another.
        skip = false;
        const at = resume!.at;
        const before = await hasher.blocksBefore(at.offset);
        if (doc.id !== at.id || line.offset !== at.offset || !sameBytes(before, at.blocks)) throw changed();
        return;
      }
      const docs = ctx.docCount;
      return onDoc(doc, async () => ({
        offset: line.offset,
        line: line.line,
        docs,
        id: doc.id,
        blocks: await hasher.blocksBefore(line.offset),
      }));
    },
  });
  ctx.format = corpus.format;
  ctx.strict = corpus.format === 'beir+images';
  if (resume) {
    const n = Math.floor(resume.streamOffset / HASH_BLOCK_BYTES);
    ctx.resumeAt = {
      file,
      streamOffset: resume.streamOffset,
      blocks: resume.at.blocks.subarray(0, 32 * n),
      offset: resume.at.offset,
      line: resume.at.line,
    };
    ctx.docCount = resume.at.docs - 1; // the last one stored is read again (and not handed on)
  }
  try {
    await readCorpus(ctx, file);
  } finally {
    await ctx.closeProbes();
  }
  if (ctx.issues.length > 0) throw new ShardValidationError(ctx.issues);
  const digest = ctx.fileHashes.get(file);
  if (skip || !digest || toHex(digest) !== corpus.corpusDigest || ctx.docCount !== corpus.docCount)
    throw changed();
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * What the checks after the read (precomputed embeddings: which documents have a text or an image
 * part, in shard order) need of the documents, kept compactly by a streamed import: the ids (strings
 * the reader made anyway), the few documents without text, and the image paths.
 */
export class DocCheckRefs {
  private readonly ids: string[] = [];
  private readonly noText = new Set<number>();
  private readonly images = new Map<number, string>();

  add(d: Doc): void {
    const i = this.ids.push(d.id) - 1;
    if (![d.title, d.text].some((s) => !!s && !!s.trim())) this.noText.add(i);
    if (d.image !== undefined) this.images.set(i, d.image);
  }

  get size(): number {
    return this.ids.length;
  }

  /** The documents as the checks take them (`text` is 't' for a document with a text part, else ''). */
  list(): { id: string; text: string; image?: string }[] {
    return this.ids.map((id, i) => {
      const image = this.images.get(i);
      const text = this.noText.has(i) ? '' : 't';
      return image !== undefined ? { id, text, image } : { id, text };
    });
  }
}

/**
 * Progress with rates: each `read` tick, and each `parse` tick that counts bytes, gets the lines per
 * second of its file so far (documents per second for the corpus) and the time its file still needs
 * at the byte rate so far.
 */
export function withReadRates(fn: ProgressFn | undefined): ProgressFn | undefined {
  if (!fn) return fn;
  let file = '';
  let started = 0;
  let lines = 0;
  return (p: Progress) => {
    if (p.kind === 'parse' && p.file === file) lines = p.lines;
    if (p.kind !== 'read' && (p.kind !== 'parse' || p.bytes === undefined)) return fn(p);
    const now = Date.now();
    if (p.file !== file) {
      file = p.file;
      started = now;
      lines = p.kind === 'parse' ? p.lines : 0;
    }
    const bytes = p.bytes ?? 0;
    const s = (now - started) / 1000;
    if (s < 0.5 || bytes === 0) return fn(p);
    const left = p.totalBytes !== undefined ? Math.max(0, p.totalBytes - bytes) : undefined;
    fn({
      ...p,
      docsPerSec: lines / s,
      ...(left !== undefined ? { etaSeconds: left / (bytes / s) } : {}),
    });
  };
}
