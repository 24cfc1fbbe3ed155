// The images the records reference, each read once (by sorted path): a JPEG, PNG, WebP or DICOM file by
// its magic bytes, refused by its header's dimensions before anything decodes it (decompression bombs),
// and a DICOM file's first frame decoded to check it. Handed to opts.onImage only while no issue was found.

import { DicomError, decodeDicomImage, isDicom, parseDicom, type DicomCodecs } from '../media/dicom/image';
import { imageDimensions, LIMIT_OPTIONS } from './limits';
import type { ShardReadContext } from './read-context';

/** Images asked for at once from a remote source (HTTP requests in flight). */
const READ_AHEAD = 8;

/** Reads and checks every referenced image; returns the paths that passed. */
export async function readImages(ctx: ShardReadContext): Promise<string[]> {
  const paths = [...ctx.imageRefs.keys()].sort();
  const images: string[] = [];
  let done = 0;
  // Over HTTP, a packed shard's images come in one request per pack (shard.json's images_pack).
  const packs = ctx.manifest?.imagesPack;
  if (packs && paths.length && ctx.source.usePacks) {
    ctx.progress(true, {
      kind: 'status',
      message: `Reading ${paths.length} images from ${packs.length === 1 ? packs[0] : `${packs.length} packs`}`,
    });
    await ctx.source.usePacks(packs, {
      onBytes: (file, bytes, totalBytes) =>
        ctx.progress(false, { kind: 'read', file, bytes, ...(totalBytes ? { totalBytes } : {}) }),
      checkCancelled: () => ctx.checkCancelled(),
    });
  }
  // Over HTTP each image is a request: the next few are asked for while one is checked, so the
  // import waits for one round trip per window, not per image. Local sources read one at a time.
  const ahead = ctx.source.remote ? READ_AHEAD : 1;
  const opening = new Map<string, Promise<AsyncIterable<Uint8Array> | null>>();
  const openFrom = (i: number) => {
    for (let j = i; j < Math.min(paths.length, i + ahead); j++)
      if (!opening.has(paths[j])) {
        const p = ctx.open(paths[j]);
        p.catch(() => undefined); // awaited in order below, where a failure is thrown
        opening.set(paths[j], p);
      }
  };
  try {
    for (const [i, path] of paths.entries()) {
      openFrom(i);
      await checkImage(path, opening.get(path)!);
      opening.delete(path);
    }
  } finally {
    // Cancelled or stopped at a fatal issue: the streams asked for ahead are closed unread.
    for (const p of opening.values())
      void p.then((s) => s?.[Symbol.asyncIterator]().return?.()).catch(() => undefined);
  }
  return images;

  async function checkImage(path: string, opened: Promise<AsyncIterable<Uint8Array> | null>) {
    ctx.checkCancelled();
    const ref = ctx.imageRefs.get(path)!;
    const stream = await opened;
    if (!stream) {
      ctx.issue({
        file: ref.file,
        line: ref.line,
        code: 'missing-image',
        message: `${ref.field ? `${ref.field} ` : 'image '}${JSON.stringify(path)} is not in the shard`,
      });
      return;
    }
    const bytes = await ctx.readWhole(path, stream, true);
    const kind = sniffImage(bytes) ?? (isDicom(bytes, path) ? 'dicom' : null);
    if (!kind) {
      const head = Array.from(bytes.subarray(0, 8), (b) => b.toString(16).padStart(2, '0')).join(' ');
      ctx.issue({
        file: path,
        code: 'not-an-image',
        message: `${path} (referenced on ${ref.file}:${ref.line}${ref.field ? ` as ${ref.field}` : ''}) is not a JPEG, PNG, WebP or DICOM image (it starts with ${head || 'nothing'})`,
      });
      return;
    }
    // Decompression bombs: refuse by the header's dimensions, before anything decodes the image.
    const dims = imageDimensions(bytes);
    if (dims && dims.width * dims.height > ctx.limits.maxImagePixels) {
      ctx.issue({
        file: path,
        code: 'image-too-large',
        message:
          `${path} (referenced on ${ref.file}:${ref.line}${ref.field ? ` as ${ref.field}` : ''}) is ${dims.width} × ${dims.height} pixels, more than the ` +
          `limit of ${ctx.limits.maxImagePixels / 1e6} megapixels. Downscale it, or raise the limit with ` +
          `${LIMIT_OPTIONS.maxImagePixels.name}=<megapixels>`,
      });
      return;
    }
    if (kind === 'dicom') {
      const problem = await checkDicom(ctx, bytes);
      if (problem) {
        ctx.issue({
          file: path,
          code: problem.code,
          message: `${path} (referenced on ${ref.file}:${ref.line}${ref.field ? ` as ${ref.field}` : ''}) ${problem.message}`,
        });
        return;
      }
    }
    if (ctx.issues.length === 0 && ctx.opts.onImage) await ctx.opts.onImage(path, bytes);
    images.push(path);
    done++;
    ctx.progress(done === paths.length, {
      kind: 'status',
      message: `Checked ${done} of ${paths.length} images`,
    });
  }
}

/**
 * Why a DICOM image cannot be shown or embedded, or null when it can: too many pixels by its header
 * (checked before decoding, like other images), else its first frame is decoded.
 */
async function checkDicom(
  ctx: ShardReadContext,
  bytes: Uint8Array,
): Promise<{ code: string; message: string } | null> {
  try {
    const { info } = parseDicom(bytes);
    if (info.rows * info.columns > ctx.limits.maxImagePixels)
      return {
        code: 'image-too-large',
        message:
          `is ${info.columns} × ${info.rows} pixels, more than the limit of ${ctx.limits.maxImagePixels / 1e6} ` +
          `megapixels. Downscale it, or raise the limit with ${LIMIT_OPTIONS.maxImagePixels.name}=<megapixels>`,
      };
    let codecs: DicomCodecs = {};
    if (ctx.opts.loadDicomCodecs) {
      ctx.dicomCodecs ??= ctx.opts.loadDicomCodecs();
      codecs = await ctx.dicomCodecs;
    }
    decodeDicomImage(bytes, { codecs });
    return null;
  } catch (e) {
    if (e instanceof DicomError || e instanceof RangeError)
      return { code: 'bad-dicom', message: `is not a usable DICOM image: ${e.message}` };
    throw e;
  }
}

/** JPEG, PNG or WebP by magic bytes. */
function sniffImage(b: Uint8Array): 'jpeg' | 'png' | 'webp' | null {
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length >= 8 && [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((x, i) => b[i] === x))
    return 'png';
  const ascii = (from: number, to: number): string => String.fromCharCode(...b.subarray(from, to));
  if (b.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'webp';
  return null;
}
