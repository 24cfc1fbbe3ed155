/// <reference path="./jpeg-lossless.d.ts" />
// Decodes one frame of a parsed DICOM file to its stored values (before any LUT): native little/big
// endian (1, 8, 16, 32 bits), RLE Lossless and JPEG Lossless here in pure TS; JPEG baseline, JPEG-LS and
// JPEG 2000 through codecs the caller injects (wasm, loaded by src/lib/platform/media/dicom-codecs.ts).

import { dicomParser, type ByteArray, type Element } from './dicom-parser';
import { Decoder as JpegLosslessDecoder } from 'jpeg-lossless-decoder-js';
import { assertSupported, DicomError, parserMessage, type ParsedDicom } from './parse';
import { describeSyntax } from './syntaxes';

/** Integer sample arrays, typed by Bits Allocated and Pixel Representation. */
export type Samples = Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array;

/** What a codec returns for one encoded frame: interleaved samples and the codestream's own geometry. */
export interface CodecFrame {
  pixels: Samples;
  width: number;
  height: number;
  components: number;
  /** True when the codestream marks its samples as signed (JPEG 2000). */
  signed?: boolean;
}

/** Decodes one encoded frame (a whole JPEG / JPEG-LS / JPEG 2000 codestream). May throw. */
export type FrameDecoder = (encoded: Uint8Array) => CodecFrame;

/** Codecs for the compressed syntaxes; a missing one makes that syntax a clear per-file error. */
export interface DicomCodecs {
  /** 8-bit JPEG baseline / extended (libjpeg-turbo). Colour output must be RGB. */
  jpegBaseline?: FrameDecoder;
  /** JPEG-LS lossless and near-lossless (CharLS). */
  jpegLs?: FrameDecoder;
  /** JPEG 2000 (OpenJPEG). */
  jpeg2000?: FrameDecoder;
  /** JPEG lossless process 14; defaults to the pure-JS jpeg-lossless-decoder-js. */
  jpegLossless?: FrameDecoder;
}

/** One decoded frame: stored values, pixel-interleaved (RGBRGB… when samples = 3), row-major. */
export interface DecodedFrame {
  values: Samples;
  width: number;
  height: number;
  samples: number;
  /** Colour space of the values: the file's photometric, except that codecs return RGB for YBR JPEG. */
  photometric: string;
}

/** Pure-JS JPEG lossless (process 14, any predictor) via jpeg-lossless-decoder-js. */
export const jpegLosslessDecoder: FrameDecoder = (encoded) => {
  const d = new JpegLosslessDecoder();
  // Byte depth comes from the frame header's precision; the decoder wants it up front.
  const precision = sofPrecision(encoded);
  const copy = padBeforeEoi(encoded);
  const out = d.decode(copy.buffer, 0, copy.length, precision > 8 ? 2 : 1) as Uint8Array | Uint16Array;
  return { pixels: out, width: d.xDim, height: d.yDim, components: d.numComp };
};

/**
 * A copy of a JPEG codestream with four zero bytes inserted before its final EOI marker (FFD9).
 * jpeg-lossless-decoder-js 2.1.2 drops the last pixel (leaves it 0) when that pixel's Huffman code ends
 * within 8 bits of the EOI marker: its getHuffmanValue() sees the marker in its look-ahead and returns
 * it before the pixel is stored (its getn() has an isLastPixel() guard for this; getHuffmanValue() has
 * none). Bits after the last pixel are never decoded, so padding the scan only moves the marker away.
 */
export function padBeforeEoi(b: Uint8Array): Uint8Array<ArrayBuffer> {
  let end = b.length;
  while (end > 2 && b[end - 1] === 0) end--; // a fragment's trailing pad byte
  if (end < 4 || b[end - 2] !== 0xff || b[end - 1] !== 0xd9) return b.slice();
  const out = new Uint8Array(b.length + 4);
  out.set(b.subarray(0, end - 2));
  out.set(b.subarray(end - 2), end + 2);
  return out;
}

/** Sample precision in a JPEG frame header (SOF0–SOF15), or 8 when none is found. */
function sofPrecision(b: Uint8Array): number {
  for (let i = 2; i + 4 < b.length;) {
    if (b[i] !== 0xff) return 8;
    const m = b[i + 1];
    if (m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc) return b[i + 4];
    i += 2 + ((b[i + 2] << 8) | b[i + 3]);
  }
  return 8;
}

function allocate(bits: number, signed: boolean, n: number): Samples {
  if (bits <= 8) return signed ? new Int8Array(n) : new Uint8Array(n);
  if (bits <= 16) return signed ? new Int16Array(n) : new Uint16Array(n);
  return signed ? new Int32Array(n) : new Uint32Array(n);
}

/**
 * Decodes frame `frame` (0-based) of a parsed file. Throws {@link DicomError}: unsupported syntax (naming
 * its UID and name), a codec the caller did not provide, truncated or undecodable pixel data.
 */
export function decodeFrame(parsed: ParsedDicom, frame = 0, codecs: DicomCodecs = {}): DecodedFrame {
  const { info, dataSet } = parsed;
  assertSupported(info);
  if (!Number.isInteger(frame) || frame < 0 || frame >= info.frames)
    throw new DicomError('bad-frame', `frame ${frame} does not exist: the file has ${info.frames} frame(s)`);
  const el = dataSet.elements.x7fe00010;
  const enc = info.transferSyntax.encoding;
  if (enc === 'native') return nativeFrame(parsed, el, frame);
  const encoded = encapsulatedFrame(parsed, el, frame);
  if (enc === 'rle') return rleFrame(parsed, encoded);
  const codec =
    enc === 'jpeg-baseline'
      ? codecs.jpegBaseline
      : enc === 'jpeg-ls'
        ? codecs.jpegLs
        : enc === 'jpeg2000'
          ? codecs.jpeg2000
          : (codecs.jpegLossless ?? jpegLosslessDecoder);
  if (!codec)
    throw new DicomError(
      'unsupported-syntax',
      `transfer syntax ${describeSyntax(info.transferSyntax)} needs a codec that is not loaded here`,
    );
  let out: CodecFrame;
  try {
    out = codec(encoded);
  } catch (e) {
    throw new DicomError(
      'decode-failed',
      `${describeSyntax(info.transferSyntax)} pixel data of frame ${frame} could not be decoded: ${parserMessage(e)}`,
    );
  }
  return fromCodec(parsed, out, frame);
}

function fromCodec(parsed: ParsedDicom, c: CodecFrame, frame: number): DecodedFrame {
  const { info } = parsed;
  if (c.width !== info.columns || c.height !== info.rows || c.components !== info.samplesPerPixel)
    throw new DicomError(
      'decode-failed',
      `frame ${frame} decodes to ${c.width}×${c.height}×${c.components}, but the header says ` +
        `${info.columns}×${info.rows}×${info.samplesPerPixel}`,
    );
  const signed = info.pixelRepresentation === 1;
  const n = info.rows * info.columns * info.samplesPerPixel;
  const values = allocate(info.bitsAllocated, signed, n);
  const src = c.pixels;
  if (signed && !c.signed && info.bitsStored < 32) {
    // The codestream holds the two's-complement bit pattern of Bits Stored bits: sign-extend it.
    const bits = info.bitsStored;
    const half = 2 ** (bits - 1);
    const mod = 2 ** bits;
    for (let i = 0; i < n; i++) {
      const v = src[i] % mod;
      values[i] = v >= half ? v - mod : v;
    }
  } else values.set(src.subarray(0, n));
  // libjpeg-turbo converts YCbCr JPEG frames to RGB; JPEG 2000 with the RCT/ICT likewise.
  const ybr = info.photometric.startsWith('YBR');
  const photometric = ybr && info.transferSyntax.encoding !== 'rle' ? 'RGB' : info.photometric;
  return { values, width: info.columns, height: info.rows, samples: info.samplesPerPixel, photometric };
}

function nativeFrame(parsed: ParsedDicom, el: Element, frame: number): DecodedFrame {
  const { info, dataSet } = parsed;
  const { rows, columns, samplesPerPixel: spp, bitsAllocated: bits } = info;
  const pixels = rows * columns;
  const signed = info.pixelRepresentation === 1;
  // YBR_FULL_422 native data carries two luma samples per chroma pair: 2 samples per pixel.
  const sub422 = info.photometric === 'YBR_FULL_422' && spp === 3;
  const samplesPerFrame = sub422 ? pixels * 2 : pixels * spp;
  const frameBits = samplesPerFrame * bits;
  const needBits = frameBits * info.frames;
  const haveBytes = Math.min(el.length, dataSet.byteArray.length - el.dataOffset);
  if (haveBytes * 8 < needBits)
    throw new DicomError(
      'malformed',
      `Pixel Data holds ${haveBytes} bytes but ${info.frames} frame(s) of ${columns}×${rows}×${spp} at ` +
        `${bits} bits need ${Math.ceil(needBits / 8)} (the file is truncated or its header is wrong)`,
    );
  const bytes = dataSet.byteArray as Uint8Array;
  const values = allocate(bits, signed, pixels * spp);
  const little = !info.transferSyntax.bigEndian;
  // Big endian OW holds 16-bit words: 1- and 8-bit samples packed into them have each byte pair
  // swapped relative to their order (PS3.5 7.3, annex A.3). OB (or little endian) keeps byte order.
  const swapPairs = !little && bits <= 8 && (el.vr ?? 'OW') === 'OW';
  const byteAt = (p: number): number => bytes[el.dataOffset + (swapPairs ? p ^ 1 : p)];
  if (bits === 1) {
    // Bit-packed, least significant bit first, frames not byte-aligned.
    const start = frame * frameBits;
    for (let i = 0; i < samplesPerFrame; i++) {
      const b = start + i;
      values[i] = (byteAt(b >> 3) >> (b & 7)) & 1;
    }
  } else {
    const bpv = bits / 8;
    const off = el.dataOffset + (frame * frameBits) / 8;
    const view = new DataView(bytes.buffer, bytes.byteOffset + off, samplesPerFrame * bpv);
    const raw = sub422 ? allocate(bits, signed, samplesPerFrame) : values;
    const start8 = (frame * frameBits) / 8;
    const get =
      bits === 8
        ? signed
          ? (i: number) => (byteAt(start8 + i) << 24) >> 24
          : (i: number) => byteAt(start8 + i)
        : bits === 16
          ? signed
            ? (i: number) => view.getInt16(i * 2, little)
            : (i: number) => view.getUint16(i * 2, little)
          : signed
            ? (i: number) => view.getInt32(i * 4, little)
            : (i: number) => view.getUint32(i * 4, little);
    const planar = info.planarConfiguration === 1 && spp === 3 && !sub422;
    for (let i = 0; i < samplesPerFrame; i++) {
      // Planar (RRR…GGG…BBB…) is re-interleaved as it is read.
      const dst = planar ? (i % pixels) * 3 + Math.floor(i / pixels) : i;
      raw[dst] = get(i);
    }
    if (sub422)
      for (let p = 0; p < pixels; p += 2) {
        const s = p * 2;
        const [y1, y2, cb, cr] = [raw[s], raw[s + 1], raw[s + 2], raw[s + 3]];
        values.set([y1, cb, cr], p * 3);
        if (p + 1 < pixels) values.set([y2, cb, cr], (p + 1) * 3);
      }
  }
  return { values, width: columns, height: rows, samples: spp, photometric: info.photometric };
}

/** The encoded bytes of one frame of encapsulated pixel data. */
function encapsulatedFrame(parsed: ParsedDicom, el: Element, frame: number): Uint8Array {
  const { info, dataSet } = parsed;
  const frags = el.fragments ?? [];
  if (!el.encapsulatedPixelData || frags.length === 0)
    throw new DicomError(
      'malformed',
      `transfer syntax ${describeSyntax(info.transferSyntax)} needs encapsulated Pixel Data, but it has no fragments`,
    );
  try {
    if (info.frames === 1)
      return toU8(dicomParser.readEncapsulatedPixelDataFromFragments(dataSet, el, 0, frags.length));
    if ((el.basicOffsetTable ?? []).length === info.frames)
      return toU8(dicomParser.readEncapsulatedImageFrame(dataSet, el, frame));
    if (frags.length === info.frames)
      return toU8(dicomParser.readEncapsulatedPixelDataFromFragments(dataSet, el, frame, 1));
    // No offset table and several fragments per frame: a frame starts at each fragment that opens a
    // codestream (JPEG SOI FFD8, JPEG 2000 SOC FF4F, JP2 signature box).
    const starts = frags
      .map((_, i) => i)
      .filter((i) => opensCodestream(dataSet.byteArray as Uint8Array, frags[i].position));
    if (starts.length !== info.frames)
      throw new Error(`${frags.length} fragments, ${starts.length} codestream starts, ${info.frames} frames`);
    const end = frame + 1 < starts.length ? starts[frame + 1] : frags.length;
    return toU8(
      dicomParser.readEncapsulatedPixelDataFromFragments(dataSet, el, starts[frame], end - starts[frame]),
    );
  } catch (e) {
    if (e instanceof DicomError) throw e;
    throw new DicomError(
      'malformed',
      `cannot find frame ${frame} in the encapsulated Pixel Data: ${parserMessage(e)}`,
    );
  }
}

function opensCodestream(b: Uint8Array, p: number): boolean {
  if (b[p] === 0xff && (b[p + 1] === 0xd8 || b[p + 1] === 0x4f)) return true;
  return b[p + 4] === 0x6a && b[p + 5] === 0x50 && b[p + 6] === 0x20 && b[p + 7] === 0x20;
}

function toU8(b: ByteArray): Uint8Array {
  return b instanceof Uint8Array ? b : new Uint8Array(b);
}

/** DICOM RLE (PS3.5 annex G): one PackBits segment per byte plane, most significant byte first. */
function rleFrame(parsed: ParsedDicom, encoded: Uint8Array): DecodedFrame {
  const { info } = parsed;
  const pixels = info.rows * info.columns;
  const spp = info.samplesPerPixel;
  const bpv = Math.ceil(info.bitsAllocated / 8);
  const view = new DataView(encoded.buffer, encoded.byteOffset, encoded.byteLength);
  if (encoded.length < 64)
    throw new DicomError('malformed', `RLE frame of ${encoded.length} bytes has no 64-byte header`);
  const segments = view.getUint32(0, true);
  if (segments !== spp * bpv)
    throw new DicomError(
      'malformed',
      `RLE header lists ${segments} segments; ${spp} sample(s) × ${bpv} byte(s) need ${spp * bpv}`,
    );
  const acc = new Float64Array(pixels * spp);
  for (let s = 0; s < segments; s++) {
    const start = view.getUint32(4 + s * 4, true);
    const end = s + 1 < segments ? view.getUint32(8 + s * 4, true) : encoded.length;
    const plane = unpackBits(encoded, start, Math.min(end, encoded.length), pixels);
    const sample = Math.floor(s / bpv);
    const weight = 2 ** (8 * (bpv - 1 - (s % bpv)));
    for (let p = 0; p < pixels; p++) acc[p * spp + sample] += plane[p] * weight;
  }
  const signed = info.pixelRepresentation === 1;
  const values = allocate(info.bitsAllocated, signed, pixels * spp);
  const full = 2 ** (8 * bpv);
  for (let i = 0; i < acc.length; i++) values[i] = signed && acc[i] >= full / 2 ? acc[i] - full : acc[i];
  return { values, width: info.columns, height: info.rows, samples: spp, photometric: info.photometric };
}

function unpackBits(b: Uint8Array, start: number, end: number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  let o = 0;
  let i = start;
  while (i < end && o < n) {
    const h = b[i++];
    if (h < 128) {
      const len = Math.min(h + 1, n - o, end - i);
      out.set(b.subarray(i, i + len), o);
      o += len;
      i += h + 1;
    } else if (h > 128) {
      const len = Math.min(257 - h, n - o);
      out.fill(b[i++], o, o + len);
      o += len;
    }
    // 128 is a no-op
  }
  if (o < n) throw new DicomError('malformed', `RLE segment decodes to ${o} bytes; the frame needs ${n}`);
  return out;
}
