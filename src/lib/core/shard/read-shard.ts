// Reads and validates a benchmark shard from any ShardSource, streaming: "BEIR + images" (strict, the
// project's own format, spec in shared/data/README.md), plain BEIR and R2MED's native layout (both lenient,
// since they are upstream formats we import as they are). Either every problem is reported, with file,
// line and a stable code, or a fully valid ParsedShard is returned; never something in between.
// This file wires the readers of each input file (read-layout, read-manifest, read-corpus, read-queries,
// read-qrels, read-images, read-notice) over one ShardReadContext (read-context).

import { ShardValidationError, type ShardSource } from './source';
import type { ParsedShard } from '../types';
import { combineFileHashes, toHex } from './hash';
import { ShardReadContext, type ReadShardOptions } from './read-context';
import { detectLayout, synthesiseManifest } from './read-layout';
import { checkCounts, checkModalities, readManifest } from './read-manifest';
import { readCorpus } from './read-corpus';
import { readQueries } from './read-queries';
import { checkRelevance, readJsonQrels, readTsvQrels } from './read-qrels';
import { readImages } from './read-images';
import { readNotice } from './read-notice';

export type { ReadShardOptions } from './read-context';
export { MAX_ITEM_IMAGES } from './read-records';

/**
 * Reads, validates and returns a whole shard. Detects the format from the files present (probing with
 * `open()` when `list()` returns null). Throws {@link ShardValidationError} with every issue found (up to
 * `maxIssues`), or an `Error` named `AbortError` when cancelled.
 */
export async function readShard(source: ShardSource, opts: ReadShardOptions = {}): Promise<ParsedShard> {
  const ctx = new ShardReadContext(source, opts);
  try {
    return await read(ctx);
  } finally {
    await ctx.closeProbes();
  }
}

/** The files in their order: each reader checks its records against those read before it. */
async function read(ctx: ShardReadContext): Promise<ParsedShard> {
  ctx.checkCancelled();
  const listed = await ctx.source.list();
  ctx.listing = listed ? new Set(listed) : null;
  const layout = await detectLayout(ctx);
  ctx.format = layout.format;
  ctx.strict = layout.format === 'beir+images';

  if (ctx.strict) await readManifest(ctx);
  else ctx.manifest = synthesiseManifest(ctx.source.label, layout);

  await readCorpus(ctx, layout.corpus);
  await readQueries(ctx, layout.queries);
  if (layout.format === 'r2med') await readJsonQrels(ctx, layout.qrels);
  else await readTsvQrels(ctx, layout.qrels);
  checkRelevance(ctx, layout.qrels);
  const images = await readImages(ctx);
  const notice = await readNotice(ctx);
  if (ctx.strict) {
    checkCounts(ctx, images.length);
    checkModalities(ctx);
  }
  if (ctx.issues.length > 0) throw new ShardValidationError(ctx.issues);

  return {
    manifest: ctx.manifest,
    hash: await combineFileHashes(ctx.fileHashes),
    docs: ctx.docs,
    queries: ctx.queries,
    qrels: ctx.qrels,
    ...(notice !== undefined ? { notice } : {}),
    images,
    warnings: ctx.warnings,
    bytes: ctx.bytes,
    ...(ctx.opts.onDoc
      ? {
          streamed: {
            docCount: ctx.docCount,
            corpusFile: layout.corpus,
            corpusDigest: toHex(ctx.fileHashes.get(layout.corpus)!),
            files: Object.fromEntries([...ctx.fileHashes].map(([p, d]) => [p, toHex(d)])),
          },
        }
      : {}),
  };
}
