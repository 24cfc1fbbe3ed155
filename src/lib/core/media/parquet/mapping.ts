// Which Parquet file plays which part (corpus, queries, qrels) and which column holds what. Pure: it
// works on paths and on column summaries that read-parquet.ts takes from the files' footers.
import type { ShardIssue } from '../../shard/source';
import type { Modality } from '../../types';

/** The part of a retrieval dataset a Parquet file holds (MIEB's configurations). */
export type ParquetRole = 'corpus' | 'query' | 'qrels';

/** What a column holds, as far as its Parquet schema tells. */
export type ParquetColumnKind =
  | 'string'
  | 'binary'
  | 'number'
  | 'boolean'
  /** Hugging Face's Image feature: a struct of `bytes` (binary) and `path` (string). */
  | 'image'
  | 'string-list'
  /** A list of FLOAT, DOUBLE or FLOAT16 values (an embedding column). */
  | 'float-list'
  | 'other';

/** One top-level column of a Parquet file. */
export interface ParquetColumnInfo {
  name: string;
  kind: ParquetColumnKind;
  /** The Parquet type as its schema says it (`INT64`, `BYTE_ARRAY STRING`, `LIST`), for messages. */
  type?: string;
}

/** A Parquet file of the dataset, with the role and split read from its path and its footer. */
export interface ParquetFileInfo {
  /** Path inside the source (`corpus/test-00000-of-00001.parquet`). */
  path: string;
  /** null: a Parquet file that is not part of a retrieval layout (ignored). */
  role: ParquetRole | null;
  /** The configuration (first folder) the path names: `corpus`, `query`, `default`… */
  config: string;
  /** The split the path names (`test`); `test` when the path names none. */
  split: string;
  rows: number;
  /** Rows per row group, in order. */
  rowGroups: number[];
  columns: ParquetColumnInfo[];
}

/** Columns of the corpus files. */
export interface CorpusColumns {
  id: string;
  text?: string;
  title?: string;
  image?: string;
  /** MIEB's per-row modality (`text`, `image`, `image,text`): parts it does not name are dropped. */
  modality?: string;
  /** Columns kept as metadata (facets in the reports). */
  meta: string[];
}

/** Columns of the query files. */
export interface QueryColumns {
  id: string;
  text?: string;
  image?: string;
  modality?: string;
  /** A list-of-strings column of corpus ids removed from the query's ranking. */
  excludeIds?: string;
  meta: string[];
}

/** Columns of the qrels files. */
export interface QrelsColumns {
  queryId: string;
  corpusId: string;
  /** Integer grade; without it every row counts as relevant (grade 1). */
  score?: string;
}

/**
 * Corpus embeddings made elsewhere, in a column of the corpus files: the column and what made it
 * (checked like an embeddings/index.json Parquet set, core/shard/precomputed-parquet.ts).
 */
export interface CorpusEmbeddingColumn {
  column: string;
  /** Loupe's id of the query encoder. */
  model_id: string;
  /** The precision the query encoder is loaded at (`fp32`…). */
  dtype: string;
  dim: number;
  normalized: boolean;
  query_prefix: string;
  doc_prefix: string;
  /** Which part of each document was embedded. */
  part: 'text' | 'image';
}

/**
 * How a Parquet dataset becomes a shard: detected by {@link detectParquetMapping}, shown to the user,
 * editable, remembered per dataset. Plain JSON (structured-clones into the worker, stores as JSON).
 */
export interface ParquetMapping {
  version: 1;
  /** Shard name shown in the UI. */
  name: string;
  corpus: CorpusColumns;
  query: QueryColumns;
  qrels: QrelsColumns;
  /** Query/qrels splits imported (MIEB's evaluation splits); queries of other splits are skipped. */
  splits: string[];
  /** Per derived task id, the part of the documents to rank by, overriding the derived one. */
  corpusModality?: Record<string, Modality>;
  /** A corpus column of precomputed embeddings (not part of the content hash). */
  embedding?: CorpusEmbeddingColumn;
}

/** PARQUET_MAPPING_VERSION: bump when ParquetMapping changes shape (remembered mappings are dropped). */
export const PARQUET_MAPPING_VERSION = 1;

const ROLE_OF_CONFIG: Record<string, ParquetRole> = {
  corpus: 'corpus',
  corpora: 'corpus',
  docs: 'corpus',
  documents: 'corpus',
  query: 'query',
  queries: 'query',
  qrels: 'qrels',
  // MTEB's text retrieval datasets keep their qrels in the default configuration.
  default: 'qrels',
  data: 'qrels',
};

/** Candidate column names, most specific first (compared case-insensitively). */
const NAMES = {
  corpusId: ['_id', 'id', 'corpus-id', 'corpus_id', 'doc_id', 'docid', 'doc-id', 'document_id', 'pid'],
  queryId: ['_id', 'id', 'query-id', 'query_id', 'qid', 'query-id'],
  text: ['text', 'contents', 'content', 'passage', 'body', 'caption', 'sentence'],
  queryText: ['text', 'query', 'question', 'caption', 'contents', 'content', 'sentence'],
  title: ['title', 'name', 'headline'],
  image: ['image', 'img', 'picture', 'photo'],
  modality: ['modality'],
  excludeIds: ['exclude_ids', 'exclude-ids', 'excluded_ids'],
  qrelQuery: ['query-id', 'query_id', 'qid', 'queryid', 'q_id'],
  qrelCorpus: ['corpus-id', 'corpus_id', 'doc_id', 'docid', 'doc-id', 'pid', 'p_id', 'document_id'],
  score: ['score', 'relevance', 'label', 'grade', 'rel'],
};

/** Splits named in hub file names (`test-00000-of-00001.parquet`, `refs/convert/parquet`'s `partial-test`). */
function cleanSplit(s: string): string {
  return s.replace(/^partial-/, '').replace(/-\d{5}-of-\d{5}$/, '') || 'test';
}

/**
 * Role, configuration and split of a Parquet path, from the layouts MIEB and the hub use:
 * `<config>/<split>-00000-of-00001.parquet`, `<config>/<split>/0000.parquet` (refs/convert/parquet),
 * `<config>/<split>.parquet`, `<config>/*.parquet`, `data/<split>-….parquet` and flat
 * `corpus.parquet` / `queries.parquet` / `qrels[-<split>].parquet`.
 */
export function classifyParquetPath(path: string): {
  role: ParquetRole | null;
  config: string;
  split: string;
} {
  const segs = path.replace(/^.*refs\/convert\/parquet\//, '').split('/');
  const stem = segs[segs.length - 1].replace(/\.parquet$/i, '');
  const dirs = segs.slice(0, -1);
  let config: string;
  let split: string;
  if (dirs.length === 0) {
    // Flat files: `corpus.parquet`, `qrels-test.parquet`, `queries_dev.parquet`.
    const m = /^([A-Za-z]+)(?:[-_.](.+))?$/.exec(stem);
    config = (m?.[1] ?? stem).toLowerCase();
    split = cleanSplit(m?.[2] ?? 'test');
  } else if (dirs.length >= 2 && /^\d+$/.test(stem)) {
    // refs/convert/parquet: `<config>/<split>/0000.parquet`.
    config = dirs[dirs.length - 2].toLowerCase();
    split = cleanSplit(dirs[dirs.length - 1]);
  } else {
    config = dirs[dirs.length - 1].toLowerCase();
    split = /^\d+$/.test(stem) ? 'test' : cleanSplit(stem);
  }
  return { role: ROLE_OF_CONFIG[config] ?? null, config, split };
}

/** ANY_SPLIT: the split of query files that serve every qrels split (MTEB's `queries/queries-….parquet`). */
export const ANY_SPLIT = '*';

/**
 * When all query files share one split the qrels do not have (MTEB text datasets name it `queries`),
 * those queries serve every qrels split: their split becomes {@link ANY_SPLIT}. Edits `files` in place.
 */
export function normaliseQuerySplits(files: ParquetFileInfo[]): void {
  const queries = files.filter((f) => f.role === 'query');
  const qrelsSplits = new Set(files.filter((f) => f.role === 'qrels').map((f) => f.split));
  const splits = new Set(queries.map((f) => f.split));
  if (splits.size === 1 && !qrelsSplits.has([...splits][0])) for (const f of queries) f.split = ANY_SPLIT;
}

/** Whether a file belongs to one of `splits` (a query file of ANY_SPLIT belongs to all). */
export function inSplits(f: ParquetFileInfo, splits: string[]): boolean {
  return f.split === ANY_SPLIT || splits.includes(f.split);
}

/**
 * The first column named like a role, whatever its type: a `text` column of integers is mapped as the
 * text so that checkParquetMapping refuses it by name, instead of the text silently becoming metadata.
 */
function find(columns: ParquetColumnInfo[], names: string[]): string | undefined {
  for (const n of names) {
    const c = columns.find((c) => c.name.toLowerCase() === n);
    if (c) return c.name;
  }
  return undefined;
}

/**
 * Columns of any file of a role, in first-seen order. A column only some files have is still mapped,
 * so that checkParquetMapping names the files lacking it instead of the import silently dropping it.
 */
function unionColumns(files: ParquetFileInfo[]): ParquetColumnInfo[] {
  const out = new Map<string, ParquetColumnInfo>();
  for (const f of files) for (const c of f.columns) if (!out.has(c.name)) out.set(c.name, c);
  return [...out.values()];
}

const TEXTUAL: ParquetColumnKind[] = ['string', 'binary'];
const ID_KINDS: ParquetColumnKind[] = ['string', 'number', 'binary'];
const META_KINDS: ParquetColumnKind[] = ['string', 'number', 'boolean', 'string-list'];

/**
 * Detects the column mapping of a Parquet dataset from its files' schemas. `modalityColumns` lists
 * the files' `modality` columns whose sampled values are MIEB modalities (read-parquet.ts samples them);
 * a `modality` column holding anything else (say x-ray / ct) stays metadata.
 */
export function detectParquetMapping(
  files: ParquetFileInfo[],
  opts: { name: string; modalityColumns?: { corpus?: string; query?: string } },
): ParquetMapping {
  const of = (role: ParquetRole) => unionColumns(files.filter((f) => f.role === role));
  const corpusCols = of('corpus');
  const queryCols = of('query');
  const qrelsCols = of('qrels');

  const corpus: CorpusColumns = {
    id: find(corpusCols, NAMES.corpusId) ?? '',
    text: find(corpusCols, NAMES.text),
    title: find(corpusCols, NAMES.title),
    image: find(corpusCols, NAMES.image) ?? corpusCols.find((c) => c.kind === 'image')?.name,
    modality: opts.modalityColumns?.corpus,
    meta: [],
  };
  const query: QueryColumns = {
    id: find(queryCols, NAMES.queryId) ?? '',
    text: find(queryCols, NAMES.queryText),
    image: find(queryCols, NAMES.image) ?? queryCols.find((c) => c.kind === 'image')?.name,
    modality: opts.modalityColumns?.query,
    excludeIds: find(queryCols, NAMES.excludeIds),
    meta: [],
  };
  const used = (o: object) => new Set(Object.values(o).filter((v): v is string => typeof v === 'string'));
  const corpusUsed = used(corpus);
  corpus.meta = corpusCols
    .filter((c) => META_KINDS.includes(c.kind) && !corpusUsed.has(c.name))
    .map((c) => c.name);
  const queryUsed = used(query);
  query.meta = queryCols
    .filter((c) => META_KINDS.includes(c.kind) && !queryUsed.has(c.name))
    .map((c) => c.name);

  const qrels: QrelsColumns = {
    queryId: find(qrelsCols, NAMES.qrelQuery) ?? '',
    corpusId: find(qrelsCols, NAMES.qrelCorpus) ?? '',
    score: find(qrelsCols, NAMES.score),
  };

  const querySplits = new Set(files.filter((f) => f.role === 'query').map((f) => f.split));
  const both = [...new Set(files.filter((f) => f.role === 'qrels').map((f) => f.split))]
    .filter((s) => querySplits.has(s) || querySplits.has(ANY_SPLIT))
    .sort();
  // MIEB evaluates on its test split; other splits (train, dev) are opt-in.
  const splits = both.includes('test') ? ['test'] : both;
  return { version: 1, name: opts.name, corpus, query, qrels, splits };
}

/**
 * Every way `mapping` does not fit `files`: a mapped column missing from a file (`missing-column`), a
 * column of the wrong kind (`wrong-type`), a role without files or a required column left unmapped.
 */
export function checkParquetMapping(files: ParquetFileInfo[], mapping: ParquetMapping): ShardIssue[] {
  const issues: ShardIssue[] = [];
  const roleFiles = (role: ParquetRole, splits?: string[]) =>
    files.filter((f) => f.role === role && (!splits || inSplits(f, splits)));
  const parts: { role: ParquetRole; label: string; files: ParquetFileInfo[] }[] = [
    { role: 'corpus', label: 'corpus', files: roleFiles('corpus') },
    { role: 'query', label: 'query', files: roleFiles('query', mapping.splits) },
    { role: 'qrels', label: 'qrels', files: roleFiles('qrels', mapping.splits) },
  ];
  // No split chosen (no split has both query and qrels files): detection looked for MIEB's test split.
  const looked = mapping.splits.length > 0 ? mapping.splits : ['test'];
  const splitList = (xs: string[]) => `split${xs.length === 1 ? '' : 's'} ${xs.join(', ')}`;
  for (const p of parts) {
    if (p.files.length === 0) {
      const found = [...new Set(files.filter((f) => f.role === p.role).map((f) => f.split))]
        .filter((s) => s !== ANY_SPLIT)
        .sort();
      const where = p.role === 'corpus' ? '' : ` for ${splitList(looked)}`;
      const others = found.length ? `; there are ${p.label} files for ${splitList(found)}` : '';
      issues.push({
        file: `${p.role}/`,
        code: 'missing-file',
        message: `no ${p.label} Parquet files${where} (expected ${p.role}/*.parquet or ${p.role}/<split>/*.parquet${others})`,
      });
    }
  }
  const want = (
    role: ParquetRole,
    what: string,
    column: string | undefined,
    kinds: ParquetColumnKind[],
    required: boolean,
  ) => {
    const fs = parts.find((p) => p.role === role)!.files;
    if (!column) {
      if (required && fs.length > 0)
        issues.push({
          file: fs[0].path,
          code: 'missing-column',
          message: `no column is mapped as the ${what}; pick one of: ${fs[0].columns.map((c) => c.name).join(', ')}`,
        });
      return;
    }
    for (const f of fs) {
      const c = f.columns.find((c) => c.name === column);
      if (!c) {
        issues.push({
          file: f.path,
          code: 'missing-column',
          message: `column "${column}" (the ${what}) is not in this file; its columns are: ${f.columns.map((c) => c.name).join(', ')}`,
        });
      } else if (!kinds.includes(c.kind)) {
        issues.push({
          file: f.path,
          code: 'wrong-type',
          message: `column "${column}" (the ${what}) holds ${c.kind} values${c.type ? ` (Parquet ${c.type})` : ''}; the ${what} needs ${kinds.join(' or ')} values`,
        });
      }
    }
  };
  const { corpus, query, qrels } = mapping;
  want('corpus', 'document id', corpus.id, ID_KINDS, true);
  want('corpus', 'document text', corpus.text, TEXTUAL, false);
  want('corpus', 'document title', corpus.title, TEXTUAL, false);
  want('corpus', 'document image', corpus.image, ['image', 'binary'], false);
  want('corpus', 'document modality', corpus.modality, ['string'], false);
  for (const m of corpus.meta) want('corpus', `metadata column`, m, META_KINDS, false);
  want('query', 'query id', query.id, ID_KINDS, true);
  want('query', 'query text', query.text, TEXTUAL, false);
  want('query', 'query image', query.image, ['image', 'binary'], false);
  want('query', 'query modality', query.modality, ['string'], false);
  want('query', 'excluded ids', query.excludeIds, ['string-list'], false);
  for (const m of query.meta) want('query', `metadata column`, m, META_KINDS, false);
  want('qrels', 'query id of a judgement', qrels.queryId, ID_KINDS, true);
  want('qrels', 'document id of a judgement', qrels.corpusId, ID_KINDS, true);
  want('qrels', 'relevance score', qrels.score, ['number', 'string'], false);
  const e = mapping.embedding;
  if (e) {
    want('corpus', 'embedding column', e.column, ['float-list'], true);
    const bad: string[] = [];
    if (!e.model_id.trim()) bad.push('a model id');
    if (!e.dtype.trim()) bad.push('a dtype');
    if (!(Number.isInteger(e.dim) && e.dim > 0)) bad.push('a positive integer dimension');
    if (bad.length && parts[0].files.length > 0)
      issues.push({
        file: parts[0].files[0].path,
        code: 'embedding-mapping',
        message: `the embedding column "${e.column}" needs ${bad.join(', ')}`,
      });
  }
  if (!corpus.text && !corpus.title && !corpus.image && parts[0].files.length > 0)
    issues.push({
      file: parts[0].files[0].path,
      code: 'missing-column',
      message: 'the corpus needs a text, title or image column; none is mapped',
    });
  if (!query.text && !query.image && parts[1].files.length > 0)
    issues.push({
      file: parts[1].files[0].path,
      code: 'missing-column',
      message: 'the queries need a text or image column; none is mapped',
    });
  return issues;
}

/** MIEB modality value (`text`, `image`, `image,text`, `text+image`…) as Loupe's, or null if it is none. */
export function parseModality(v: string): Modality | null {
  const parts = new Set(
    v
      .toLowerCase()
      .split(/[\s,+&/|-]+/)
      .filter(Boolean),
  );
  if (parts.size === 0 || [...parts].some((p) => p !== 'text' && p !== 'image')) return null;
  return parts.size === 2 ? 'image+text' : parts.has('image') ? 'image' : 'text';
}
