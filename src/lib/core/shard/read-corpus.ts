// corpus.jsonl: one document per line (`_id`, `title`, `text`, optional `image` / `images`; R2MED's `id`),
// other string fields kept as metadata. Duplicate ids are issues; empty upstream documents a warning.

import type { Doc } from '../types';
import { EXAMPLES, describe } from './json-text';
import type { ShardReadContext } from './read-context';
import { collectMeta, idField, imageField, imagesField, parseObject, reqString } from './read-records';

/** Reads the corpus into ctx.docs (and ctx.docLines, each id's line). */
export async function readCorpus(ctx: ShardReadContext, file: string): Promise<void> {
  const idKey = ctx.format === 'r2med' ? 'id' : '_id';
  const reserved = new Set([
    idKey,
    'title',
    'text',
    ...(ctx.strict ? ['image', 'images'] : []),
    ...(ctx.format === 'beir' ? ['metadata'] : []),
  ]);
  let empty = 0;
  const emptyExamples: string[] = [];
  for await (const l of ctx.lines(file)) {
    const o = parseObject(ctx, file, l);
    if (!o) continue;
    const id = idField(ctx, file, l.line, o, idKey);
    let title = '';
    if (ctx.format === 'beir+images') {
      title = reqString(ctx, file, l.line, o, 'title') ?? '';
    } else if (ctx.format === 'beir' && o.title !== undefined && o.title !== null) {
      if (typeof o.title === 'string') title = o.title;
      else
        ctx.issue({
          file,
          line: l.line,
          code: 'wrong-type',
          message: `field "title" must be a string, found ${describe(o.title)}`,
        });
    }
    const text = reqString(ctx, file, l.line, o, 'text');
    const image = ctx.strict ? imageField(ctx, file, l.line, o) : undefined;
    const images = ctx.strict ? imagesField(ctx, file, l.line, o) : undefined;
    if (id === null) continue;
    const first = ctx.docLines.get(id);
    if (first !== undefined) {
      ctx.issue({
        file,
        line: l.line,
        code: 'duplicate-id',
        message: `duplicate document _id ${JSON.stringify(id)} (first on line ${first})`,
      });
      continue;
    }
    ctx.docLines.set(id, l.line);
    if (text === null) continue;
    if (ctx.strict) {
      if (text.trim() === '' && o.image === undefined && o.images === undefined) {
        ctx.issue({
          file,
          line: l.line,
          code: 'empty-doc',
          message: `document ${JSON.stringify(id)} has neither a non-empty "text" nor an "image"`,
        });
      }
    } else if (text.trim() === '' && title.trim() === '') {
      if (empty++ < EXAMPLES) emptyExamples.push(id);
    }
    const doc: Doc = { id, title, text, meta: collectMeta(o, reserved, ctx.format === 'beir') };
    if (image !== undefined) doc.image = image;
    if (images) {
      doc.image = images[0].path;
      doc.images = images;
    }
    ctx.docCount++;
    if (!ctx.opts.onDoc) ctx.docs.push(doc);
    else if (ctx.issues.length === 0) await ctx.opts.onDoc(doc);
  }
  if (empty > 0) {
    ctx.warnings.push({
      file,
      code: 'empty-doc',
      message: `${empty} document(s) have no title and no text`,
      count: empty,
      examples: emptyExamples,
    });
  }
  if (ctx.docLines.size === 0) ctx.issue({ file, code: 'empty-corpus', message: `${file} has no documents` });
}
