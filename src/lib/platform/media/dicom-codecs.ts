/// <reference path="./codec-modules.d.ts" />
// The wasm codecs behind DICOM's compressed transfer syntaxes: libjpeg-turbo (JPEG baseline 8-bit),
// CharLS (JPEG-LS) and OpenJPEG (JPEG 2000), the cornerstonejs builds. Their wasm files are bundled by
// Vite (`?url`) and served from the site's own origin, never a CDN. Works in the page and in workers.

import type { CodecFrame, DicomCodecs, FrameDecoder } from '../../core/media/dicom/image';
import {
  CodecOutput,
  codecFailure,
  guardedCall,
  type GuardableModule,
} from '../../core/media/dicom/codec-errors';

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
  libjpegTurbo: { JPEGDecoder: DecoderClass } & GuardableModule;
  charls: { JpegLSDecoder: DecoderClass } & GuardableModule;
  openjpeg: { J2KDecoder: DecoderClass } & GuardableModule;
}

/** One collector per codec for what it prints: give each module factory its `print` as print and printErr. */
export type CodecOutputs = Record<keyof CodecModules, CodecOutput>;

/** Fresh output collectors for the three codecs. */
export function newCodecOutputs(): CodecOutputs {
  return { libjpegTurbo: new CodecOutput(), charls: new CodecOutput(), openjpeg: new CodecOutput() };
}

const CODEC_NAMES: Record<keyof CodecModules, string> = {
  libjpegTurbo: 'libjpeg-turbo',
  charls: 'CharLS',
  openjpeg: 'OpenJPEG',
};

/**
 * Runs one embind decoder over a codestream and copies the pixels out of the wasm heap. A failure
 * throws an Error with what the codec said: libjpeg's message (read back from the wasm stack), CharLS's
 * exception text, OpenJPEG's [ERROR] lines.
 */
function run(
  name: keyof CodecModules,
  mod: GuardableModule,
  Cls: DecoderClass,
  output: CodecOutput,
  encoded: Uint8Array,
  planarFromInterleaveMode = false,
): CodecFrame {
  const d = new Cls();
  try {
    d.getEncodedBuffer(encoded.length).set(encoded);
    output.clear();
    const r = guardedCall(mod, () => d.decode(), name === 'libjpegTurbo');
    const fail = (thrown: unknown): Error =>
      new Error(codecFailure(CODEC_NAMES[name], mod, thrown, [...r.stackText, ...output.problems()]), {
        cause: thrown,
      });
    if (r.failed) throw fail(r.thrown);
    // OpenJPEG reports a failed header or tile on its error stream and returns an empty frame.
    const fi = d.getFrameInfo();
    if (!(fi.width > 0 && fi.height > 0 && fi.componentCount > 0)) throw fail(undefined);
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
export function codecsFromModules(m: CodecModules, out: CodecOutputs = newCodecOutputs()): DicomCodecs {
  const jpegBaseline: FrameDecoder = (e) =>
    run('libjpegTurbo', m.libjpegTurbo, m.libjpegTurbo.JPEGDecoder, out.libjpegTurbo, e);
  const jpegLs: FrameDecoder = (e) => run('charls', m.charls, m.charls.JpegLSDecoder, out.charls, e, true);
  const jpeg2000: FrameDecoder = (e) => run('openjpeg', m.openjpeg, m.openjpeg.J2KDecoder, out.openjpeg, e);
  return { jpegBaseline, jpegLs, jpeg2000 };
}

type Factory = (moduleArg?: {
  locateFile?: (path: string) => string;
  print?: (text: unknown) => void;
  printErr?: (text: unknown) => void;
}) => Promise<unknown>;

async function instantiate(
  load: () => Promise<{ default: unknown }>,
  wasmUrl: string,
  output: CodecOutput,
): Promise<unknown> {
  const mod = await load();
  // CommonJS through Vite: the factory is the default export (sometimes wrapped once more).
  const d = mod.default as Factory | { default: Factory };
  const factory = typeof d === 'function' ? d : d.default;
  // The codec's printed lines (OpenJPEG's [INFO] …) are kept for error messages, never sent to the console.
  return factory({ locateFile: () => wasmUrl, print: output.print, printErr: output.print });
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
    const out = newCodecOutputs();
    const [libjpegTurbo, charls, openjpeg] = await Promise.all([
      instantiate(
        () => import('@cornerstonejs/codec-libjpeg-turbo-8bit/decodewasmjs'),
        jpegUrl.default,
        out.libjpegTurbo,
      ),
      instantiate(() => import('@cornerstonejs/codec-charls/decodewasmjs'), lsUrl.default, out.charls),
      instantiate(() => import('@cornerstonejs/codec-openjpeg/decodewasmjs'), j2kUrl.default, out.openjpeg),
    ]);
    return codecsFromModules({ libjpegTurbo, charls, openjpeg } as CodecModules, out);
  })();
  cached.catch(() => (cached = null));
  return cached;
}
