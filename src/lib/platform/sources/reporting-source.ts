// Whole-file reads that say how far they are: a source whose streams send `read` ticks (the file, its
// bytes so far and its length when the host sent one) and a response body read whole the same way, so
// that no long read leaves the progress line without a phase, a count and a time left.
import type { ProgressFn } from '../../core/types';
import { byteLengthOf, type ShardSource } from '../../core/shard/source';

/** READ_TICK_MS: least time between two progress ticks of one file being read. */
const READ_TICK_MS = 100;

/**
 * `source` whose files say how much of them was read as they are read (`read` ticks: the file, its
 * bytes so far and its length when the host sent one), so that no whole-file read is silent.
 */
export function reportingSource(source: ShardSource, report?: ProgressFn): ShardSource {
  if (!report) return source;
  return Object.create(source, {
    open: {
      value: async (path: string) => {
        const stream = await source.open(path);
        if (!stream) return stream;
        const total = byteLengthOf(stream);
        const tick = (bytes: number) =>
          report({ kind: 'read', file: path, bytes, ...(total !== undefined ? { totalBytes: total } : {}) });
        // Said from the first chunk asked for (a probe that is never read says nothing).
        return (async function* () {
          let bytes = 0;
          let last = Date.now();
          tick(0);
          for await (const chunk of stream) {
            bytes += chunk.length;
            if (Date.now() - last >= READ_TICK_MS) {
              last = Date.now();
              tick(bytes);
            }
            yield chunk;
          }
          tick(bytes);
        })();
      },
    },
  }) as ShardSource;
}

/**
 * A response's body, whole, with `read` ticks (its bytes so far, of its Content-Length when sent)
 * at most every READ_TICK_MS while it comes in.
 */
export async function readBody(res: Response, url: string, onProgress?: ProgressFn): Promise<Uint8Array> {
  if (!onProgress || !res.body) return new Uint8Array(await res.arrayBuffer());
  const file = url.split('/').pop() ?? url;
  const len = res.headers.get('Content-Encoding') ? null : res.headers.get('Content-Length');
  const total = len ? Number(len) : undefined;
  const tick = (bytes: number) =>
    onProgress({ kind: 'read', file, bytes, ...(total !== undefined ? { totalBytes: total } : {}) });
  const parts: Uint8Array[] = [];
  let bytes = 0;
  let last = Date.now();
  tick(0);
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    bytes += value.length;
    if (Date.now() - last >= READ_TICK_MS) {
      last = Date.now();
      tick(bytes);
    }
  }
  tick(bytes);
  const out = new Uint8Array(bytes);
  let at = 0;
  for (const p of parts) out.set(p, (at += p.length) - p.length);
  return out;
}
