// `pack-shard --images`: the shard's images in zip files beside them (stored, not recompressed: JPEG,
// PNG and DICOM files gain little from deflate), named in shard.json as `"images_pack"`. A shard read
// over HTTP then gets its images with one request per pack, not one per image: 315 requests for
// vqa-rad, six at a time, took 1.4 s of a first visit on the bench machine (BENCHMARKS.md).
//
// The shard is read and checked by the importer's own reader (readShard), and each image goes into the
// pack as that read hands it over (onImage, in path order): one read of every image, every image a
// record references in, by its shard path, and nothing written unless the whole shard is valid (the
// packs are written under temporary names and renamed only then). The loose files
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
  const packs: PackWriter[] = [];
  let images = 0;
  try {
    // Documents streamed past (onDoc), not held; each image written as it is read and checked.
    await readShard(new FsSource(dir), {
      loadDicomCodecs: loadNodeDicomCodecs,
      onDoc: () => undefined,
      onImage: (path, bytes) => {
        let pack = packs.at(-1);
        if (!pack || pack.files >= maxFiles || pack.imageBytes + bytes.byteLength > maxBytes) {
          pack?.end();
          pack = new PackWriter(join(out, `images-${packs.length + 1}.zip.partial`));
          packs.push(pack);
        }
        pack.add(path, bytes);
        images++;
      },
    });
    packs.at(-1)?.end();
  } catch (e) {
    for (const p of packs) p.discard();
    throw e;
  }
  const names = packs.length === 1 ? ['images.zip'] : packs.map((_, i) => `images-${i + 1}.zip`);
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Record<string, unknown>;
  // Packs of an earlier run that this one does not write again go (shard.json will not name them).
  const earlier = manifest.images_pack;
  for (const old of typeof earlier === 'string' ? [earlier] : Array.isArray(earlier) ? earlier : [])
    if (typeof old === 'string' && /^[\w.-]+\.zip$/.test(old) && !names.includes(old))
      rmSync(join(out, old), { force: true });
  for (const [i, p] of packs.entries()) renameSync(p.file, join(out, names[i]));
  const { images_pack: _earlier, ...rest } = manifest;
  const next = names.length ? { ...rest, images_pack: names.length === 1 ? names[0] : names } : rest;
  writeFileSync(manifestFile, JSON.stringify(next, null, 2) + '\n');
  return { packs: names, images, bytes: packs.reduce((s, p) => s + p.written, 0) };
}

/** One stored zip written at `file` as entries are added (fflate's streaming Zip). */
class PackWriter {
  files = 0;
  /** Bytes of the images added (the limit counts these). */
  imageBytes = 0;
  /** Bytes of the zip written. */
  written = 0;
  private readonly fd: number;
  private readonly zip: Zip;
  private failed: Error | null = null;
  private open = true;

  constructor(readonly file: string) {
    this.fd = openSync(file, 'w');
    this.zip = new Zip((err, chunk) => {
      if (err) this.failed = err;
      else {
        writeSync(this.fd, chunk);
        this.written += chunk.byteLength;
      }
    });
  }

  add(path: string, bytes: Uint8Array): void {
    const entry = new ZipPassThrough(path);
    this.zip.add(entry);
    entry.push(bytes, true);
    if (this.failed) throw this.failed;
    this.files++;
    this.imageBytes += bytes.byteLength;
  }

  end(): void {
    this.zip.end();
    this.close();
    if (this.failed) throw this.failed;
  }

  /** Closes and removes the file (the shard failed its read, or a write failed). */
  discard(): void {
    this.close();
    rmSync(this.file, { force: true });
  }

  private close(): void {
    if (this.open) closeSync(this.fd);
    this.open = false;
  }
}
