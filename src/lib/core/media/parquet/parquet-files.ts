// The Parquet files of a dataset opened for reading: random access when the source has it (else the
// whole file), the footer, each top-level column's kind from the schema, row-group offsets, and one row
// group read as objects. hyparquet's failures become issues that name the file and row group.

import {
  parquetMetadataAsync,
  parquetReadObjects,
  parquetSchema,
  type AsyncBuffer,
  type FileMetaData,
  type SchemaTree,
} from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { ShardValidationError, type ShardIssue, type ShardSource } from '../../shard/source';
import {
  classifyParquetPath,
  normaliseQuerySplits,
  parseModality,
  type ParquetColumnInfo,
  type ParquetColumnKind,
  type ParquetFileInfo,
} from './mapping';

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

/** A random-access buffer of `path` (its whole bytes when the source has no random access). */
export async function openParquet(source: ShardSource, path: string): Promise<AsyncBuffer> {
  const r = source.openRandom ? await source.openRandom(path) : null;
  if (r) return r;
  const stream = await source.open(path);
  if (!stream)
    throw new ShardValidationError([
      { file: path, code: 'missing-file', message: `${path} is missing from ${source.label}` },
    ]);
  return wholeFile(stream);
}

/** A column's kind from its schema node: text, binary, number, boolean, an HF image struct, a string list. */
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
    const t = leaf.element;
    if (
      leaf !== node &&
      leaf.children.length === 0 &&
      (t.type === 'FLOAT' || t.type === 'DOUBLE' || t.logical_type?.type === 'FLOAT16')
    )
      return 'float-list';
  }
  return 'other';
}

/** A column's Parquet type for messages: `INT64`, `BYTE_ARRAY STRING`, `LIST`, `struct`. */
function typeName(node: SchemaTree): string {
  const e = node.element;
  const note = e.logical_type?.type ?? e.converted_type;
  if (node.children.length > 0) return note ?? 'struct';
  return note ? `${e.type} ${note}` : `${e.type}`;
}

/** One opened Parquet file: what the mapping sees of it, its bytes and footer. */
export interface OpenFile {
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

/** Opens every file and reads its footer; all unreadable files are reported together. Assigns roles. */
export async function openAll(source: ShardSource, paths: string[]): Promise<OpenFile[]> {
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
      type: typeName(c),
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

/** Rows of row group `g` of `f` (only `columns`), as objects; a decoding failure is an issue. */
export async function readGroup(
  f: OpenFile,
  g: number,
  columns: string[],
): Promise<Record<string, unknown>[]> {
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
export async function modalityColumn(files: OpenFile[]): Promise<string | undefined> {
  const f = files[0];
  const col = f?.info.columns.find((c) => c.name.toLowerCase() === 'modality' && c.kind === 'string');
  if (!col || f.info.rowGroups.length === 0) return undefined;
  const rows = await readGroup(f, 0, [col.name]);
  const values = rows.map((r) => r[col.name]).filter((v) => v != null);
  return values.length > 0 && values.every((v) => typeof v === 'string' && parseModality(v) !== null)
    ? col.name
    : undefined;
}
