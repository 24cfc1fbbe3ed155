// A shard's image packs (shard.json's `images_pack`, written by `pack-shard --images`) as a URL
// source receives them: each pack's body gathered into a Blob with its bytes reported and the read
// stoppable between chunks, and the error for a pack the shard does not have. sources.ts reads the
// images out of the Blob with its zip reader.
import { ShardValidationError, type PackReadOptions } from '../../core/shard/source';

/** The import's error for a pack shard.json names and the host does not have. */
export function missingPack(name: string): ShardValidationError {
  return new ShardValidationError([
    {
      file: name,
      code: 'missing-image-pack',
      message: `${name} is named in shard.json ("images_pack") but the shard has no such file: run pack-shard --images again, or remove "images_pack" from shard.json`,
    },
  ]);
}

/** Bytes a received pack gathers in memory before they become a Blob of their own (which the browser may keep on disk). */
const PACK_PART_BYTES = 16 << 20;

/**
 * An image pack's body as a Blob, read chunk by chunk: its bytes reported as they come, the read
 * stopped between chunks when cancelled, and at most PACK_PART_BYTES held as plain memory at once
 * (a pack may be gigabytes; the browser keeps large Blobs on disk).
 */
export async function receivePack(res: Response, name: string, opts: PackReadOptions): Promise<Blob> {
  const total = Number(res.headers.get('Content-Length')) || undefined;
  if (!res.body) return res.blob();
  const reader = res.body.getReader();
  const parts: Blob[] = [];
  let pending: Uint8Array<ArrayBuffer>[] = [];
  let pendingBytes = 0;
  let bytes = 0;
  try {
    for (;;) {
      opts.checkCancelled?.();
      const { done, value } = await reader.read();
      if (done) break;
      pending.push(value as Uint8Array<ArrayBuffer>);
      pendingBytes += value.byteLength;
      bytes += value.byteLength;
      opts.onBytes?.(name, bytes, total);
      if (pendingBytes >= PACK_PART_BYTES) {
        parts.push(new Blob(pending));
        pending = [];
        pendingBytes = 0;
      }
    }
  } catch (e) {
    await reader.cancel().catch(() => undefined);
    throw e;
  }
  parts.push(new Blob(pending));
  return new Blob(parts);
}
