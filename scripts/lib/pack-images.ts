// `pack-shard --images`: the shard's images in zip files beside them (stored, not recompressed: JPEG,
// PNG and DICOM files gain little from deflate), named in shard.json as `"images_pack"`. A shard read
// over HTTP then gets its images with one request per pack, not one per image: 315 requests for
// vqa-rad, six at a time, took 1.4 s of a first visit on the bench machine (BENCHMARKS.md).
//
// The shard is read and checked first by the importer's own reader (readShard), so only a valid
// shard is packed and every image a record references goes in, by its shard path. The loose files
// stay: folder and zip imports, and a remote-first shard's images shown one by one, read them.
// A pack holds at most PACK_MAX_FILES entries and PACK_MAX_BYTES bytes (a classic zip, no ZIP64);
// a larger image set is split over images-1.zip, images-2.zip…
import {
  closeSync,
  existsSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { Zip, ZipPassThrough } from 'fflate';
import { readShard } from '../../src/lib/core/shard/read-shard';
import { FsSource } from './fs-source';
import { loadNodeDicomCodecs } from './node-dicom-codecs';

/** Entries per pack: under the 65,535 a zip without ZIP64 can hold. */
export const PACK_MAX_FILES = 60_000;
/** Bytes per pack: well under the 4 GiB a zip without ZIP64 can address. */
export const PACK_MAX_BYTES = 2 * 1024 ** 3;

export interface PackImagesResult {
  /** The pack files written (shard-relative names). */
  packs: string[];
  images: number;
  bytes: number;
}

/** Writes `dir`'s images into packs under `out` (default `dir`) and names them in `out`/shard.json. */
export async function packImages(
  dir: string,
  out = dir,
  limits: { maxFiles?: number; maxBytes?: number } = {},
): Promise<PackImagesResult> {
  const { maxFiles = PACK_MAX_FILES, maxBytes = PACK_MAX_BYTES } = limits;
  const manifestFile = join(out, 'shard.json');
  if (!existsSync(manifestFile))
    throw new Error(`${out} has no shard.json: an image pack is named there ("images_pack")`);
  // Documents streamed past (onDoc), not held: only the image paths are wanted.
  const shard = await readShard(new FsSource(dir), {
    loadDicomCodecs: loadNodeDicomCodecs,
    onDoc: () => undefined,
  });
  const paths = [...shard.images].sort();
  const groups: string[][] = [];
  let size = Infinity;
  for (const p of paths) {
    const n = statSync(join(dir, p)).size;
    if (groups.length === 0 || groups.at(-1)!.length >= maxFiles || size + n > maxBytes) {
      groups.push([]);
      size = 0;
    }
    groups.at(-1)!.push(p);
    size += n;
  }
  const names = groups.length === 1 ? ['images.zip'] : groups.map((_, i) => `images-${i + 1}.zip`);
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Record<string, unknown>;
  // Packs of an earlier run that this one does not write again go (shard.json will not name them).
  const earlier = manifest.images_pack;
  for (const old of typeof earlier === 'string' ? [earlier] : Array.isArray(earlier) ? earlier : [])
    if (typeof old === 'string' && /^[\w.-]+\.zip$/.test(old) && !names.includes(old))
      rmSync(join(out, old), { force: true });
  let bytes = 0;
  for (const [i, group] of groups.entries()) bytes += writePack(dir, join(out, names[i]), group);
  const { images_pack: _earlier, ...rest } = manifest;
  const next = names.length ? { ...rest, images_pack: names.length === 1 ? names[0] : names } : rest;
  writeFileSync(manifestFile, JSON.stringify(next, null, 2) + '\n');
  return { packs: names, images: paths.length, bytes };
}

/** One stored zip of `paths` (read from `dir`) at `file`, written through a temporary name. */
function writePack(dir: string, file: string, paths: string[]): number {
  const tmp = `${file}.partial`;
  const fd = openSync(tmp, 'w');
  let written = 0;
  let failed: Error | null = null;
  try {
    const zip = new Zip((err, chunk) => {
      if (err) failed = err;
      else {
        writeSync(fd, chunk);
        written += chunk.byteLength;
      }
    });
    for (const p of paths) {
      const entry = new ZipPassThrough(p);
      zip.add(entry);
      entry.push(readFileSync(join(dir, p)), true);
      if (failed) throw failed;
    }
    zip.end();
    if (failed) throw failed;
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
  closeSync(fd);
  renameSync(tmp, file);
  return written;
}
