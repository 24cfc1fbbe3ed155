// Precomputed corpus embeddings inside a shard: `embeddings/index.json` lists the sets, each in
// `embeddings/<model-id>/<dtype>/` with one float16 .npy per document part (`text.npy`, `image.npy`)
// and a `sidecar.json` naming the model, revision, pooling, normalisation, prefixes, dimension and
// the document of every row. Pure: bytes and JSON in, checked sets out; every error names the file.
import type { ModelSpec } from '../retrieval/models';
import type { ShardSource } from './source';
import { idsFnv } from './doc-offsets-v2';
import {
  VectorFileError,
  checkSidecar,
  f32ToF16,
  parseNpyHeader,
  NPY_HEADER_MAX,
  parseSidecar,
  type EmbeddingSidecar,
} from './vector-files';

/** PRECOMPUTED_INDEX: the file listing a shard's precomputed embedding sets. */
export const PRECOMPUTED_INDEX = 'embeddings/index.json';
/** PRECOMPUTED_FORMAT: the `format` of index.json and of every sidecar. */
export const PRECOMPUTED_FORMAT = 'loupe-embeddings/1';
/** PRECOMPUTED_KIND: artifact kind under which an imported set is stored with its shard. */
export const PRECOMPUTED_KIND = 'precomputed';
/** REMOTE_IVF_KIND: artifact kind of a set searched through its packed IVF index on the shard's host. */
export const REMOTE_IVF_KIND = 'ivf';

/** One set in index.json: a model at a dtype, in a folder under embeddings/. */
export interface PrecomputedEntry {
  model_id: string;
  dtype: string;
  /** Folder under embeddings/, e.g. `loupe-test/bert-tiny-random/fp32/`. */
  path: string;
}

/** A set's sidecar: the vector-file sidecar plus what else decides the vectors. */
export interface PrecomputedSidecar extends EmbeddingSidecar {
  format: string;
  hub_id: string;
  /** Which part of each document was embedded. */
  part: 'text' | 'image';
  query_prefix: string;
  doc_prefix: string;
  /** The model's truncation length when the spec sets one. */
  max_tokens?: number;
  /** The .npy file (float16) beside the sidecar. */
  vectors: string;
  /** Documents of the shard without that part (no row). */
  missing: string[];
  /**
   * The packed IVF-int8 index beside the sidecar (`ivf-<part>.bin`, written by npm run pack-ivf). A
   * shard opened by URL is then searched through it (HTTP Range reads) and the .npy is never read
   * whole; folders and zips ignore it.
   */
  ivf?: string;
  /**
   * Written by pack-shard --offsets in place of `doc_ids` when they are every document of the corpus
   * in corpus order (a million ids are 11 MB): their count and the FNV-1a of the ids, each followed by
   * "\n" (core/shard/doc-offsets-v2.ts idsFnv). Reading the set checks both against the corpus and
   * fills `doc_ids` where the corpus's ids are at hand (an import).
   */
  corpus_order?: { docs: number; ids_fnv1a: string };
  /**
   * The rows are not the model's embeddings (synthetic unit vectors standing in for a corpus at
   * scale: make-scale-shard --vectors random, the IVF fixtures). The check of reference vectors
   * (core/retrieval/reference-check.ts) is skipped for such a set, and the run says so.
   */
  synthetic?: boolean;
  /**
   * Set only for a set read from a Parquet column (precomputed-parquet.ts): its file. Such a set may
   * leave revision and pooling empty and max_tokens out (not stated: not compared).
   */
  origin?: string;
}

/** A set read from a shard and checked against its documents: float16 bits, row-major. */
export type PrecomputedSet =
  | {
      sidecar: PrecomputedSidecar;
      /** rows × dim half-precision bit patterns. */
      f16: Uint16Array;
      npy?: undefined;
    }
  | {
      sidecar: PrecomputedSidecar;
      f16?: undefined;
      /** The rows in the shard's .npy, read as they are stored (a 1M × 384 set is 768 MB). */
      npy: NpyRows;
    };

/** A set's rows whole (tests, small sets): its bits, or its .npy read and checked against its shape. */
export async function setBits(set: PrecomputedSet): Promise<Uint16Array> {
  if (set.f16) return set.f16;
  const n = set.sidecar.doc_ids.length;
  const dim = set.sidecar.dim;
  const out = await collect((await set.npy.open()) ?? []);
  if (out.length - set.npy.dataStart !== n * dim * 2)
    throw new VectorFileError(
      set.npy.file,
      `data is ${out.length - set.npy.dataStart} bytes, shape (${n}, ${dim}) of float16 needs ${n * dim * 2}`,
    );
  return new Uint16Array(out.buffer.slice(set.npy.dataStart));
}

/** A float16 .npy whose header was checked: its data is read from `dataStart` when stored. */
export interface NpyRows {
  file: string;
  dataStart: number;
  /** Reads the file again from its first byte. */
  open(): Promise<AsyncIterable<Uint8Array> | null>;
}

/**
 * A set of a shard opened by URL that has a packed IVF index: kept with the shard instead of its
 * vectors (workers/index/ivf-remote.ts reads the index and the rows it needs from these URLs).
 */
export interface RemoteIvfSet {
  sidecar: PrecomputedSidecar;
  /** Absolute URL of the packed index. */
  ivfUrl: string;
  /** Absolute URL of the set's float16 .npy. */
  vectorsUrl: string;
}

/** The folder of a set: `<model-id>/<dtype>/` (model ids may contain a slash). */
export function precomputedPath(modelId: string, dtype: string): string {
  return `${modelId}/${dtype}/`;
}

/** Artifact key of a stored set. */
export function precomputedKey(modelId: string, dtype: string, part: string): string {
  return `${modelId}|${dtype}|${part}`;
}

function safeFolder(p: string): boolean {
  return (
    p.endsWith('/') &&
    !p.startsWith('/') &&
    p
      .split('/')
      .slice(0, -1)
      .every((s) => s && s !== '.' && s !== '..')
  );
}

/** Parses embeddings/index.json. */
export function parsePrecomputedIndex(json: unknown, file = PRECOMPUTED_INDEX): PrecomputedEntry[] {
  const o = json as { format?: unknown; sets?: unknown } | null;
  if (!o || typeof o !== 'object' || o.format !== PRECOMPUTED_FORMAT || !Array.isArray(o.sets))
    throw new VectorFileError(file, `expected {"format": "${PRECOMPUTED_FORMAT}", "sets": [...]}`);
  const out: PrecomputedEntry[] = [];
  o.sets.forEach((s: unknown, i) => {
    // Parquet sets (a `parquet` file instead of a folder) are read by precomputed-parquet.ts.
    if (s && typeof s === 'object' && 'parquet' in s) return;
    const e = s as Partial<PrecomputedEntry> | null;
    if (!e || typeof e.model_id !== 'string' || typeof e.dtype !== 'string' || typeof e.path !== 'string')
      throw new VectorFileError(file, `sets[${i}] needs string model_id, dtype and path`);
    if (!safeFolder(e.path))
      throw new VectorFileError(
        file,
        `sets[${i}].path ${JSON.stringify(e.path)} must be a relative folder ending in /`,
      );
    out.push({ model_id: e.model_id, dtype: e.dtype, path: e.path });
  });
  return out;
}

/** Parses a set's sidecar.json (the vector-file fields and the precomputed ones). */
export function parsePrecomputedSidecar(json: unknown, file: string): PrecomputedSidecar {
  const o = json as Record<string, unknown>;
  const order = o?.corpus_order as { docs?: unknown; ids_fnv1a?: unknown } | undefined;
  const inOrder = !!o && typeof o === 'object' && order !== undefined && o.doc_ids === undefined;
  const base = parseSidecar(inOrder ? { ...o, doc_ids: [] } : json, file);
  const problems: string[] = [];
  if (
    inOrder &&
    !(
      typeof order === 'object' &&
      order !== null &&
      Number.isInteger(order.docs) &&
      (order.docs as number) >= 0 &&
      typeof order.ids_fnv1a === 'string' &&
      /^[0-9a-f]{8}$/.test(order.ids_fnv1a)
    )
  )
    problems.push(`'corpus_order' must be {"docs": a count, "ids_fnv1a": 8 hex digits}`);
  if (o.format !== PRECOMPUTED_FORMAT) problems.push(`'format' must be "${PRECOMPUTED_FORMAT}"`);
  for (const f of ['hub_id', 'query_prefix', 'doc_prefix', 'vectors'] as const)
    if (typeof o[f] !== 'string') problems.push(`'${f}' must be a string`);
  if (o.part !== 'text' && o.part !== 'image') problems.push(`'part' must be "text" or "image"`);
  if (o.max_tokens !== undefined && !(Number.isInteger(o.max_tokens) && (o.max_tokens as number) > 0))
    problems.push(`'max_tokens' must be a positive integer`);
  if (!Array.isArray(o.missing) || o.missing.some((x) => typeof x !== 'string'))
    problems.push(`'missing' must be an array of document ids`);
  if (typeof o.vectors === 'string' && (o.vectors.includes('/') || !o.vectors.endsWith('.npy')))
    problems.push(`'vectors' must be a .npy file name beside the sidecar`);
  if (o.synthetic !== undefined && typeof o.synthetic !== 'boolean')
    problems.push(`'synthetic' must be true or false`);
  if (o.ivf !== undefined && !(typeof o.ivf === 'string' && /^[^/]+\.bin$/.test(o.ivf)))
    problems.push(`'ivf' must be a .bin file name beside the sidecar`);
  if (problems.length) throw new VectorFileError(file, problems.join('; '));
  return {
    ...base,
    format: o.format as string,
    hub_id: o.hub_id as string,
    part: o.part as 'text' | 'image',
    query_prefix: o.query_prefix as string,
    doc_prefix: o.doc_prefix as string,
    ...(o.max_tokens !== undefined ? { max_tokens: o.max_tokens as number } : {}),
    vectors: o.vectors as string,
    missing: o.missing as string[],
    ...(o.ivf !== undefined ? { ivf: o.ivf as string } : {}),
    ...(o.synthetic === true ? { synthetic: true } : {}),
    ...(inOrder ? { corpus_order: order as { docs: number; ids_fnv1a: string } } : {}),
  };
}

/**
 * Why a sidecar's rows are not `ids` (the corpus's ids in order, or only their count and checksum),
 * or '' when they are: listed ids or `corpus_order` alike.
 */
export function corpusOrderMismatch(s: PrecomputedSidecar, ids: { docs: number; idsFnv: number }): string {
  const docs = s.corpus_order?.docs ?? s.doc_ids.length;
  if (docs !== ids.docs) return `its rows are ${docs} documents, the corpus has ${ids.docs}`;
  const fnv = s.corpus_order ? parseInt(s.corpus_order.ids_fnv1a, 16) : idsFnv(s.doc_ids);
  return fnv === ids.idsFnv
    ? ''
    : 'its document ids are not the corpus’s ids in corpus order (their checksum differs): write it again with npm run pack-shard';
}

/**
 * Why a set does not fit a model loaded at `dtype` (empty when it fits): the model, revision,
 * dtype, pooling, normalisation, prefixes, truncation and dimension must all be the same.
 */
export function precomputedMismatch(
  s: PrecomputedSidecar,
  spec: ModelSpec,
  dtype: string,
  dim: number,
): string[] {
  const out: string[] = [];
  const same = (what: string, got: unknown, want: unknown) => {
    if (got !== want) out.push(`${what} ${JSON.stringify(got)} ≠ ${JSON.stringify(want)}`);
  };
  // A Parquet set compares only what it states (revision, pooling, max tokens are optional there).
  const stated = (v: unknown) => !s.origin || (v !== undefined && v !== '');
  same('model', s.model_id, spec.id);
  if (stated(s.revision)) same('revision', s.revision, spec.revision);
  same('dtype', s.dtype, dtype);
  if (stated(s.pooling)) same('pooling', s.pooling, spec.pooling);
  same('normalize', s.normalize, spec.normalize);
  same('query prefix', s.query_prefix, spec.queryPrefix);
  same('document prefix', s.doc_prefix, spec.docPrefix);
  if (stated(s.max_tokens)) same('max tokens', s.max_tokens, spec.maxTokens);
  same('dimension', s.dim, dim);
  return out;
}

/** Whether a document has the part a set embeds (text: a non-blank title or text; image: an image). */
export function docHasPart(
  d: { title?: string; text?: string; image?: string },
  part: 'text' | 'image',
): boolean {
  return part === 'text'
    ? [d.title, d.text].some((s) => !!s && !!s.trim())
    : typeof d.image === 'string' && d.image !== '';
}

export async function readAll(source: ShardSource, path: string): Promise<Uint8Array | null> {
  const stream = await source.open(path);
  return stream ? collect(stream) : null;
}

/** A stream's bytes in one array. */
async function collect(stream: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let n = 0;
  for await (const c of stream) {
    chunks.push(c.slice());
    n += c.length;
  }
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

function json(bytes: Uint8Array, file: string): unknown {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    throw new VectorFileError(file, `not valid JSON (${(e as Error).message})`);
  }
}

/**
 * Checks a precomputed set's .npy from its header (float16, shape (n, dim)) and its size where the
 * source knows it; its rows are read when the set is stored (platform/storage/precomputed-store.ts, which
 * checks the length again as it reads).
 */
async function checkedNpy(source: ShardSource, file: string, n: number, dim: number): Promise<NpyRows> {
  const head = await npyHead(source, file);
  const h = parseNpyHeader(head, file);
  if (h.dtype !== 'f16') throw new VectorFileError(file, `precomputed vectors must be float16 ('<f2')`);
  if (h.n !== n || h.dim !== dim)
    throw new VectorFileError(file, `shape (${h.n}, ${h.dim}) ≠ (${n}, ${dim})`);
  const size = await source.size(file);
  const need = n * dim * 2;
  if (size !== undefined && size - h.dataStart !== need)
    throw new VectorFileError(
      file,
      `data is ${size - h.dataStart} bytes, shape (${n}, ${dim}) of ${h.descr} needs ${need}${size - h.dataStart < need ? ' (truncated file?)' : ''}`,
    );
  return { file, dataStart: h.dataStart, open: () => source.open(file) };
}

/** The first bytes of a .npy, up to the end of its header (the stream is closed after them). */
async function npyHead(source: ShardSource, file: string): Promise<Uint8Array> {
  const stream = await source.open(file);
  if (!stream) throw new VectorFileError(file, 'missing (named by the sidecar)');
  let head = new Uint8Array(0);
  const need = () => {
    if (head.length < 12) return 12;
    const dv = new DataView(head.buffer);
    return head[6] === 1 ? 10 + dv.getUint16(8, true) : 12 + dv.getUint32(8, true);
  };
  for await (const c of stream) {
    const next = new Uint8Array(head.length + c.length);
    next.set(head);
    next.set(c, head.length);
    head = next;
    if (head.length >= Math.min(need(), NPY_HEADER_MAX)) break;
  }
  return head;
}

/**
 * Reads and checks every precomputed set of a shard: each sidecar against the shard's documents
 * (the rows must be exactly its documents that have the part, in shard order) and each .npy against
 * the sidecar. A set that fails is left out with a problem naming the file and what is wrong.
 * `declared`: shard.json names embeddings/index.json. A source that cannot list its files (a URL) is
 * asked for it only then, so opening a shard without embeddings requests no file it does not have.
 * `href`: the absolute URL of a file, for a shard read over HTTP; then a set whose sidecar names a
 * packed IVF index comes back in `ivf` (absent when none) with the URLs to search it by, and its
 * .npy is not read. `corpusOrder`: a shard opened remote-first whose ids are not at hand (`docs` is
 * empty): each sidecar's rows must be the corpus order, by count and checksum (doc-offsets-v2.ts).
 */
export async function readPrecomputed(
  source: ShardSource,
  docs: readonly { id: string; title?: string; text?: string; image?: string }[],
  declared = false,
  href?: (path: string) => string,
  corpusOrder?: { docs: number; idsFnv: number },
  /** `indexesOnly`: only the sets with a packed index are wanted (no set's vectors are read). */
  opts: { indexesOnly?: boolean } = {},
): Promise<{ sets: PrecomputedSet[]; problems: string[]; ivf?: RemoteIvfSet[] }> {
  const ivf: RemoteIvfSet[] = [];
  if (!declared && source.remote) return { sets: [], problems: [] };
  const indexBytes = await readAll(source, PRECOMPUTED_INDEX);
  if (!indexBytes && !declared) return { sets: [], problems: [] };
  if (!indexBytes)
    return {
      sets: [],
      problems: [`shard.json names ${PRECOMPUTED_INDEX} ("embeddings"), but the shard has no such file`],
    };
  const sets: PrecomputedSet[] = [];
  const problems: string[] = [];
  let entries: PrecomputedEntry[];
  try {
    entries = parsePrecomputedIndex(json(indexBytes, PRECOMPUTED_INDEX));
  } catch (e) {
    return { sets, problems: [(e as Error).message] };
  }
  for (const entry of entries) {
    for (const part of ['text', 'image'] as const) {
      const file = `embeddings/${entry.path}sidecar-${part}.json`;
      try {
        const bytes = await readAll(source, file);
        if (!bytes) continue;
        const sidecar = parsePrecomputedSidecar(json(bytes, file), file);
        if (sidecar.model_id !== entry.model_id || sidecar.dtype !== entry.dtype || sidecar.part !== part)
          throw new VectorFileError(
            file,
            `describes ${sidecar.model_id} ${sidecar.dtype} ${sidecar.part}, index.json says ${entry.model_id} ${entry.dtype} ${part}`,
          );
        if (corpusOrder) {
          // A shard opened remote-first (its ids are not at hand): the rows must be the corpus order,
          // by count and checksum (doc-offsets-v2.ts), and every document has the part.
          const why = corpusOrderMismatch(sidecar, corpusOrder);
          if (why) throw new VectorFileError(file, why);
          if (sidecar.ivf && href)
            ivf.push({
              sidecar,
              ivfUrl: href(`embeddings/${entry.path}${sidecar.ivf}`),
              vectorsUrl: href(`embeddings/${entry.path}${sidecar.vectors}`),
            });
          continue;
        }
        if (sidecar.corpus_order) {
          const all = docs.map((d) => d.id);
          const why = corpusOrderMismatch(sidecar, { docs: all.length, idsFnv: idsFnv(all) });
          if (why) throw new VectorFileError(file, why);
          sidecar.doc_ids = all;
        }
        const ids = docs.filter((d) => docHasPart(d, part)).map((d) => d.id);
        const check = checkSidecar(sidecar, { n: sidecar.doc_ids.length, dim: sidecar.dim }, ids);
        if (!check.ok) throw new VectorFileError(file, check.problems.map((p) => p.message).join('; '));
        const vfile = `embeddings/${entry.path}${sidecar.vectors}`;
        if (sidecar.ivf && href) {
          ivf.push({
            sidecar,
            ivfUrl: href(`embeddings/${entry.path}${sidecar.ivf}`),
            vectorsUrl: href(vfile),
          });
          continue;
        }
        if (opts.indexesOnly) continue;
        sets.push({ sidecar, npy: await checkedNpy(source, vfile, ids.length, sidecar.dim) });
      } catch (e) {
        problems.push((e as Error).message);
      }
    }
  }
  return { sets, problems, ...(ivf.length ? { ivf } : {}) };
}

/** Float32 rows → a float16 .npy (version 1.0, '<f2', C order). */
export function writeNpyF16(data: Float32Array, n: number, dim: number): Uint8Array {
  if (data.length !== n * dim) throw new RangeError(`(${n}, ${dim}) needs ${n * dim} values`);
  let header = `{'descr': '<f2', 'fortran_order': False, 'shape': (${n}, ${dim}), }`;
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header.padEnd(total - 10 - 1, ' ') + '\n';
  const out = new Uint8Array(total + n * dim * 2);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
  const dv = new DataView(out.buffer);
  dv.setUint16(8, header.length, true);
  out.set(new TextEncoder().encode(header), 10);
  for (let i = 0; i < data.length; i++) dv.setUint16(total + i * 2, f32ToF16(data[i]), true);
  return out;
}
