// queries.jsonl (R2MED: query.jsonl): one query per line (`_id`, `text`, and in "BEIR + images" its
// `task`, optional `image` / `images` and `exclude_ids`), other string fields kept as metadata.

import type { ImageRef, Query } from '../types';
import { EXAMPLES, describe, type Json } from './json-text';
import type { ShardReadContext } from './read-context';
import { collectMeta, idField, imageField, imagesField, parseObject, reqString } from './read-records';

/** Reads the queries into ctx.queries (and ctx.queryLines); needs the manifest and, for exclude_ids, the corpus. */
export async function readQueries(ctx: ShardReadContext, file: string): Promise<void> {
  const idKey = ctx.format === 'r2med' ? 'id' : '_id';
  const reserved = new Set(
    ctx.strict
      ? ['_id', 'text', 'image', 'images', 'task', 'exclude_ids']
      : ctx.format === 'beir'
        ? ['_id', 'text', 'metadata']
        : ['id', 'text'],
  );
  const taskIds = ctx.manifest.tasks.map((t) => t.id);
  const defaultTask = ctx.strict ? undefined : ctx.manifest.tasks[0].id;
  let empty = 0;
  const emptyExamples: string[] = [];
  for await (const l of ctx.lines(file)) {
    const o = parseObject(ctx, file, l);
    if (!o) continue;
    const id = idField(ctx, file, l.line, o, idKey);
    const text = reqString(ctx, file, l.line, o, 'text');
    let task = defaultTask;
    let image: string | undefined;
    let images: ImageRef[] | undefined;
    let excludeIds: string[] | undefined;
    if (ctx.strict) {
      task = reqString(ctx, file, l.line, o, 'task') ?? undefined;
      if (task !== undefined && !taskIds.includes(task)) {
        ctx.issue({
          file,
          line: l.line,
          code: 'unknown-task',
          message: `task ${JSON.stringify(task)} is not declared in shard.json (declared: ${taskIds.join(', ')})`,
        });
      }
      image = imageField(ctx, file, l.line, o);
      images = imagesField(ctx, file, l.line, o);
      excludeIds = excludeIdsField(ctx, file, l.line, o);
    }
    if (id === null) continue;
    const first = ctx.queryLines.get(id);
    if (first !== undefined) {
      ctx.issue({
        file,
        line: l.line,
        code: 'duplicate-id',
        message: `duplicate query _id ${JSON.stringify(id)} (first on line ${first})`,
      });
      continue;
    }
    ctx.queryLines.set(id, l.line);
    if (text === null || task === undefined) continue;
    if (text.trim() === '' && o.image === undefined && o.images === undefined) {
      if (ctx.strict) {
        ctx.issue({
          file,
          line: l.line,
          code: 'empty-query',
          message: `query ${JSON.stringify(id)} has neither a non-empty "text" nor an "image"`,
        });
      } else if (empty++ < EXAMPLES) emptyExamples.push(id);
    }
    const meta = collectMeta(o, reserved, ctx.format === 'beir');
    // R2MED leaves body_system empty for most subsets; an empty facet value would only be noise.
    if (ctx.format === 'r2med' && meta.body_system === '') delete meta.body_system;
    const q: Query = { id, text, task, meta };
    if (image !== undefined) q.image = image;
    if (images) {
      q.image = images[0].path;
      q.images = images;
    }
    if (excludeIds !== undefined) q.excludeIds = excludeIds;
    ctx.queries.push(q);
  }
  if (empty > 0) {
    ctx.warnings.push({
      file,
      code: 'empty-query',
      message: `${empty} query(ies) have empty text`,
      count: empty,
      examples: emptyExamples,
    });
  }
  if (ctx.queryLines.size === 0) ctx.issue({ file, code: 'no-queries', message: `${file} has no queries` });
}

/** The optional `exclude_ids` list: strings naming documents of the corpus. */
function excludeIdsField(ctx: ShardReadContext, file: string, line: number, o: Json): string[] | undefined {
  const v = o.exclude_ids;
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
    ctx.issue({
      file,
      line,
      code: 'wrong-type',
      message: `field "exclude_ids" must be a list of strings, found ${describe(v)}`,
    });
    return undefined;
  }
  const unknown = v.filter((d) => !ctx.docLines.has(d));
  if (unknown.length > 0) {
    ctx.issue({
      file,
      line,
      code: 'unknown-exclude-id',
      message: `exclude_ids names ${unknown.length} document(s) not in corpus.jsonl: ${unknown
        .slice(0, EXAMPLES)
        .map((d) => JSON.stringify(d))
        .join(', ')}`,
    });
  }
  return v;
}
