// Parquet datasets (MIEB / Hugging Face layout) as shards. The Parquet files are presented to the very
// same reader as a JSONL shard (read-shard.ts) through a virtual "BEIR + images" source: shard.json,
// corpus.jsonl, queries.jsonl and qrels/test.tsv are written on the fly from the rows, and images come
// out of the image columns. So every row is validated by the same code, with the same issue codes; each
// issue is then moved from its virtual line back to the Parquet file, row group and row it came from.
// The corpus is streamed one row group at a time; queries and qrels (small) are read up front, because
// the tasks written into shard.json depend on them.
import {
  parquetMetadataAsync,
  parquetReadObjects,
  parquetSchema,
  type AsyncBuffer,
  type FileMetaData,
  type SchemaTree,
} from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
export { isParquetSource } from './detect';
import { ShardValidationError, type ShardIssue, type ShardSource } from '../../shard/source';
import type { Modality, ParsedShard, ShardWarning, TaskInfo } from '../../types';
import { readShard, type ReadShardOptions } from '../../shard/read-shard';
import {
  ANY_SPLIT,
  checkParquetMapping,
  classifyParquetPath,
  detectParquetMapping,
  inSplits,
  normaliseQuerySplits,
  parseModality,
  type ParquetColumnInfo,
  type ParquetColumnKind,
  type ParquetFileInfo,
  type ParquetMapping,
} from './mapping';

/** What {@link inspectParquet} found: the files, the detected mapping and the dataset's identity. */
export interface ParquetInspection {
  label: string;
  files: ParquetFileInfo[];
  /** Splits that have both query and qrels files. */
  splits: string[];
  /** The detected mapping (edit it, then pass it to the import). */
  mapping: ParquetMapping;
  /** Stable key of the dataset (source label + files + columns): where its mapping is remembered. */
  identity: string;
}

const EXAMPLES = 5;
const enc = new TextEncoder();

// ---- files ----------------------------------------------------------------------------------------

/** Reads a stream whole, for sources without random access (hyparquet needs the footer first). */
async function wholeFile(stream: AsyncIterable<Uint8Array>): Promise<ArrayBuffer> {
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const c of stream) {
    parts.push(c);
    n += c.length;
  }
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out.buffer;
}

async function openParquet(source: ShardSource, path: string): Promise<AsyncBuffer> {
  const r = source.openRandom ? await source.openRandom(path) : null;
  if (r) return r;
  const stream = await source.open(path);
  if (!stream)
    throw new ShardValidationError([
      { file: path, code: 'missing-file', message: `${path} is missing from ${source.label}` },
    ]);
  return wholeFile(stream);
}

function columnKind(node: SchemaTree): ParquetColumnKind {
  const e = node.element;
  if (node.children.length === 0) {
    const logical = e.logical_type?.type;
    switch (e.type) {
      case 'BYTE_ARRAY':
        return e.converted_type === 'UTF8' ||
          logical === 'STRING' ||
          logical === 'ENUM' ||
          e.converted_type === 'ENUM'
          ? 'string'
          : 'binary';
      case 'INT32':
      case 'INT64':
      case 'FLOAT':
      case 'DOUBLE':
        return 'number';
      case 'BOOLEAN':
        return 'boolean';
      default:
        return 'other';
    }
  }
  const names = node.children.map((c) => c.element.name);
  if (names.includes('bytes') && node.children.find((c) => c.element.name === 'bytes')!.children.length === 0)
    return 'image';
  if (e.converted_type === 'LIST' || e.logical_type?.type === 'LIST') {
    let leaf = node;
    while (leaf.children.length === 1) leaf = leaf.children[0];
    if (leaf.children.length === 0 && columnKind(leaf) === 'string') return 'string-list';
  }
  return 'other';
}

interface OpenFile {
  info: ParquetFileInfo;
  buffer: AsyncBuffer;
  metadata: FileMetaData;
  /** First file row of each row group. */
  groupStarts: number[];
}

/** Issue for a failure of hyparquet on a file or one of its row groups. */
function corrupt(path: string, rowGroup: number | undefined, e: unknown): ShardIssue {
  const why = e instanceof Error ? e.message : String(e);
  return rowGroup === undefined
    ? { file: path, code: 'parquet-invalid', message: `not a readable Parquet file: ${why}` }
    : {
        file: path,
        rowGroup,
        code: 'parquet-corrupt',
        message: `row group ${rowGroup} cannot be decoded: ${why}`,
      };
}

async function openAll(source: ShardSource, paths: string[]): Promise<OpenFile[]> {
  const out: OpenFile[] = [];
  const issues: ShardIssue[] = [];
  for (const path of paths) {
    let buffer: AsyncBuffer;
    let metadata: FileMetaData;
    try {
      buffer = await openParquet(source, path);
      metadata = await parquetMetadataAsync(buffer);
    } catch (e) {
      if (e instanceof ShardValidationError) throw e;
      issues.push(corrupt(path, undefined, e));
      continue;
    }
    const columns: ParquetColumnInfo[] = parquetSchema(metadata).children.map((c) => ({
      name: c.element.name,
      kind: columnKind(c),
    }));
    const rowGroups = metadata.row_groups.map((g) => Number(g.num_rows));
    const groupStarts: number[] = [];
    let rows = 0;
    for (const n of rowGroups) {
      groupStarts.push(rows);
      rows += n;
    }
    out.push({
      info: { path, ...classifyParquetPath(path), rows, rowGroups, columns },
      buffer,
      metadata,
      groupStarts,
    });
  }
  if (issues.length) throw new ShardValidationError(issues);
  // A file with qrels columns is qrels whatever its folder is called; a `default` folder without is not.
  for (const f of out) {
    const names = new Set(f.info.columns.map((c) => c.name.toLowerCase()));
    const qrelsLike =
      [...names].some((n) => /^(query[-_]?id|qid|q_id)$/.test(n)) &&
      [...names].some((n) => /^(corpus[-_]?id|doc[-_]?id|docid|pid|p_id)$/.test(n));
    if (qrelsLike) f.info.role = 'qrels';
    else if (f.info.role === 'qrels' && f.info.config !== 'qrels') f.info.role = null;
  }
  normaliseQuerySplits(out.map((f) => f.info));
  return out;
}

async function readGroup(f: OpenFile, g: number, columns: string[]): Promise<Record<string, unknown>[]> {
  const rowStart = f.groupStarts[g];
  try {
    return await parquetReadObjects({
      file: f.buffer,
      metadata: f.metadata,
      rowStart,
      rowEnd: rowStart + f.info.rowGroups[g],
      columns,
      // Image bytes are unannotated BYTE_ARRAY: never let them be decoded as text.
      utf8: false,
      compressors,
    });
  } catch (e) {
    throw new ShardValidationError([corrupt(f.info.path, g, e)]);
  }
}

/** MIEB `modality` values of the first row group of the first file, when all of them are modalities. */
async function modalityColumn(files: OpenFile[]): Promise<string | undefined> {
  const f = files[0];
  const col = f?.info.columns.find((c) => c.name.toLowerCase() === 'modality' && c.kind === 'string');
  if (!col || f.info.rowGroups.length === 0) return undefined;
  const rows = await readGroup(f, 0, [col.name]);
  const values = rows.map((r) => r[col.name]).filter((v) => v != null);
  return values.length > 0 && values.every((v) => typeof v === 'string' && parseModality(v) !== null)
    ? col.name
    : undefined;
}

/** FNV-1a over a string, as 8 hex digits: a short, stable key (not a security hash). */
function fnv(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

function parquetPaths(listing: string[]): string[] {
  return listing.filter((p) => /\.parquet$/i.test(p)).sort();
}

/**
 * Reads the footers of a Parquet dataset's files (no row data but one small `modality` sample) and
 * detects the layout and the column mapping. Throws ShardValidationError when a file is not Parquet.
 */
export async function inspectParquet(source: ShardSource): Promise<ParquetInspection> {
  const listing = await source.list();
  if (!listing)
    throw new ShardValidationError([
      {
        file: source.label,
        code: 'unknown-format',
        message: `${source.label} cannot be listed: give the Parquet files' paths (a hub resolve/ URL is listed through the hub's API)`,
      },
    ]);
  const paths = parquetPaths(listing);
  if (paths.length === 0)
    throw new ShardValidationError([
      { file: source.label, code: 'unknown-format', message: `${source.label} holds no .parquet files` },
    ]);
  const files = await openAll(source, paths);
  const byRole = (r: string) => files.filter((f) => f.info.role === r);
  const infos = files.map((f) => f.info);
  const mapping = detectParquetMapping(infos, {
    name:
      source.label
        .replace(/\/+$/, '')
        .split('/')
        .pop()!
        .replace(/\.zip$/i, '') || source.label,
    modalityColumns: {
      corpus: await modalityColumn(byRole('corpus')),
      query: await modalityColumn(byRole('query')),
    },
  });
  const querySplits = new Set(byRole('query').map((f) => f.info.split));
  const splits = [...new Set(byRole('qrels').map((f) => f.info.split))]
    .filter((s) => querySplits.has(s) || querySplits.has(ANY_SPLIT))
    .sort();
  const identity = `parquet:${source.label}:${fnv(
    infos.map((f) => `${f.path}\t${f.columns.map((c) => `${c.name}:${c.kind}`).join(',')}`).join('\n'),
  )}`;
  return { label: source.label, files: infos, splits, mapping, identity };
}

// ---- values ---------------------------------------------------------------------------------------

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A cell as a string: strings as they are, bytes decoded as UTF-8, numbers and bigints printed. */
function asString(v: unknown): string | null | undefined {
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

function imageBytes(v: unknown): { bytes: Uint8Array | null; path?: string } | null {
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

function metaValue(v: unknown): string | string[] | undefined {
  if (Array.isArray(v)) return v.every((x) => typeof x === 'string') ? (v as string[]) : undefined;
  const s = asString(v);
  return s === null || s === undefined ? undefined : s;
}

function extOf(b: Uint8Array): string {
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpg';
  if (b.length >= 4 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return 'png';
  if (b.length >= 12 && b[8] === 0x57 && b[9] === 0x45 && b[10] === 0x42 && b[11] === 0x50) return 'webp';
  if (b.length >= 132 && b[128] === 0x44 && b[129] === 0x49 && b[130] === 0x43 && b[131] === 0x4d)
    return 'dcm';
  return 'bin';
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function bytesKey(b: Uint8Array): string {
  let h = 0x811c9dc5;
  // Sampling bounds the cost for large images; equal keys are confirmed byte by byte.
  const step = Math.max(1, Math.floor(b.length / 4096));
  for (let i = 0; i < b.length; i += step) h = Math.imul(h ^ b[i], 0x01000193) >>> 0;
  return `${b.length}:${h}`;
}

// ---- locations ------------------------------------------------------------------------------------

/** Where a run of virtual lines came from: lines [line, …) are rows [row, …) of `file`'s row group. */
interface Segment {
  line: number;
  file: string;
  rowGroup: number;
  row: number;
}

class LineMap {
  readonly segments: Segment[] = [];
  locate(line: number): { file: string; rowGroup: number; row: number } | null {
    let lo = 0;
    let hi = this.segments.length - 1;
    let hit = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.segments[mid].line <= line) {
        hit = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (hit < 0) return null;
    const s = this.segments[hit];
    return { file: s.file, rowGroup: s.rowGroup, row: s.row + (line - s.line) };
  }
}

// ---- the virtual shard ----------------------------------------------------------------------------

/**
 * Where image bytes from image columns wait until the shard reader checks them (after all rows). The
 * worker keeps them in Blobs (which the browser may spill to disk); the default holds them in memory.
 */
export interface ImageStash {
  /** Keeps a copy of `bytes` (the caller's buffer is reused afterwards). */
  put(path: string, bytes: Uint8Array): void;
  /** The bytes put under `path`, or null. */
  take(path: string): Promise<Uint8Array | null>;
}

/** The default ImageStash: copies in a Map, each dropped once taken. */
export function memoryImageStash(): ImageStash {
  const m = new Map<string, Uint8Array>();
  return {
    put: (path, bytes) => void m.set(path, bytes.slice()),
    take: async (path) => {
      const b = m.get(path) ?? null;
      m.delete(path);
      return b;
    },
  };
}

/** Options of {@link readParquetShard}: those of readShard, plus an inspection already made. */
export interface ReadParquetOptions extends ReadShardOptions {
  inspection?: ParquetInspection;
  /** Where images wait for validation (default: memory). */
  imageStash?: ImageStash;
}

const TASK_SUFFIX: Record<Modality, string> = { text: 'text', image: 'image', 'image+text': 'image-text' };
const VIRTUAL = {
  manifest: 'shard.json',
  corpus: 'corpus.jsonl',
  queries: 'queries.jsonl',
  qrels: 'qrels/test.tsv',
};
const RESERVED_DOC = new Set(['_id', 'title', 'text', 'image']);
const RESERVED_QUERY = new Set(['_id', 'text', 'image', 'task', 'exclude_ids']);

interface QueryRow {
  id: string;
  split: string;
  json: Record<string, unknown>;
  modality: Modality;
  loc: { file: string; rowGroup: number; row: number };
}

/**
 * Reads a Parquet dataset with `mapping` and validates it as a "BEIR + images" shard. Returns the
 * ParsedShard (its hash covers the rows and the mapping) or throws ShardValidationError whose issues
 * name the Parquet file, row group and row (0-based).
 */
export async function readParquetShard(
  source: ShardSource,
  mapping: ParquetMapping,
  opts: ReadParquetOptions = {},
): Promise<ParsedShard> {
  const inspection = opts.inspection ?? (await inspectParquet(source));
  const mappingIssues = checkParquetMapping(inspection.files, mapping);
  if (mappingIssues.length) throw new ShardValidationError(mappingIssues);
  const reader = new ParquetShard(source, inspection, mapping, opts);
  return reader.read();
}

class ParquetShard {
  private files: OpenFile[] = [];
  private readonly issues: ShardIssue[] = [];
  private readonly warnings: ShardWarning[] = [];
  private readonly maps = { corpus: new LineMap(), queries: new LineMap(), qrels: new LineMap() };
  /** Images wait here until readShard asks for them; query images are also kept to spot shared ones. */
  private readonly stash: ImageStash;
  private readonly imagePaths = new Set<string>();
  private readonly queryImages = new Map<string, Uint8Array>();
  private readonly imageLoc = new Map<
    string,
    { file: string; rowGroup: number; row: number; column: string }
  >();
  private readonly imageByContent = new Map<string, string[]>();
  private queriesJsonl: Uint8Array = new Uint8Array();
  private qrelsTsv: Uint8Array = new Uint8Array();
  private tasks: TaskInfo[] = [];
  private readonly splitOfTask = new Map<string, string>();

  constructor(
    private readonly source: ShardSource,
    private readonly inspection: ParquetInspection,
    private readonly mapping: ParquetMapping,
    private readonly opts: ReadParquetOptions,
  ) {
    this.stash = opts.imageStash ?? memoryImageStash();
  }

  private status(message: string): void {
    this.opts.onProgress?.({ kind: 'status', message });
  }

  private checkCancelled(): void {
    if (this.opts.isCancelled?.()) {
      const e = new Error(`reading ${this.source.label} was cancelled`);
      e.name = 'AbortError';
      throw e;
    }
  }

  private of(role: string, splits?: string[]): OpenFile[] {
    return this.files.filter((f) => f.info.role === role && (!splits || inSplits(f.info, splits)));
  }

  async read(): Promise<ParsedShard> {
    let parsed: ParsedShard;
    try {
      this.files = await openAll(
        this.source,
        this.inspection.files.map((f) => f.path),
      );
      const judged = await this.readQrels();
      await this.readQueries(judged);
      parsed = await readShard(this.virtualSource(), this.opts);
    } catch (e) {
      if (!(e instanceof ShardValidationError)) throw e;
      // this.issue() throws with its own list once the cap is reached: nothing to merge then.
      if (e.issues === this.issues) throw e;
      throw new ShardValidationError([...this.issues, ...e.issues.map((i) => this.relocate(i))]);
    }
    if (this.issues.length) throw new ShardValidationError(this.issues);
    parsed.manifest.name = this.mapping.name || this.source.label;
    parsed.warnings = [
      ...this.warnings,
      ...parsed.warnings.filter((w) => w.code !== 'missing-name').map((w) => this.relocateWarning(w)),
    ];
    this.deriveCorpusModalities(parsed);
    parsed.manifest.format = 'beir+images';
    return parsed;
  }

  // ---- qrels and queries (read up front) --------------------------------------------------------

  private async readQrels(): Promise<Map<string, Set<string>>> {
    const { queryId, corpusId, score } = this.mapping.qrels;
    const lines: string[] = ['query-id\tcorpus-id\tscore'];
    const judged = new Map<string, Set<string>>();
    const columns = [queryId, corpusId, ...(score ? [score] : [])];
    let line = 2;
    for (const f of this.of('qrels', this.mapping.splits)) {
      for (let g = 0; g < f.info.rowGroups.length; g++) {
        this.checkCancelled();
        this.status(`Reading qrels: ${f.info.path}, row group ${g + 1} of ${f.info.rowGroups.length}`);
        const rows = await readGroup(f, g, columns);
        this.maps.qrels.segments.push({ line, file: f.info.path, rowGroup: g, row: f.groupStarts[g] });
        rows.forEach((r, i) => {
          const at = { file: f.info.path, rowGroup: g, row: f.groupStarts[g] + i };
          const q = this.idCell(at, r[queryId], queryId);
          const d = this.idCell(at, r[corpusId], corpusId);
          let s = '1';
          if (score) {
            const v = r[score];
            s = typeof v === 'number' && Number.isInteger(v) ? String(v) : (asString(v) ?? '');
          }
          // A bad id still takes its line, so that line numbers stay row numbers.
          lines.push(`${q ?? ''}\t${d ?? ''}\t${s}`);
          if (q !== null) {
            let set = judged.get(f.info.split);
            if (!set) judged.set(f.info.split, (set = new Set()));
            set.add(q);
          }
          line++;
        });
      }
    }
    this.qrelsTsv = enc.encode(lines.join('\n') + '\n');
    return judged;
  }

  /** An id cell as a string, or null after an issue (null cell, tab or line break, not text). */
  private idCell(
    at: { file: string; rowGroup: number; row: number },
    v: unknown,
    column: string,
  ): string | null {
    const s = asString(v);
    if (s === null || s === undefined || /[\t\n\r]/.test(s)) {
      this.issue({
        ...at,
        code: s === null ? 'missing-field' : 'invalid-id',
        message:
          s === null
            ? `column "${column}" is empty (null); every row needs an id`
            : `column "${column}" holds ${s === undefined ? 'a value that is not text' : JSON.stringify(s)}, not a valid id`,
      });
      return null;
    }
    return s;
  }

  private issue(i: ShardIssue): void {
    this.issues.push(i);
    if (this.issues.length >= (this.opts.maxIssues ?? 50)) throw new ShardValidationError(this.issues);
  }

  /** The parts a row carries after its declared MIEB modality (if mapped) dropped the others. */
  private parts(
    at: { file: string; rowGroup: number; row: number },
    r: Record<string, unknown>,
    cols: { text?: string; image?: string; modality?: string },
  ): { text: string; image: Uint8Array | null; imageColumn?: string } {
    let text = '';
    if (cols.text) {
      const t = asString(r[cols.text]);
      if (t === undefined)
        this.issue({ ...at, code: 'wrong-type', message: `column "${cols.text}" is not UTF-8 text` });
      else text = t ?? '';
    }
    let image: Uint8Array | null = null;
    if (cols.image) {
      const img = imageBytes(r[cols.image]);
      if (img && !img.bytes)
        this.issue({
          ...at,
          code: 'missing-image',
          message: `column "${cols.image}" has no image bytes${img.path ? ` (only the path ${JSON.stringify(img.path)}, which is not embedded in the file)` : ''}`,
        });
      image = img?.bytes ?? null;
    }
    if (cols.modality) {
      const raw = asString(r[cols.modality]);
      const m = raw ? parseModality(raw) : null;
      if (raw && !m)
        this.issue({
          ...at,
          code: 'bad-modality',
          message: `column "${cols.modality}" holds ${JSON.stringify(raw)}; use text, image or image,text`,
        });
      if (m === 'text') image = null;
      if (m === 'image') text = '';
    }
    return { text, image, imageColumn: cols.image };
  }

  /** Stashes an image for readShard; identical bytes share one path (a query image that is a corpus image). */
  private stashImage(
    kind: 'corpus' | 'query',
    id: string,
    bytes: Uint8Array,
    at: { file: string; rowGroup: number; row: number },
    column: string,
  ): string {
    // A corpus image identical to a query image (MIEB image-to-image) is stored once, under the query's path.
    const key = bytesKey(bytes);
    for (const p of this.imageByContent.get(key) ?? []) {
      const other = this.queryImages.get(p);
      if (other && sameBytes(other, bytes)) return p;
    }
    let path = `images/${kind}/${encodeURIComponent(id) || 'row'}.${extOf(bytes)}`;
    for (let n = 2; this.imagePaths.has(path); n++)
      path = `images/${kind}/${encodeURIComponent(id)}-${n}.${extOf(bytes)}`;
    this.imagePaths.add(path);
    // Copies: the row group's decoded buffers are released once the row group is written out.
    this.stash.put(path, bytes);
    if (kind === 'query') {
      this.queryImages.set(path, bytes.slice());
      const list = this.imageByContent.get(key) ?? [];
      list.push(path);
      this.imageByContent.set(key, list);
    }
    this.imageLoc.set(path, { ...at, column });
    return path;
  }

  private async readQueries(judged: Map<string, Set<string>>): Promise<void> {
    const q = this.mapping.query;
    const columns = [q.id, q.text, q.image, q.modality, q.excludeIds, ...q.meta].filter(
      (c): c is string => !!c,
    );
    const rows: QueryRow[] = [];
    let unjudged = 0;
    const unjudgedExamples: string[] = [];
    for (const split of this.mapping.splits) {
      for (const f of this.of('query', [split])) {
        for (let g = 0; g < f.info.rowGroups.length; g++) {
          this.checkCancelled();
          this.status(`Reading queries: ${f.info.path}, row group ${g + 1} of ${f.info.rowGroups.length}`);
          const group = await readGroup(f, g, columns);
          group.forEach((r, i) => {
            const at = { file: f.info.path, rowGroup: g, row: f.groupStarts[g] + i };
            const id = this.idCell(at, r[q.id], q.id);
            if (id === null) return;
            if (!judged.get(split)?.has(id)) {
              unjudged++;
              if (unjudgedExamples.length < EXAMPLES) unjudgedExamples.push(id);
              return;
            }
            const { text, image } = this.parts(at, r, q);
            const json: Record<string, unknown> = { _id: id, text };
            if (image) json.image = this.stashImage('query', id, image, at, q.image!);
            if (q.excludeIds) {
              const ex = r[q.excludeIds];
              if (Array.isArray(ex) && ex.length > 0) json.exclude_ids = ex;
            }
            for (const m of q.meta) {
              const v = metaValue(r[m]);
              if (v !== undefined && !RESERVED_QUERY.has(m)) json[m] = v;
            }
            const modality: Modality = !image ? 'text' : text === '' ? 'image' : 'image+text';
            rows.push({ id, split, json, modality, loc: at });
          });
        }
      }
    }
    if (unjudged > 0)
      this.warnings.push({
        file: this.of('query', this.mapping.splits)[0]?.info.path ?? 'query/',
        code: 'queries-without-qrels',
        message: `${unjudged} queries have no row in the qrels of their split and were skipped, as BEIR and MTEB do`,
        count: unjudged,
        examples: unjudgedExamples,
      });

    // One task per (split, query modality): the split's name when it has one modality.
    const combos = new Map<string, Set<Modality>>();
    for (const r of rows) {
      const s = combos.get(r.split) ?? new Set();
      s.add(r.modality);
      combos.set(r.split, s);
    }
    const taskOf = (split: string, m: Modality) => {
      const base = split.replace(/[^A-Za-z0-9_.:-]/g, '-').replace(/^[^A-Za-z0-9]/, 's');
      return combos.get(split)!.size === 1 ? base : `${base}-${TASK_SUFFIX[m]}`;
    };
    const seen = new Set<string>();
    const lines: string[] = [];
    for (const r of rows) {
      const task = taskOf(r.split, r.modality);
      if (!seen.has(task)) {
        seen.add(task);
        this.splitOfTask.set(task, r.split);
        this.tasks.push({
          id: task,
          queryModality: r.modality,
          // Placeholder until the corpus is read (deriveCorpusModalities); an override is final.
          corpusModality: this.mapping.corpusModality?.[task] ?? 'image+text',
          description: `Split "${r.split}", ${r.modality} queries`,
        });
      }
      r.json.task = task;
      this.maps.queries.segments.push({ line: lines.length + 1, ...r.loc });
      lines.push(JSON.stringify(r.json));
    }
    this.queriesJsonl = enc.encode(lines.map((l) => l + '\n').join(''));
  }

  // ---- corpus (streamed) ------------------------------------------------------------------------

  private async *corpusLines(): AsyncGenerator<Uint8Array> {
    const c = this.mapping.corpus;
    const columns = [c.id, c.text, c.title, c.image, c.modality, ...c.meta].filter((x): x is string => !!x);
    const files = this.of('corpus');
    let line = 1;
    for (const f of files) {
      for (let g = 0; g < f.info.rowGroups.length; g++) {
        this.checkCancelled();
        this.status(`Reading corpus: ${f.info.path}, row group ${g + 1} of ${f.info.rowGroups.length}`);
        const group = await readGroup(f, g, columns);
        this.maps.corpus.segments.push({ line, file: f.info.path, rowGroup: g, row: f.groupStarts[g] });
        const out: string[] = [];
        group.forEach((r, i) => {
          const at = { file: f.info.path, rowGroup: g, row: f.groupStarts[g] + i };
          const id = this.idCell(at, r[c.id], c.id) ?? '';
          const { text, image } = this.parts(at, r, c);
          let title = '';
          if (c.title) title = asString(r[c.title]) ?? '';
          const json: Record<string, unknown> = { _id: id, title, text };
          if (image) json.image = this.stashImage('corpus', id, image, at, c.image!);
          for (const m of c.meta) {
            const v = metaValue(r[m]);
            if (v !== undefined && !RESERVED_DOC.has(m)) json[m] = v;
          }
          out.push(JSON.stringify(json) + '\n');
        });
        line += group.length;
        if (out.length) yield enc.encode(out.join(''));
      }
    }
  }

  private manifestBytes(): Uint8Array {
    // No name and no source label: the same files give the same content hash from a folder, a zip or a
    // URL (as a JSONL shard does); the name is set after reading.
    const { name: _name, ...mapping } = this.mapping;
    const m = {
      format: 'beir+images',
      description: `Parquet dataset (MIEB layout), ${this.of('corpus').length + this.of('query', this.mapping.splits).length + this.of('qrels', this.mapping.splits).length} files`,
      tasks: this.tasks.map((t) => ({
        id: t.id,
        query_modality: t.queryModality,
        corpus_modality: t.corpusModality,
        description: t.description,
      })),
      // Not read by the shard reader; here so the content hash covers the mapping and the file list.
      parquet: { mapping, files: this.inspection.files.map((f) => [f.path, f.rows]) },
    };
    return enc.encode(JSON.stringify(m, null, 1));
  }

  private virtualSource(): ShardSource {
    const once = (bytes: () => Uint8Array) =>
      (async function* () {
        yield bytes();
      })();
    return {
      label: this.source.label,
      // Unlisted, so the reader asks for each image by path (they are known only once rows are read).
      list: async () => null,
      size: async () => undefined,
      open: async (path) => {
        switch (path) {
          case VIRTUAL.manifest:
            return once(() => this.manifestBytes());
          case VIRTUAL.corpus:
            return this.corpusLines();
          case VIRTUAL.queries:
            return once(() => this.queriesJsonl);
          case VIRTUAL.qrels:
            return once(() => this.qrelsTsv);
          case 'NOTICE.md':
            // A hub dataset's card (license, citation) becomes the shard's notice.
            return (await this.source.list())?.includes('README.md') ? this.source.open('README.md') : null;
        }
        const img = this.imagePaths.has(path) ? await this.stash.take(path) : null;
        if (!img) return null;
        return once(() => img);
      },
    };
  }

  // ---- issues back to Parquet -------------------------------------------------------------------

  private wording(message: string): string {
    const name = (role: string, what: string) => {
      const fs = role === 'corpus' ? this.of('corpus') : this.of(role, this.mapping.splits);
      return fs.length === 1 ? `${what} (${fs[0].info.path})` : `${what} (${fs.length} Parquet files)`;
    };
    return message
      .replaceAll('corpus.jsonl', name('corpus', 'the corpus'))
      .replaceAll('queries.jsonl', name('query', 'the queries'))
      .replaceAll('qrels/test.tsv', name('qrels', 'the qrels'))
      .replaceAll('shard.json', 'the derived tasks');
  }

  private relocate(i: ShardIssue): ShardIssue {
    // Issues raised here (a corrupt row group…) already name their Parquet file.
    if (!Object.values(VIRTUAL).includes(i.file) && !this.imageLoc.has(i.file)) return i;
    const map =
      i.file === VIRTUAL.corpus
        ? this.maps.corpus
        : i.file === VIRTUAL.queries
          ? this.maps.queries
          : i.file === VIRTUAL.qrels
            ? this.maps.qrels
            : null;
    // "(first on line 12)" points into the same virtual file: say which row that is.
    const message = this.wording(i.message).replace(/first on line (\d+)/, (all, n: string) => {
      const first = map?.locate(Number(n));
      return first ? `first in ${first.file}, row group ${first.rowGroup}, row ${first.row}` : all;
    });
    if (map && i.line !== undefined) {
      const at = map.locate(i.line);
      if (at) return { file: at.file, rowGroup: at.rowGroup, row: at.row, code: i.code, message };
    }
    const img = this.imageLoc.get(i.file);
    if (img) {
      const head = /\(it starts with [^)]*\)/.exec(i.message)?.[0] ?? '';
      return {
        file: img.file,
        rowGroup: img.rowGroup,
        row: img.row,
        code: i.code,
        // The reader names the virtual image path and line; the row above says where it really is.
        message:
          i.code === 'not-an-image'
            ? `column "${img.column}" is not a JPEG, PNG, WebP or DICOM image ${head}`.trim()
            : `column "${img.column}" ${message.replace(/^\S+ \(referenced on .*?:\d+\) /, '')}`,
      };
    }
    const files =
      i.file === VIRTUAL.corpus
        ? this.of('corpus')
        : i.file === VIRTUAL.queries
          ? this.of('query', this.mapping.splits)
          : i.file === VIRTUAL.qrels
            ? this.of('qrels', this.mapping.splits)
            : [];
    return {
      file:
        files.length === 1
          ? files[0].info.path
          : i.file === VIRTUAL.manifest
            ? this.inspection.label
            : i.file,
      code: i.code,
      message,
    };
  }

  private relocateWarning(w: ShardWarning): ShardWarning {
    const r = this.relocate({ file: w.file, code: w.code ?? '', message: w.message });
    return { ...w, file: r.file, message: r.message };
  }

  /**
   * Corpus modality of each task: the parts its relevant documents carry (all images → image, all
   * text → text, otherwise image+text), unless the mapping overrides it.
   */
  private deriveCorpusModalities(parsed: ParsedShard): void {
    const docParts = new Map<string, Modality>();
    for (const d of parsed.docs)
      docParts.set(
        d.id,
        !d.image ? 'text' : d.text.trim() === '' && d.title.trim() === '' ? 'image' : 'image+text',
      );
    for (const t of parsed.manifest.tasks) {
      const fixed = this.mapping.corpusModality?.[t.id];
      if (fixed) {
        t.corpusModality = fixed;
        continue;
      }
      const seen = new Set<Modality>();
      for (const q of parsed.queries) {
        if (q.task !== t.id) continue;
        for (const [d, grade] of parsed.qrels.get(q.id) ?? []) {
          const m = grade > 0 ? docParts.get(d) : undefined;
          if (m) seen.add(m);
        }
      }
      t.corpusModality = seen.size === 1 ? [...seen][0] : seen.size === 0 ? 'text' : 'image+text';
    }
  }
}
