// NOTICE.md, the shard's optional licence and attribution text: UTF-8 (strict shards), or decoded with
// replacement characters and a warning (upstream formats).

import { lineAtByte } from './json-text';
import { invalidUtf8Offset } from './lines';
import type { ShardReadContext } from './read-context';

/** NOTICE.md's text, or undefined when the shard has none (or, strict, when it is not UTF-8). */
export async function readNotice(ctx: ShardReadContext): Promise<string | undefined> {
  const file = 'NOTICE.md';
  const stream = await ctx.open(file);
  if (!stream) return undefined;
  const bytes = await ctx.readWhole(file, stream);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    const at = invalidUtf8Offset(bytes);
    if (ctx.strict) {
      ctx.issue({
        file,
        line: lineAtByte(bytes, at),
        code: 'invalid-utf8',
        message: `invalid UTF-8 at byte ${at + 1} (bytes counted from 1); the file must be UTF-8 encoded`,
      });
      return undefined;
    }
    ctx.warnings.push({
      file,
      code: 'invalid-utf8',
      message: `invalid UTF-8 at byte ${at + 1} (bytes counted from 1); undecodable bytes were replaced`,
    });
    return new TextDecoder('utf-8').decode(bytes);
  }
}
