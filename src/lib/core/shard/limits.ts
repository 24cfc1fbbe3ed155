// Size limits on what a shard may contain, and a header-only reader of image dimensions (so a
// decompression bomb is refused before anything decodes it). The defaults sit far above any real
// benchmark corpus (README "Limits"); each one can be raised per import (URL or CLI option).

/** The limits an import enforces. */
export interface ShardLimits {
  /** Longest accepted line of corpus.jsonl / queries.jsonl / qrels, and largest shard.json / NOTICE.md, in bytes. */
  maxLineBytes: number;
  /** Longest accepted string field (title, text, metadata values), in UTF-16 code units (≈ characters). */
  maxFieldChars: number;
  /** Largest accepted image file, in bytes. */
  maxImageBytes: number;
  /** Largest accepted image, in pixels (width × height, read from the file header before any decoding). */
  maxImagePixels: number;
}

const MiB = 1024 * 1024;

/**
 * DEFAULT_LIMITS: line 8 MiB, field 4 Mi characters (about 700,000 English words: longer than any
 * novel), image 32 MiB and 100 megapixels (a 10,000 × 10,000 radiograph; decoded as RGBA that is
 * already 400 MB in the tab).
 */
export const DEFAULT_LIMITS: Readonly<ShardLimits> = Object.freeze({
  maxLineBytes: 8 * MiB,
  maxFieldChars: 4 * MiB,
  maxImageBytes: 32 * MiB,
  maxImagePixels: 100_000_000,
});

/** The URL / CLI option of each limit: its name and the unit its value is given in. */
export const LIMIT_OPTIONS: Readonly<
  Record<keyof ShardLimits, { name: string; unit: number; label: string }>
> = Object.freeze({
  maxLineBytes: { name: 'maxLineMB', unit: MiB, label: 'MiB per line' },
  maxFieldChars: { name: 'maxFieldMB', unit: MiB, label: 'Mi characters per field' },
  maxImageBytes: { name: 'maxImageMB', unit: MiB, label: 'MiB per image' },
  maxImagePixels: { name: 'maxImageMP', unit: 1_000_000, label: 'megapixels per image' },
});

/**
 * Limits from options such as `?maxLineMB=64&maxImageMP=400` (any lookup: URLSearchParams.get, a CLI
 * parser). Missing options keep the default; an invalid value is an error naming the option.
 */
export function parseLimits(get: (name: string) => string | null | undefined): {
  limits: ShardLimits;
  errors: string[];
} {
  const limits: ShardLimits = { ...DEFAULT_LIMITS };
  const errors: string[] = [];
  for (const key of Object.keys(LIMIT_OPTIONS) as (keyof ShardLimits)[]) {
    const { name, unit } = LIMIT_OPTIONS[key];
    const raw = get(name);
    if (raw === null || raw === undefined || raw === '') continue;
    const v = Number(raw);
    if (!Number.isFinite(v) || v <= 0) {
      errors.push(`${name}=${raw}: expected a positive number`);
      continue;
    }
    limits[key] = Math.round(v * unit);
  }
  return { limits, errors };
}

/** A byte count for messages: `12.3 MB` style (decimal units, as browsers' storage settings show them). */
export function formatBytes(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} kB`;
  return `${n} bytes`;
}

/** Width and height of a JPEG, PNG or WebP from its header alone; null when the header is unreadable. */
export function imageDimensions(b: Uint8Array): { width: number; height: number } | null {
  const u16be = (i: number) => (b[i] << 8) | b[i + 1];
  const u32be = (i: number) => ((b[i] << 24) >>> 0) + ((b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3]);
  const u16le = (i: number) => b[i] | (b[i + 1] << 8);
  const u24le = (i: number) => b[i] | (b[i + 1] << 8) | (b[i + 2] << 16);
  // PNG: the IHDR chunk is first, right after the 8-byte signature.
  if (b.length >= 24 && b[0] === 0x89 && b[1] === 0x50 && b[12] === 0x49 && b[13] === 0x48) {
    return { width: u32be(16), height: u32be(20) };
  }
  // JPEG: walk the segments to the first start-of-frame marker (SOF0..SOF15 except DHT, JPG, DAC).
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) {
    let i = 2;
    while (i + 9 < b.length) {
      if (b[i] !== 0xff) return null;
      const marker = b[i + 1];
      if (marker === 0xff) {
        i++; // fill byte
        continue;
      }
      if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
        i += 2; // markers without a length
        continue;
      }
      const len = u16be(i + 2);
      if (len < 2) return null;
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return { width: u16be(i + 7), height: u16be(i + 5) };
      }
      if (marker === 0xd9 || marker === 0xda) return null; // end of image / scan before any frame header
      i += 2 + len;
    }
    return null;
  }
  // WebP: RIFF container; the first chunk is VP8 (lossy), VP8L (lossless) or VP8X (extended).
  if (b.length >= 30 && String.fromCharCode(b[8], b[9], b[10], b[11]) === 'WEBP') {
    const chunk = String.fromCharCode(b[12], b[13], b[14], b[15]);
    if (chunk === 'VP8X') return { width: u24le(24) + 1, height: u24le(27) + 1 };
    if (chunk === 'VP8L' && b[20] === 0x2f) {
      const bits = b[21] | (b[22] << 8) | (b[23] << 16) | (b[24] << 24);
      return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
    }
    if (chunk === 'VP8 ' && b[23] === 0x9d && b[24] === 0x01 && b[25] === 0x2a) {
      return { width: u16le(26) & 0x3fff, height: u16le(28) & 0x3fff };
    }
    return null;
  }
  return null;
}
