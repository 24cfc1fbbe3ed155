// Precomputed embeddings from files: NumPy .npy and safetensors matrices, and the JSON sidecar that
// says which model produced them and which document each row belongs to. Pure: bytes in, typed
// arrays out, errors that name the file, the field and the expected value.
//
// Both formats are little-endian on disk; this module assumes a little-endian host (every platform a
// browser runs on) when it views float32 data in place.

/** A parsed embedding matrix: `n` rows of `dim` float32 values, row-major. */
export interface VectorMatrix {
  data: Float32Array;
  n: number;
  dim: number;
  /** The element type on disk, before conversion to float32. */
  sourceDtype: 'f32' | 'f16' | 'bf16';
}

/** A malformed or unsupported vector file. `file` is the name given to the parser. */
export class VectorFileError extends Error {
  readonly file: string;
  constructor(file: string, message: string) {
    super(`${file}: ${message}`);
    this.name = 'VectorFileError';
    this.file = file;
  }
}

// ---------------------------------------------------------------------------------------------
// Half precision

const f16Table = (() => {
  // float16 → float32 for all 65,536 bit patterns (256 KiB, built once): exact, incl. subnormals,
  // infinities and NaN.
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const frac = h & 0x3ff;
    t[h] =
      exp === 0
        ? sign * frac * 2 ** -24
        : exp === 31
          ? frac === 0
            ? sign * Infinity
            : NaN
          : sign * (1 + frac / 1024) * 2 ** (exp - 15);
  }
  return t;
})();

/** IEEE 754 half-precision bits → number (exact). */
export function f16ToF32(bits: number): number {
  return f16Table[bits & 0xffff];
}

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** number → IEEE 754 half-precision bits, round to nearest even (via float32, as NumPy's astype does). */
export function f32ToF16(value: number): number {
  f32Scratch[0] = value;
  const x = u32Scratch[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && half & 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && half & 1)) half++; // a carry into the exponent is correct
  return sign | half;
}

function convertF16(bytes: Uint8Array, offset: number, count: number): Float32Array {
  const out = new Float32Array(count);
  const dv = new DataView(bytes.buffer, bytes.byteOffset + offset, count * 2);
  for (let i = 0; i < count; i++) out[i] = f16Table[dv.getUint16(i * 2, true)];
  return out;
}

function convertBf16(bytes: Uint8Array, offset: number, count: number): Float32Array {
  const out = new Float32Array(count);
  const bits = new Uint32Array(out.buffer);
  const dv = new DataView(bytes.buffer, bytes.byteOffset + offset, count * 2);
  for (let i = 0; i < count; i++) bits[i] = dv.getUint16(i * 2, true) << 16;
  return out;
}

/** float32 values at `offset`: a view when aligned (no copy), else a copy. */
function f32At(bytes: Uint8Array, offset: number, count: number): Float32Array {
  const at = bytes.byteOffset + offset;
  if (at % 4 === 0) return new Float32Array(bytes.buffer, at, count);
  return new Float32Array(bytes.slice(offset, offset + count * 4).buffer);
}

// ---------------------------------------------------------------------------------------------
// .npy

const NPY_MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY

/** Value of the Python-literal header dict: strings, booleans, integer tuples. */
type PyValue = string | boolean | number[];

/** Parses the header dict literal, e.g. `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`. */
function parsePyDict(text: string, file: string): Record<string, PyValue> {
  let i = 0;
  const fail = (what: string): never => {
    throw new VectorFileError(file, `bad .npy header: ${what} at character ${i} of ${JSON.stringify(text)}`);
  };
  const ws = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const str = (): string => {
    const q = text[i];
    if (q !== "'" && q !== '"') fail('expected a quoted string');
    const end = text.indexOf(q, i + 1);
    if (end < 0) fail('unterminated string');
    const s = text.slice(i + 1, end);
    i = end + 1;
    return s;
  };
  const value = (): PyValue => {
    ws();
    if (text[i] === "'" || text[i] === '"') return str();
    if (text.startsWith('True', i)) return ((i += 4), true);
    if (text.startsWith('False', i)) return ((i += 5), false);
    if (text[i] === '(') {
      i++;
      const items: number[] = [];
      for (;;) {
        ws();
        if (text[i] === ')') {
          i++;
          return items;
        }
        const m = /^\d+/.exec(text.slice(i));
        if (!m) fail('expected a non-negative integer in the shape tuple');
        items.push(Number(m![0]));
        i += m![0].length;
        ws();
        if (text[i] === ',') i++;
        else if (text[i] !== ')') fail("expected ',' or ')' in the shape tuple");
      }
    }
    return fail('unsupported value');
  };
  const out: Record<string, PyValue> = {};
  ws();
  if (text[i] !== '{') fail("expected '{'");
  i++;
  for (;;) {
    ws();
    if (text[i] === '}') break;
    const key = str();
    ws();
    if (text[i] !== ':') fail("expected ':'");
    i++;
    out[key] = value();
    ws();
    if (text[i] === ',') i++;
    else if (text[i] !== '}') fail("expected ',' or '}'");
  }
  return out;
}

/**
 * Parses a .npy file (format versions 1.0, 2.0 and 3.0) holding a C-order (n, dim) array of
 * little-endian float32 (`<f4`) or float16 (`<f2`); float16 is converted to float32.
 */
export function parseNpy(bytes: Uint8Array, file = 'embeddings.npy'): VectorMatrix {
  const { dataStart, n, dim, dtype, descr } = parseNpyHeader(bytes, file);
  const width = dtype === 'f32' ? 4 : 2;
  const need = n * dim * width;
  const have = bytes.length - dataStart;
  if (have !== need)
    throw new VectorFileError(
      file,
      `data is ${have} bytes, shape (${n}, ${dim}) of ${descr} needs ${need}${have < need ? ' (truncated file?)' : ''}`,
    );
  const data = dtype === 'f32' ? f32At(bytes, dataStart, n * dim) : convertF16(bytes, dataStart, n * dim);
  return { data, n, dim, sourceDtype: dtype };
}

/** Bytes a .npy header can take at most here (NumPy pads it to 64-byte blocks; its dict is short). */
export const NPY_HEADER_MAX = 64 * 1024;

/**
 * A .npy file's header from its first bytes (all of the header must be in `bytes`; the data need not
 * be): where the data starts, the shape and the dtype. Throws VectorFileError naming `file`.
 */
export function parseNpyHeader(
  bytes: Uint8Array,
  file = 'embeddings.npy',
): { dataStart: number; n: number; dim: number; dtype: 'f32' | 'f16'; descr: string } {
  if (bytes.length < 10 || NPY_MAGIC.some((b, i) => bytes[i] !== b))
    throw new VectorFileError(file, 'not a .npy file (missing the \\x93NUMPY magic)');
  const major = bytes[6];
  const minor = bytes[7];
  if (major < 1 || major > 3 || minor !== 0)
    throw new VectorFileError(file, `unsupported .npy format version ${major}.${minor} (1.0, 2.0, 3.0 are)`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lenBytes = major === 1 ? 2 : 4;
  if (bytes.length < 8 + lenBytes) throw new VectorFileError(file, 'truncated .npy header');
  const headerLen = major === 1 ? dv.getUint16(8, true) : dv.getUint32(8, true);
  const dataStart = 8 + lenBytes + headerLen;
  if (dataStart > bytes.length)
    throw new VectorFileError(file, `header length ${headerLen} runs past the end of the file`);
  const headerBytes = bytes.subarray(8 + lenBytes, dataStart);
  // Versions 1 and 2 are latin-1, 3 is UTF-8; the dict keys and dtypes we accept are ASCII.
  const text = new TextDecoder(major === 3 ? 'utf-8' : 'latin1').decode(headerBytes);
  const dict = parsePyDict(text, file);
  const descr = dict.descr;
  const fortran = dict.fortran_order;
  const shape = dict.shape;
  if (typeof descr !== 'string') throw new VectorFileError(file, "header has no 'descr' string");
  if (typeof fortran !== 'boolean') throw new VectorFileError(file, "header has no 'fortran_order' flag");
  if (!Array.isArray(shape)) throw new VectorFileError(file, "header has no 'shape' tuple");
  if (fortran)
    throw new VectorFileError(file, 'array is in Fortran (column-major) order; save it C-contiguous');
  let dtype: 'f32' | 'f16';
  if (descr === '<f4' || descr === 'f4') dtype = 'f32';
  else if (descr === '<f2' || descr === 'f2') dtype = 'f16';
  else if (descr === '>f4' || descr === '>f2')
    throw new VectorFileError(
      file,
      `big-endian dtype '${descr}' is not supported; save as '<${descr.slice(2)}'`,
    );
  else
    throw new VectorFileError(file, `dtype '${descr}' is not supported ('<f4' float32 or '<f2' float16 are)`);
  if (shape.length !== 2)
    throw new VectorFileError(
      file,
      `shape (${shape.join(', ')}) is not 2-D; expected (documents, dimension)`,
    );
  const [n, dim] = shape;
  if (dim === 0) throw new VectorFileError(file, 'dimension is 0');
  return { dataStart, n, dim, dtype, descr };
}

/** Writes a float32 (n, dim) matrix as a .npy (version 1.0, '<f4', C order): for tools and fixtures. */
export function writeNpy(data: Float32Array, n: number, dim: number): Uint8Array {
  if (data.length !== n * dim) throw new RangeError(`(${n}, ${dim}) needs ${n * dim} values`);
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${n}, ${dim}), }`;
  // Pad with spaces so the data starts on a 64-byte boundary, newline last (as NumPy does).
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header.padEnd(total - 10 - 1, ' ') + '\n';
  const out = new Uint8Array(total + data.byteLength);
  out.set(NPY_MAGIC, 0);
  out[6] = 1;
  out[7] = 0;
  new DataView(out.buffer).setUint16(8, header.length, true);
  out.set(new TextEncoder().encode(header), 10);
  out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), total);
  return out;
}

// ---------------------------------------------------------------------------------------------
// safetensors

interface TensorInfo {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

/** SAFETENSORS_MAX_HEADER: largest JSON header accepted, in bytes (the format's own limit is 100 MB). */
export const SAFETENSORS_MAX_HEADER = 100_000_000;

/**
 * Parses a safetensors file and returns one 2-D tensor as float32: the one named `tensor`, else
 * the only 2-D tensor in the file. F32, F16 and BF16 are supported.
 */
export function parseSafetensors(
  bytes: Uint8Array,
  file = 'embeddings.safetensors',
  tensor?: string,
): VectorMatrix {
  if (bytes.length < 8) throw new VectorFileError(file, 'too short for a safetensors header');
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lo = dv.getUint32(0, true);
  const hi = dv.getUint32(4, true);
  const headerLen = hi * 2 ** 32 + lo;
  if (headerLen > SAFETENSORS_MAX_HEADER || 8 + headerLen > bytes.length)
    throw new VectorFileError(
      file,
      `header length ${headerLen} is larger than the file (${bytes.length} bytes)`,
    );
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + headerLen)));
  } catch (e) {
    throw new VectorFileError(file, `header is not valid JSON (${(e as Error).message})`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header))
    throw new VectorFileError(file, 'header is not a JSON object');
  const entries = Object.entries(header as Record<string, unknown>).filter(([k]) => k !== '__metadata__');
  const infos = new Map<string, TensorInfo>();
  for (const [name, v] of entries) {
    const t = v as Partial<TensorInfo> | null;
    if (
      !t ||
      typeof t.dtype !== 'string' ||
      !Array.isArray(t.shape) ||
      !t.shape.every((x) => Number.isInteger(x) && x >= 0) ||
      !Array.isArray(t.data_offsets) ||
      t.data_offsets.length !== 2 ||
      !t.data_offsets.every((x) => Number.isInteger(x) && x >= 0)
    )
      throw new VectorFileError(file, `tensor '${name}' has a malformed entry (dtype, shape, data_offsets)`);
    infos.set(name, t as TensorInfo);
  }
  let name = tensor;
  if (name === undefined) {
    const twoD = [...infos].filter(([, t]) => t.shape.length === 2).map(([k]) => k);
    if (twoD.length !== 1)
      throw new VectorFileError(
        file,
        twoD.length === 0
          ? `no 2-D tensor in the file (tensors: ${[...infos.keys()].join(', ') || 'none'})`
          : `several 2-D tensors (${twoD.join(', ')}); name the one to use`,
      );
    name = twoD[0];
  }
  const info = infos.get(name);
  if (!info)
    throw new VectorFileError(file, `no tensor named '${name}' (tensors: ${[...infos.keys()].join(', ')})`);
  if (info.shape.length !== 2)
    throw new VectorFileError(
      file,
      `tensor '${name}' has shape [${info.shape.join(', ')}]; expected [documents, dimension]`,
    );
  const [n, dim] = info.shape;
  if (dim === 0) throw new VectorFileError(file, `tensor '${name}' has dimension 0`);
  const width = info.dtype === 'F32' ? 4 : info.dtype === 'F16' || info.dtype === 'BF16' ? 2 : 0;
  if (width === 0)
    throw new VectorFileError(
      file,
      `tensor '${name}' has dtype ${info.dtype}; F32, F16 and BF16 are supported`,
    );
  const [begin, end] = info.data_offsets;
  const dataStart = 8 + headerLen;
  if (end < begin || dataStart + end > bytes.length)
    throw new VectorFileError(file, `tensor '${name}' data [${begin}, ${end}) runs past the end of the file`);
  if (end - begin !== n * dim * width)
    throw new VectorFileError(
      file,
      `tensor '${name}' holds ${end - begin} bytes, shape [${n}, ${dim}] of ${info.dtype} needs ${n * dim * width}`,
    );
  const at = dataStart + begin;
  const data =
    info.dtype === 'F32'
      ? f32At(bytes, at, n * dim)
      : info.dtype === 'F16'
        ? convertF16(bytes, at, n * dim)
        : convertBf16(bytes, at, n * dim);
  return { data, n, dim, sourceDtype: info.dtype === 'F32' ? 'f32' : info.dtype === 'F16' ? 'f16' : 'bf16' };
}

/** Parses by file name: `.npy` or `.safetensors`. */
export function parseVectorFile(bytes: Uint8Array, file: string, tensor?: string): VectorMatrix {
  const lower = file.toLowerCase();
  if (lower.endsWith('.npy')) return parseNpy(bytes, file);
  if (lower.endsWith('.safetensors')) return parseSafetensors(bytes, file, tensor);
  throw new VectorFileError(file, 'unknown vector file type (expected .npy or .safetensors)');
}

// ---------------------------------------------------------------------------------------------
// Sidecar

/** The JSON sidecar next to an embedding file: provenance plus the document id of every row. */
export interface EmbeddingSidecar {
  model_id: string;
  revision: string;
  /** Precision the model ran at, e.g. `fp32`, `fp16`, `q8`. */
  dtype: string;
  /** How token states became one vector, e.g. `mean`, `cls`, `last`. */
  pooling: string;
  /** Whether rows are L2-normalised. */
  normalize: boolean;
  dim: number;
  /** Row i of the matrix embeds document `doc_ids[i]`. */
  doc_ids: string[];
}

/** Parses and type-checks a sidecar; throws VectorFileError naming every bad field. */
export function parseSidecar(json: unknown, file = 'embeddings.json'): EmbeddingSidecar {
  let v = json;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch (e) {
      throw new VectorFileError(file, `not valid JSON (${(e as Error).message})`);
    }
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new VectorFileError(file, 'not a JSON object');
  const o = v as Record<string, unknown>;
  const problems: string[] = [];
  for (const f of ['model_id', 'revision', 'dtype', 'pooling'] as const)
    if (typeof o[f] !== 'string' || o[f] === '') problems.push(`'${f}' must be a non-empty string`);
  if (typeof o.normalize !== 'boolean') problems.push("'normalize' must be true or false");
  if (!Number.isInteger(o.dim) || (o.dim as number) <= 0) problems.push("'dim' must be a positive integer");
  if (!Array.isArray(o.doc_ids)) problems.push("'doc_ids' must be an array of strings");
  else {
    const bad = o.doc_ids.findIndex((x) => typeof x !== 'string');
    if (bad >= 0) problems.push(`'doc_ids'[${bad}] is not a string`);
  }
  if (problems.length) throw new VectorFileError(file, problems.join('; '));
  return {
    model_id: o.model_id as string,
    revision: o.revision as string,
    dtype: o.dtype as string,
    pooling: o.pooling as string,
    normalize: o.normalize as boolean,
    dim: o.dim as number,
    doc_ids: o.doc_ids as string[],
  };
}

/** One way a sidecar and its matrix disagree with the shard (or with each other). */
export interface SidecarMismatch {
  code: 'rows' | 'dimension' | 'count' | 'duplicate-id' | 'unknown-ids' | 'missing-ids' | 'order' | 'model';
  message: string;
}

export type SidecarCheck =
  | { ok: true }
  | {
      ok: false;
      problems: SidecarMismatch[];
      /** When the ids are the same set in another order: `permutation[i]` = file row of shard doc i. */
      permutation?: Uint32Array;
    };

const sample = (ids: string[], max = 3) =>
  ids
    .slice(0, max)
    .map((x) => JSON.stringify(x))
    .join(', ') + (ids.length > max ? `, … (${ids.length} in all)` : '');

/**
 * Checks a sidecar (and the shape of the matrix it describes) against a shard's documents. Same ids
 * in the same order → ok. Otherwise every difference is named: row count vs ids, dimension, id
 * count, duplicates, ids unknown to the shard, shard documents without a vector, a different order
 * (with the permutation that fixes it), and a different model than `expect.modelId`.
 */
export function checkSidecar(
  sidecar: EmbeddingSidecar,
  matrix: { n: number; dim: number },
  shardDocIds: readonly string[],
  expect: { modelId?: string; revision?: string; dim?: number } = {},
): SidecarCheck {
  const problems: SidecarMismatch[] = [];
  const ids = sidecar.doc_ids;
  if (matrix.n !== ids.length)
    problems.push({
      code: 'rows',
      message: `the matrix has ${matrix.n} rows but the sidecar lists ${ids.length} document ids`,
    });
  if (matrix.dim !== sidecar.dim)
    problems.push({
      code: 'dimension',
      message: `the matrix has dimension ${matrix.dim} but the sidecar says ${sidecar.dim}`,
    });
  if (expect.dim !== undefined && matrix.dim !== expect.dim)
    problems.push({
      code: 'dimension',
      message: `dimension ${matrix.dim} differs from the ${expect.dim} this index expects`,
    });
  if (expect.modelId !== undefined && sidecar.model_id !== expect.modelId)
    problems.push({
      code: 'model',
      message: `embeddings are from model ${JSON.stringify(sidecar.model_id)}, expected ${JSON.stringify(expect.modelId)}`,
    });
  if (expect.revision !== undefined && sidecar.revision !== expect.revision)
    problems.push({
      code: 'model',
      message: `embeddings are from revision ${JSON.stringify(sidecar.revision)} of ${sidecar.model_id}, expected ${JSON.stringify(expect.revision)}`,
    });
  const row = new Map<string, number>();
  const dups: string[] = [];
  ids.forEach((id, i) => (row.has(id) ? dups.push(id) : row.set(id, i)));
  if (dups.length)
    problems.push({ code: 'duplicate-id', message: `duplicate document ids: ${sample(dups)}` });
  const shardSet = new Set(shardDocIds);
  const unknown = ids.filter((id) => !shardSet.has(id));
  const missing = shardDocIds.filter((id) => !row.has(id));
  if (ids.length !== shardDocIds.length)
    problems.push({
      code: 'count',
      message: `the sidecar has ${ids.length} document ids, the shard has ${shardDocIds.length} documents`,
    });
  if (unknown.length)
    problems.push({ code: 'unknown-ids', message: `ids not in the shard: ${sample(unknown)}` });
  if (missing.length)
    problems.push({ code: 'missing-ids', message: `shard documents without a vector: ${sample(missing)}` });
  let permutation: Uint32Array | undefined;
  if (!dups.length && !unknown.length && !missing.length && ids.length === shardDocIds.length) {
    const first = shardDocIds.findIndex((id, i) => ids[i] !== id);
    if (first >= 0) {
      permutation = Uint32Array.from(shardDocIds, (id) => row.get(id)!);
      problems.push({
        code: 'order',
        message: `same documents in a different order: row ${first} is ${JSON.stringify(ids[first])}, the shard's document ${first} is ${JSON.stringify(shardDocIds[first])}`,
      });
    }
  }
  if (problems.length === 0) return { ok: true };
  return permutation ? { ok: false, problems, permutation } : { ok: false, problems };
}

/** Reorders matrix rows: row i of the result is row `permutation[i]` of the input. */
export function permuteRows(data: Float32Array, dim: number, permutation: ArrayLike<number>): Float32Array {
  const out = new Float32Array(permutation.length * dim);
  for (let i = 0; i < permutation.length; i++)
    out.set(data.subarray(permutation[i] * dim, permutation[i] * dim + dim), i * dim);
  return out;
}
