/// <reference path="./codec-modules.d.ts" />
// The wasm codecs behind DICOM's compressed transfer syntaxes: libjpeg-turbo (JPEG baseline 8-bit),
// CharLS (JPEG-LS) and OpenJPEG (JPEG 2000), the cornerstonejs builds. Their wasm files are bundled by
// Vite (`?url`) and served from the site's own origin, never a CDN. Works in the page and in workers.

import type { CodecFrame, DicomCodecs, FrameDecoder } from '../core/media/dicom/image';

/** The part of a cornerstonejs embind decoder Loupe uses. */
interface EmDecoder {
  getEncodedBuffer(length: number): Uint8Array;
  getDecodedBuffer(): Uint8Array;
  decode(): void;
  getFrameInfo(): {
    width: number;
    height: number;
    bitsPerSample: number;
    componentCount: number;
    isSigned?: boolean;
  };
  getInterleaveMode?(): number;
  delete(): void;
}

type DecoderClass = new () => EmDecoder;

/** Initialised emscripten modules of the three codecs. */
export interface CodecModules {
  libjpegTurbo: { JPEGDecoder: DecoderClass };
  charls: { JpegLSDecoder: DecoderClass };
  openjpeg: { J2KDecoder: DecoderClass };
}

/** Runs one embind decoder over a codestream and copies the pixels out of the wasm heap. */
function run(Cls: DecoderClass, encoded: Uint8Array, planarFromInterleaveMode = false): CodecFrame {
  const d = new Cls();
  try {
    d.getEncodedBuffer(encoded.length).set(encoded);
    d.decode();
    const fi = d.getFrameInfo();
    const heap = d.getDecodedBuffer();
    const n = fi.width * fi.height * fi.componentCount;
    // Copy: the heap view dies with d.delete().
    const bytes = heap.slice(0, n * (fi.bitsPerSample > 8 ? 2 : 1));
    let pixels: CodecFrame['pixels'] =
      fi.bitsPerSample > 8
        ? fi.isSigned
          ? new Int16Array(bytes.buffer)
          : new Uint16Array(bytes.buffer)
        : fi.isSigned
          ? new Int8Array(bytes.buffer)
          : bytes;
    // JPEG-LS colour: CharLS returns interleave mode 0 (none) plane by plane, and modes 1 (line) and
    // 2 (sample) already pixel-interleaved. Only mode 0 needs interleaving here.
    const mode = planarFromInterleaveMode && fi.componentCount > 1 ? d.getInterleaveMode?.() : undefined;
    if (mode === 0) pixels = planarToInterleaved(pixels, fi.width, fi.height, fi.componentCount);
    return {
      pixels,
      width: fi.width,
      height: fi.height,
      components: fi.componentCount,
      signed: !!fi.isSigned,
    };
  } finally {
    d.delete();
  }
}

/** RRR…GGG…BBB… → RGBRGB…. */
function planarToInterleaved(p: CodecFrame['pixels'], w: number, h: number, c: number): CodecFrame['pixels'] {
  const out = new (p.constructor as new (n: number) => CodecFrame['pixels'])(p.length);
  const plane = w * h;
  for (let i = 0; i < plane; i++) for (let k = 0; k < c; k++) out[i * c + k] = p[k * plane + i];
  return out;
}

/** DicomCodecs over already initialised modules (the browser loader below; Node tests load them directly). */
export function codecsFromModules(m: CodecModules): DicomCodecs {
  const jpegBaseline: FrameDecoder = (e) => run(m.libjpegTurbo.JPEGDecoder, e);
  const jpegLs: FrameDecoder = (e) => run(m.charls.JpegLSDecoder, e, true);
  const jpeg2000: FrameDecoder = (e) => run(m.openjpeg.J2KDecoder, e);
  return { jpegBaseline, jpegLs, jpeg2000 };
}

type Factory = (moduleArg?: { locateFile?: (path: string) => string }) => Promise<unknown>;

async function instantiate(load: () => Promise<{ default: unknown }>, wasmUrl: string): Promise<unknown> {
  const mod = await load();
  // CommonJS through Vite: the factory is the default export (sometimes wrapped once more).
  const d = mod.default as Factory | { default: Factory };
  const factory = typeof d === 'function' ? d : d.default;
  return factory({ locateFile: () => wasmUrl });
}

let cached: Promise<DicomCodecs> | null = null;

/**
 * Loads the three wasm codecs once per page or worker (about 0.7 MB of wasm, fetched from this site).
 * A failed load is not cached, so the next call retries.
 */
export function loadDicomCodecs(): Promise<DicomCodecs> {
  cached ??= (async () => {
    const [jpegUrl, lsUrl, j2kUrl] = await Promise.all([
      import('@cornerstonejs/codec-libjpeg-turbo-8bit/decodewasm?url'),
      import('@cornerstonejs/codec-charls/decodewasm?url'),
      import('@cornerstonejs/codec-openjpeg/decodewasm?url'),
    ]);
    const [libjpegTurbo, charls, openjpeg] = await Promise.all([
      instantiate(() => import('@cornerstonejs/codec-libjpeg-turbo-8bit/decodewasmjs'), jpegUrl.default),
      instantiate(() => import('@cornerstonejs/codec-charls/decodewasmjs'), lsUrl.default),
      instantiate(() => import('@cornerstonejs/codec-openjpeg/decodewasmjs'), j2kUrl.default),
    ]);
    return codecsFromModules({ libjpegTurbo, charls, openjpeg } as CodecModules);
  })();
  cached.catch(() => (cached = null));
  return cached;
}
