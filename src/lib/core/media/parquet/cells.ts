// Parquet cell values as the virtual JSONL shard needs them: text from strings, bytes or numbers, image
// bytes from a raw column or an HF `{bytes, path}` struct, metadata values, and image bytes' kind and
// identity (to store an image shared by a query and a document once).

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A cell as a string: strings as they are, bytes decoded as UTF-8, numbers and bigints printed. */
export function asString(v: unknown): string | null | undefined {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (v instanceof Uint8Array) {
    try {
      return utf8.decode(v);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** An image cell's bytes (and HF path), or null when the cell is empty. */
export function imageBytes(v: unknown): { bytes: Uint8Array | null; path?: string } | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Uint8Array) return { bytes: v };
  if (typeof v === 'object') {
    const o = v as { bytes?: unknown; path?: unknown };
    const bytes = o.bytes instanceof Uint8Array ? o.bytes : null;
    const path = typeof o.path === 'string' ? o.path : undefined;
    if (!bytes && !path) return null;
    return { bytes, path };
  }
  return { bytes: null };
}

/** A cell as a metadata value (a string or a list of strings), or undefined. */
export function metaValue(v: unknown): string | string[] | undefined {
  if (Array.isArray(v)) return v.every((x) => typeof x === 'string') ? (v as string[]) : undefined;
  const s = asString(v);
  return s === null || s === undefined ? undefined : s;
}

/** A file extension for image bytes, by magic bytes. */
export function extOf(b: Uint8Array): string {
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpg';
  if (b.length >= 4 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return 'png';
  if (b.length >= 12 && b[8] === 0x57 && b[9] === 0x45 && b[10] === 0x42 && b[11] === 0x50) return 'webp';
  if (b.length >= 132 && b[128] === 0x44 && b[129] === 0x49 && b[130] === 0x43 && b[131] === 0x4d)
    return 'dcm';
  return 'bin';
}

/** Whether two byte arrays are equal. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A cheap key of image bytes (length and a sampled FNV-1a); equal bytes have equal keys. */
export function bytesKey(b: Uint8Array): string {
  let h = 0x811c9dc5;
  // Sampling bounds the cost for large images; equal keys are confirmed byte by byte.
  const step = Math.max(1, Math.floor(b.length / 4096));
  for (let i = 0; i < b.length; i += step) h = Math.imul(h ^ b[i], 0x01000193) >>> 0;
  return `${b.length}:${h}`;
}
