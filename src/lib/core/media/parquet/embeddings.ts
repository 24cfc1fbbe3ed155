// Reads the Parquet sets of a shard's embeddings/index.json (see core/shard/precomputed-parquet.ts)
// and the embedding column that a Parquet dataset's mapping names in its corpus files: opens each
// file (range reads where the source has them), checks that the id column exists and the embedding
// column is a list of floats, and feeds its rows, row group by row group, to the row checker. Any
// problem fails the whole import (ShardValidationError): a set the shard names for a model is either
// taken whole or nothing of the shard is stored.
import {
  parquetMetadataAsync,
  parquetReadObjects,
  parquetSchema,
  type FileMetaData,
  type SchemaTree,
} from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { ShardValidationError, type ShardIssue, type ShardSource } from '../../shard/source';
import { PRECOMPUTED_INDEX, docHasPart, readAll, type PrecomputedSet } from '../../shard/precomputed';
import {
  EmbeddingRows,
  parseParquetEntries,
  type ParquetEmbeddingEntry,
} from '../../shard/precomputed-parquet';
import { openParquet } from './parquet-files';
import type { CorpusEmbeddingColumn } from './mapping';

/** What a column holds, for the message when it is not a list of floats: `BYTE_ARRAY (UTF8)`, `a list of INT64`. */
function describe(node: SchemaTree): string {
  const e = node.element;
  if (node.children.length === 0) {
    const annot = e.logical_type?.type ?? e.converted_type;
    return `${e.type}${annot ? ` (${annot})` : ''}`;
  }
  if (e.converted_type === 'LIST' || e.logical_type?.type === 'LIST') {
    let leaf = node;
    while (leaf.children.length === 1) leaf = leaf.children[0];
    if (leaf.children.length === 0 && leaf !== node) return `a list of ${describe(leaf)}`;
  }
  return 'a group of columns';
}

/** Whether a column is a list (LIST, or an Arrow fixed_size_list, written as LIST) of FLOAT, DOUBLE or FLOAT16. */
function isFloatList(node: SchemaTree): boolean {
  const e = node.element;
  if (e.converted_type !== 'LIST' && e.logical_type?.type !== 'LIST') return false;
  let leaf = node;
  while (leaf.children.length === 1) leaf = leaf.children[0];
  if (leaf.children.length !== 0 || leaf === node) return false;
  const t = leaf.element;
  return t.type === 'FLOAT' || t.type === 'DOUBLE' || t.logical_type?.type === 'FLOAT16';
}

type Docs = readonly { id: string; title?: string; text?: string; image?: string }[];

/**
 * Feeds the rows of one Parquet file (its `idColumn` and `column`, row group by row group) to the
 * checker, after checking that both columns exist and `column` is a list of floats.
 */
async function feedFile(
  source: ShardSource,
  file: string,
  idColumn: string,
  column: string,
  named: string,
  rows: EmbeddingRows,
): Promise<void> {
  const buffer = await openParquet(source, file); // a missing file is an issue already
  let metadata: FileMetaData;
  try {
    metadata = await parquetMetadataAsync(buffer);
  } catch (e) {
    throw new ShardValidationError([
      { file, code: 'parquet-invalid', message: `not a readable Parquet file: ${(e as Error).message}` },
    ]);
  }
  const columns = parquetSchema(metadata).children;
  const names = columns.map((c) => c.element.name);
  const issues: ShardIssue[] = [];
  for (const [what, name] of [
    ['id_column', idColumn],
    ['column', column],
  ] as const)
    if (!names.includes(name))
      issues.push({
        file,
        code: 'embedding-column',
        message: `no column ${JSON.stringify(name)} (named by ${what} in ${named}); the file has ${names.map((n) => JSON.stringify(n)).join(', ')}`,
      });
  const col = columns.find((c) => c.element.name === column);
  if (col && !isFloatList(col))
    issues.push({
      file,
      code: 'embedding-column',
      message: `column ${JSON.stringify(column)} is ${describe(col)}, not a list of float32, float16 or float64 values`,
    });
  if (issues.length) throw new ShardValidationError(issues);

  rows.startFile(file);
  let start = 0;
  for (let g = 0; g < metadata.row_groups.length; g++) {
    const n = Number(metadata.row_groups[g].num_rows);
    let objects: Record<string, unknown>[];
    try {
      objects = await parquetReadObjects({
        file: buffer,
        metadata,
        rowStart: start,
        rowEnd: start + n,
        columns: [idColumn, column],
        compressors,
      });
    } catch (e) {
      throw new ShardValidationError([
        {
          file,
          rowGroup: g,
          code: 'parquet-corrupt',
          message: `row group ${g} cannot be decoded: ${(e as Error).message}`,
        },
      ]);
    }
    for (const o of objects) rows.add(o[idColumn], o[column]);
    start += n;
  }
}

async function readEntry(
  source: ShardSource,
  entry: ParquetEmbeddingEntry,
  docs: Docs,
): Promise<PrecomputedSet> {
  const rows = new EmbeddingRows(
    entry,
    docs.map((d) => ({ id: d.id, has: docHasPart(d, entry.part) })),
  );
  await feedFile(source, entry.parquet, entry.id_column, entry.column, PRECOMPUTED_INDEX, rows);
  const { set, issues } = rows.finish();
  if (!set) throw new ShardValidationError(issues);
  return set;
}

/**
 * The set held in an embedding column of a Parquet dataset's corpus files (`corpusFiles`, in the
 * order the corpus was read; `idColumn` the corpus id column), checked like an index.json set.
 * Throws ShardValidationError naming the file, the row and the document of every problem.
 */
export async function readEmbeddingColumn(
  source: ShardSource,
  corpusFiles: string[],
  idColumn: string,
  e: CorpusEmbeddingColumn,
  docs: Docs,
): Promise<PrecomputedSet> {
  // Problems that are not one file's (documents without a row) name the corpus folder.
  const dirs = new Set(corpusFiles.map((f) => f.slice(0, f.lastIndexOf('/') + 1)));
  const label =
    corpusFiles.length === 1 ? corpusFiles[0] : dirs.size === 1 ? [...dirs][0] || 'corpus' : 'corpus';
  const entry: ParquetEmbeddingEntry = {
    model_id: e.model_id,
    dtype: e.dtype,
    parquet: label,
    id_column: idColumn,
    column: e.column,
    dim: e.dim,
    normalized: e.normalized,
    query_prefix: e.query_prefix,
    doc_prefix: e.doc_prefix,
    part: e.part,
  };
  const rows = new EmbeddingRows(
    entry,
    docs.map((d) => ({ id: d.id, has: docHasPart(d, e.part) })),
  );
  for (const f of corpusFiles) await feedFile(source, f, idColumn, e.column, 'the column mapping', rows);
  const { set, issues } = rows.finish();
  if (!set) throw new ShardValidationError(issues);
  return set;
}

/**
 * The Parquet embedding sets of a shard, read and checked against its documents; none when the shard
 * has no embeddings/index.json, or one the npy reader (readPrecomputed) reports as unreadable.
 * Throws ShardValidationError naming the file, the row and the document of every problem.
 */
export async function readParquetEmbeddings(
  source: ShardSource,
  docs: readonly { id: string; title?: string; text?: string; image?: string }[],
): Promise<PrecomputedSet[]> {
  const bytes = await readAll(source, PRECOMPUTED_INDEX);
  if (!bytes) return [];
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return [];
  }
  const { entries, issues } = parseParquetEntries(json, PRECOMPUTED_INDEX);
  if (issues.length) throw new ShardValidationError(issues);
  const sets: PrecomputedSet[] = [];
  for (const entry of entries) sets.push(await readEntry(source, entry, docs));
  return sets;
}
