// Precomputed corpus embeddings made elsewhere, as a Parquet column (the HF datasets layout: one row
// per document, an id column and a list<float32>, list<float16> or fixed_size_list column). A set is
// an entry of `embeddings/index.json` with a `parquet` file instead of an npy `path`:
//
//   {"model_id": "…", "dtype": "fp32", "parquet": "embeddings/medcpt.parquet", "id_column": "_id",
//    "column": "embedding", "dim": 768, "normalized": true, "query_prefix": "", "doc_prefix": "",
//    "part": "text"}
//
// Pure: the entry is parsed and the rows are checked here (count, ids, dimension, finite values,
// norms) and become the same PrecomputedSet the npy layout gives (float16 bits in shard order).
// Every problem names the file, the 0-based row of the file and the document id. Reading the file
// (hyparquet) is in core/media/parquet/embeddings.ts.
import type { ShardIssue, ShardSource } from './source';
import { PRECOMPUTED_FORMAT, PRECOMPUTED_INDEX, readAll, type PrecomputedSet } from './precomputed';
import { f32ToF16 } from './vector-files';

/** A Parquet set of embeddings/index.json. */
export interface ParquetEmbeddingEntry {
  model_id: string;
  /** The Loupe dtype of the query encoder the vectors pair with (default `fp32`). */
  dtype: string;
  /** Shard-relative path of the Parquet file, e.g. `embeddings/medcpt.parquet`. */
  parquet: string;
  id_column: string;
  column: string;
  dim: number;
  /** Whether the rows are L2-normalised (checked: |‖v‖ − 1| ≤ NORM_TOLERANCE). */
  normalized: boolean;
  query_prefix: string;
  doc_prefix: string;
  part: 'text' | 'image';
  /** Optional provenance; when given, the loaded model must match them too. */
  revision?: string;
  pooling?: string;
  max_tokens?: number;
}

/** NORM_TOLERANCE: largest |‖v‖ − 1| accepted for a row of a set claimed normalised. */
export const NORM_TOLERANCE = 2e-3;
/** MAX_EMBEDDING_ISSUES: problems reported per file before the rest are counted only. */
export const MAX_EMBEDDING_ISSUES = 20;

/** Whether an index.json set is a Parquet one (it names a `parquet` file). */
export function isParquetEntry(set: unknown): boolean {
  return !!set && typeof set === 'object' && 'parquet' in set;
}

/**
 * Whether the shard's embeddings/index.json lists a Parquet set (so that hyparquet is loaded only then).
 * `declared`: shard.json names embeddings/index.json; a source that cannot list its files (a URL) is
 * asked for it only then, as readPrecomputed does.
 */
export async function hasParquetSets(source: ShardSource, declared = false): Promise<boolean> {
  if (!declared && source.remote) return false;
  const bytes = await readAll(source, PRECOMPUTED_INDEX);
  if (!bytes) return false;
  try {
    const sets = (JSON.parse(new TextDecoder().decode(bytes)) as { sets?: unknown } | null)?.sets;
    return Array.isArray(sets) && sets.some(isParquetEntry);
  } catch {
    return false;
  }
}

function safeFile(p: string): boolean {
  return (
    p.toLowerCase().endsWith('.parquet') &&
    !p.startsWith('/') &&
    p.split('/').every((s) => s && s !== '.' && s !== '..')
  );
}

/**
 * The Parquet sets of a parsed embeddings/index.json, checked field by field. Returns issues (naming
 * index.json and the set) instead of throwing; an index.json without sets yields none (the npy
 * reader reports that).
 */
export function parseParquetEntries(
  json: unknown,
  file: string,
): { entries: ParquetEmbeddingEntry[]; issues: ShardIssue[] } {
  const sets = (json as { format?: unknown; sets?: unknown } | null)?.sets;
  if ((json as { format?: unknown } | null)?.format !== PRECOMPUTED_FORMAT || !Array.isArray(sets))
    return { entries: [], issues: [] };
  const entries: ParquetEmbeddingEntry[] = [];
  const issues: ShardIssue[] = [];
  sets.forEach((s: unknown, i) => {
    if (!isParquetEntry(s)) return;
    const o = s as Record<string, unknown>;
    const problems: string[] = [];
    for (const f of ['model_id', 'parquet', 'id_column', 'column'] as const)
      if (typeof o[f] !== 'string' || o[f] === '') problems.push(`'${f}' must be a non-empty string`);
    for (const f of ['query_prefix', 'doc_prefix'] as const)
      if (o[f] !== undefined && typeof o[f] !== 'string') problems.push(`'${f}' must be a string`);
    for (const f of ['dtype', 'revision', 'pooling'] as const)
      if (o[f] !== undefined && (typeof o[f] !== 'string' || o[f] === ''))
        problems.push(`'${f}' must be a non-empty string when given`);
    if (!Number.isInteger(o.dim) || (o.dim as number) <= 0) problems.push(`'dim' must be a positive integer`);
    if (typeof o.normalized !== 'boolean') problems.push(`'normalized' must be true or false`);
    if (o.part !== undefined && o.part !== 'text' && o.part !== 'image')
      problems.push(`'part' must be "text" or "image"`);
    if (o.max_tokens !== undefined && !(Number.isInteger(o.max_tokens) && (o.max_tokens as number) > 0))
      problems.push(`'max_tokens' must be a positive integer`);
    if (typeof o.parquet === 'string' && o.parquet && !safeFile(o.parquet))
      problems.push(`'parquet' ${JSON.stringify(o.parquet)} must be a relative path to a .parquet file`);
    if (problems.length) {
      issues.push({ file, code: 'embedding-entry', message: `sets[${i}]: ${problems.join('; ')}` });
      return;
    }
    entries.push({
      model_id: o.model_id as string,
      dtype: (o.dtype as string | undefined) ?? 'fp32',
      parquet: o.parquet as string,
      id_column: o.id_column as string,
      column: o.column as string,
      dim: o.dim as number,
      normalized: o.normalized as boolean,
      query_prefix: (o.query_prefix as string | undefined) ?? '',
      doc_prefix: (o.doc_prefix as string | undefined) ?? '',
      part: (o.part as 'text' | 'image' | undefined) ?? 'text',
      ...(o.revision !== undefined ? { revision: o.revision as string } : {}),
      ...(o.pooling !== undefined ? { pooling: o.pooling as string } : {}),
      ...(o.max_tokens !== undefined ? { max_tokens: o.max_tokens as number } : {}),
    });
  });
  return { entries, issues };
}

/** A cell of the id column as a document id (strings, and integers as HF datasets often have). */
function idOf(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number' && Number.isInteger(v)) return String(v);
  return null;
}

/**
 * Incremental checker of a set's rows, fed in file order (row group by row group; several files, e.g.
 * the corpus files of a Parquet dataset, one after the other with startFile). A document without the
 * part may have a row with a null embedding (a column of the corpus files has one for every document).
 */
export class EmbeddingRows {
  readonly issues: ShardIssue[] = [];
  /** Problems found beyond MAX_EMBEDDING_ISSUES (counted, not listed). */
  more = 0;
  private row = 0;
  private total = 0;
  private file: string;
  private readonly files: string[] = [];
  private readonly fileOf: Int32Array;
  private readonly slot = new Map<string, number>();
  private readonly rowOf: Int32Array;
  private readonly f16: Uint16Array;

  private readonly docIds: string[];
  private readonly without: string[];
  private readonly allIds: Set<string>;

  /** `docs`: the shard's documents in shard order, and whether each has the entry's part. */
  constructor(
    private readonly entry: ParquetEmbeddingEntry,
    docs: readonly { id: string; has: boolean }[],
  ) {
    this.docIds = docs.filter((d) => d.has).map((d) => d.id);
    this.without = docs.filter((d) => !d.has).map((d) => d.id);
    this.allIds = new Set(docs.map((d) => d.id));
    const docIds = this.docIds;
    docIds.forEach((id, i) => this.slot.set(id, i));
    this.rowOf = new Int32Array(docIds.length).fill(-1);
    this.fileOf = new Int32Array(docIds.length);
    this.file = entry.parquet;
    this.files.push(entry.parquet);
    this.f16 = new Uint16Array(docIds.length * entry.dim);
  }

  private problem(row: number | undefined, code: string, message: string) {
    if (this.issues.length >= MAX_EMBEDDING_ISSUES) {
      this.more++;
      return;
    }
    this.issues.push({ file: this.file, ...(row !== undefined ? { row } : {}), code, message });
  }

  /** Rows that follow are those of `path`, counted from 0. */
  startFile(path: string): void {
    if (this.total > 0 || path !== this.file) this.files.push(path);
    this.file = path;
    this.row = 0;
  }

  /** Checks the next row of the file: its id cell and its vector cell. */
  add(idCell: unknown, vector: unknown): void {
    const row = this.row++;
    this.total++;
    const { dim, normalized, part } = this.entry;
    const at = `row ${row} (0-based)`;
    const id = idOf(idCell);
    if (id === null) {
      this.problem(
        row,
        'embedding-bad-id',
        `${at}: the id column holds ${JSON.stringify(idCell) ?? String(idCell)}, not a document id`,
      );
      return;
    }
    const doc = `${at}, document ${JSON.stringify(id)}`;
    const slot = this.slot.get(id);
    if (slot === undefined) {
      if (this.allIds.has(id) && (vector === null || vector === undefined)) return;
      this.problem(
        row,
        'embedding-unknown-id',
        this.allIds.has(id)
          ? `${doc}: that document has no ${part}, so it cannot have a ${part} embedding`
          : `${doc}: no document of the corpus has that id`,
      );
      return;
    }
    if (this.rowOf[slot] >= 0) {
      this.problem(
        row,
        'embedding-duplicate-id',
        `${doc}: a second row for that document (the first is row ${this.rowOf[slot]}${this.files[this.fileOf[slot]] !== this.file ? ` of ${this.files[this.fileOf[slot]]}` : ''})`,
      );
      return;
    }
    this.rowOf[slot] = row;
    this.fileOf[slot] = this.files.length - 1;
    if (vector === null || vector === undefined) {
      this.problem(row, 'embedding-null', `${doc}: the embedding is null`);
      return;
    }
    const v = vector as ArrayLike<unknown>;
    if (typeof v !== 'object' || typeof v.length !== 'number') {
      this.problem(row, 'embedding-not-list', `${doc}: the embedding is not a list of numbers`);
      return;
    }
    if (v.length !== dim) {
      this.problem(row, 'embedding-dimension', `${doc}: ${v.length} values, the set's dimension is ${dim}`);
      return;
    }
    let sum = 0;
    for (let j = 0; j < dim; j++) {
      const x = v[j];
      if (typeof x !== 'number' || !Number.isFinite(x)) {
        this.problem(row, 'embedding-not-finite', `${doc}: value ${j} (0-based) is ${String(x)}`);
        return;
      }
      sum += x * x;
    }
    const norm = Math.sqrt(sum);
    if (normalized && Math.abs(norm - 1) > NORM_TOLERANCE) {
      this.problem(
        row,
        'embedding-norm',
        `${doc}: norm ${norm.toPrecision(6)}, but the set says its rows are normalised (|norm − 1| ≤ ${NORM_TOLERANCE})`,
      );
      return;
    }
    const out = this.f16;
    for (let j = 0; j < dim; j++) out[slot * dim + j] = f32ToF16(v[j] as number);
  }

  /** Rows fed so far (all files). */
  get rows(): number {
    return this.total;
  }

  /** Ends the check: the missing documents are problems; with none at all, the set. */
  finish(): { set: PrecomputedSet | null; issues: ShardIssue[] } {
    const e = this.entry;
    this.file = e.parquet;
    const missing = this.docIds.filter((_, i) => this.rowOf[i] < 0);
    if (missing.length)
      this.problem(
        undefined,
        'embedding-missing-id',
        `${this.total} rows, ${this.docIds.length} documents have ${e.part}; no row for ${missing.length} of them: ${missing
          .slice(0, 5)
          .map((id) => JSON.stringify(id))
          .join(', ')}${missing.length > 5 ? ', …' : ''}`,
      );
    if (this.more)
      this.issues.push({
        file: this.file,
        code: 'embedding-more',
        message: `${this.more} more problems not listed`,
      });
    if (this.issues.length) return { set: null, issues: this.issues };
    const file = e.parquet.split('/').pop()!;
    return {
      set: {
        sidecar: {
          format: PRECOMPUTED_FORMAT,
          origin: e.parquet,
          model_id: e.model_id,
          hub_id: e.model_id,
          revision: e.revision ?? '',
          dtype: e.dtype,
          pooling: e.pooling ?? '',
          normalize: e.normalized,
          dim: e.dim,
          doc_ids: [...this.docIds],
          part: e.part,
          query_prefix: e.query_prefix,
          doc_prefix: e.doc_prefix,
          ...(e.max_tokens !== undefined ? { max_tokens: e.max_tokens } : {}),
          vectors: file,
          missing: [...this.without],
        },
        f16: this.f16,
      },
      issues: [],
    };
  }
}
