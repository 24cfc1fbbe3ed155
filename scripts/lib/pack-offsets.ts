// Writes corpus.offsets.bin (version 2: src/lib/core/shard/doc-offsets-v2.ts) for a shard's
// corpus.jsonl: the corpus is split into lines by the importer's own line reader (same BOM, \r\n and
// blank-line rules, same byte offsets), each line's id read with its format's id key, and the file
// named in shard.json. Beside it, so that a shard opened by URL reads a few kilobytes to open: the
// checksum of queries.jsonl and qrels/test.tsv when the importer's readers find every document they
// name (checked here, so the app need not look each id up), and each
// precomputed set's sidecar whose doc_ids are the corpus's ids in order says so by `corpus_order`
// instead of listing them (written to a new file, then renamed: a hard-linked copy keeps its own).
import { createReadStream, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readLines } from '../../src/lib/core/shard/lines';
import { DOC_OFFSETS_FILE, DOC_OFFSETS_KEY } from '../../src/lib/core/shard/doc-offsets';
import {
  REMOTE_HEAD,
  encodeDocOffsetsV2,
  idsFnv,
  remoteHeadFnv,
} from '../../src/lib/core/shard/doc-offsets-v2';
import { ShardReadContext } from '../../src/lib/core/shard/read-context';
import { readManifest } from '../../src/lib/core/shard/read-manifest';
import { checkRelevance, readTsvQrels } from '../../src/lib/core/shard/read-qrels';
import { readQueries } from '../../src/lib/core/shard/read-queries';
import { ShardValidationError } from '../../src/lib/core/shard/source';
import { FsSource } from './fs-source';
import { PRECOMPUTED_INDEX } from '../../src/lib/core/shard/precomputed';
import type { ShardFormat } from '../../src/lib/core/types';

/** The shard's format, as the importer detects it: shard.json, else R2MED's query.jsonl, else BEIR. */
export function shardFormat(dir: string): ShardFormat {
  if (existsSync(join(dir, 'shard.json'))) return 'beir+images';
  if (existsSync(join(dir, 'query.jsonl'))) return 'r2med';
  return 'beir';
}

/**
 * Writes `out`/corpus.offsets.bin for `dir`/corpus.jsonl (to a temporary name, then renamed) and adds
 * `"doc_offsets"` to `out`/shard.json when there is one. Throws on a line that is not a document.
 */
export async function writeDocOffsets(
  dir: string,
  out: string,
): Promise<{ file: string; docs: number; bytes: number }> {
  const corpus = join(dir, 'corpus.jsonl');
  const format = shardFormat(dir);
  const idKey = format === 'r2med' ? 'id' : '_id';
  const ids: string[] = [];
  const starts: number[] = [];
  const lengths: number[] = [];
  const lines: number[] = [];
  const seen = new Set<string>();
  let fnv = 0x811c9dc5;
  const enc = new TextEncoder();
  for await (const l of readLines(createReadStream(corpus) as AsyncIterable<Uint8Array>, {
    file: 'corpus.jsonl',
    strict: format === 'beir+images',
    maxLineBytes: 1 << 30,
    onChunk: (chunk) => {
      for (let i = 0; i < chunk.length; i++) fnv = Math.imul(fnv ^ chunk[i], 0x01000193);
    },
  })) {
    let id: unknown;
    try {
      id = (JSON.parse(l.text) as Record<string, unknown>)[idKey];
    } catch (e) {
      throw new Error(`${corpus}:${l.line}: not a JSON object (${(e as Error).message})`);
    }
    if (typeof id !== 'string') throw new Error(`${corpus}:${l.line}: no string "${idKey}"`);
    // The importer skips a repeated id (an issue): such a corpus is not packed.
    if (seen.has(id)) throw new Error(`${corpus}:${l.line}: duplicate id ${JSON.stringify(id)}`);
    seen.add(id);
    ids.push(id);
    starts.push(l.offset);
    lengths.push(enc.encode(l.text).length);
    lines.push(l.line);
  }
  const qrelsFnv = format === 'beir+images' ? await checkedHead(dir, seen) : undefined;
  const bytes = encodeDocOffsetsV2({
    ids,
    starts,
    lengths,
    lines,
    corpusBytes: statSync(corpus).size,
    corpusFnv: fnv >>> 0,
    format,
    ...(qrelsFnv !== undefined ? { qrelsFnv } : {}),
  });
  compactSidecars(dir, out, ids);
  const file = join(out, DOC_OFFSETS_FILE);
  writeFileSync(`${file}.tmp`, bytes);
  renameSync(`${file}.tmp`, file);
  const manifestFile = join(out, 'shard.json');
  if (existsSync(manifestFile)) {
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Record<string, unknown>;
    if (manifest[DOC_OFFSETS_KEY] !== DOC_OFFSETS_FILE)
      writeFileSync(
        manifestFile,
        JSON.stringify({ ...manifest, [DOC_OFFSETS_KEY]: DOC_OFFSETS_FILE }, null, 2) + '\n',
      );
  }
  return { file, docs: ids.length, bytes: bytes.length };
}

/**
 * The FNV-1a of queries.jsonl's bytes followed by qrels/test.tsv's (remoteHeadFnv) when the importer's
 * own readers find every document those files name (judged ids, exclude_ids) in the corpus and no
 * other problem in them; else undefined (the app then looks each id up when it opens the shard).
 */
async function checkedHead(dir: string, ids: ReadonlySet<string>): Promise<number | undefined> {
  const files = [REMOTE_HEAD.queries, REMOTE_HEAD.qrels].map((f) => join(dir, f));
  if (!files.every((f) => existsSync(f))) return undefined;
  const ctx = new ShardReadContext(new FsSource(dir), {});
  Object.defineProperty(ctx, 'docLines', {
    value: Object.assign(new Map<string, number>(), { has: (id: string) => ids.has(id) }),
  });
  Object.defineProperty(ctx.docLines, 'size', { get: () => ids.size });
  ctx.format = 'beir+images';
  ctx.strict = true;
  try {
    await readManifest(ctx);
    await readQueries(ctx, REMOTE_HEAD.queries);
    await readTsvQrels(ctx, REMOTE_HEAD.qrels);
    checkRelevance(ctx, REMOTE_HEAD.qrels);
  } catch (e) {
    if (!(e instanceof ShardValidationError)) throw e;
  } finally {
    await ctx.closeProbes();
  }
  if (ctx.issues.length) return undefined;
  return remoteHeadFnv(readFileSync(files[0]), readFileSync(files[1]));
}

/** Rewrites each sidecar of `out` whose doc_ids are `ids` in order with `corpus_order` instead. */
function compactSidecars(dir: string, out: string, ids: readonly string[]): void {
  const index = join(dir, PRECOMPUTED_INDEX);
  if (!existsSync(index)) return;
  const entries = JSON.parse(readFileSync(index, 'utf8')) as { sets?: { path?: unknown }[] } | unknown[];
  const sets = Array.isArray(entries) ? entries : (entries.sets ?? []);
  const fnv = idsFnv(ids).toString(16).padStart(8, '0');
  for (const e of sets as { path?: unknown }[]) {
    if (typeof e?.path !== 'string') continue;
    for (const part of ['text', 'image']) {
      const rel = join('embeddings', e.path, `sidecar-${part}.json`);
      if (!existsSync(join(dir, rel))) continue;
      const sidecar = JSON.parse(readFileSync(join(dir, rel), 'utf8')) as Record<string, unknown>;
      const list = sidecar.doc_ids;
      if (!Array.isArray(list) || list.length !== ids.length || list.some((id, i) => id !== ids[i])) continue;
      const { doc_ids: _ids, ...rest } = sidecar;
      const file = join(out, rel);
      writeFileSync(
        `${file}.tmp`,
        JSON.stringify({ ...rest, corpus_order: { docs: ids.length, ids_fnv1a: fnv } }, null, 2) + '\n',
      );
      renameSync(`${file}.tmp`, file);
    }
  }
}
