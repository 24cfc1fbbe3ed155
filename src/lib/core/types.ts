// Domain types shared by every layer. Pure data: no DOM, no worker globals, no I/O.

/** Which part of a query or document a task uses. */
export type Modality = 'text' | 'image' | 'image+text';

/** Metadata carried by documents and queries (e.g. `field`, `organ`, `qtype`). Never a retrieval input. */
export type Metadata = Record<string, string | string[]>;

/** One task of a shard: a set of queries scored against one part of the corpus. */
export interface TaskInfo {
  id: string;
  queryModality: Modality;
  /** Which part of the documents a system ranks by for this task. */
  corpusModality: Modality;
  description?: string;
}

/** Formats a shard can be read from. */
export type ShardFormat = 'beir+images' | 'beir' | 'r2med';

/** Manifest of a shard: `shard.json`, or synthesised for plain BEIR and R2MED sources. */
export interface ShardManifest {
  name: string;
  version?: string;
  format: ShardFormat;
  description?: string;
  license?: string;
  licenseUrl?: string;
  citation?: string;
  source?: string;
  /** Grade → meaning, e.g. {"2": "same organ and finding"}. */
  relevance?: Record<string, string>;
  /** The documents' language (`language` in shard.json), for those without their own `language`. */
  language?: string;
  /**
   * `embeddings/index.json` when the shard carries precomputed corpus embeddings (`embeddings` in
   * shard.json, written by pack-shard): a shard read over HTTP asks for that file only then.
   */
  embeddings?: string;
  /**
   * Zip files in the shard that hold its images (`images_pack` in shard.json, one name or a list,
   * written by `pack-shard --images`): a shard read over HTTP gets its images with one request per
   * pack instead of one per image. The loose image files stay beside them for every other reader.
   */
  imagesPack?: string[];
  tasks: TaskInfo[];
}

/** One image of a multi-image item (`images: [...]`): frontal and lateral views, a case's series. */
export interface ImageRef {
  /** Relative path inside the shard (`images/x.jpg`). */
  path: string;
  caption?: string;
  /** What the image is in the item, e.g. `frontal`, `lateral`. */
  role?: string;
}

export interface Doc {
  id: string;
  title: string;
  text: string;
  /** Relative path of the document image inside the shard (`images/x.jpg`); the first of `images`. */
  image?: string;
  /** Every image of a multi-image item, in order (from `images`; absent for one `image`). */
  images?: ImageRef[];
  meta: Metadata;
}

export interface Query {
  id: string;
  text: string;
  image?: string;
  /** Every image of a multi-image query, in order (the first is `image`). */
  images?: ImageRef[];
  task: string;
  /** Corpus ids removed from this query's ranking before scoring. */
  excludeIds?: string[];
  meta: Metadata;
}

/** Relevance judgements: query id → document id → integer grade (may be 0 or negative). */
export type Qrels = Map<string, Map<string, number>>;

export interface ScoredDoc {
  docId: string;
  score: number;
}

/** A ranked run: query id → retrieved documents (any order; metrics re-sort trec_eval's way). */
export type Run = Map<string, ScoredDoc[]>;

/** A non-fatal finding while reading a shard (e.g. R2MED qrels naming documents not in the corpus). */
export interface ShardWarning {
  file: string;
  /** Stable machine-readable code, e.g. `qrels-unknown-document`, `count-mismatch`. */
  code?: string;
  message: string;
  count?: number;
  examples?: string[];
}

/** A fully read and validated shard, held in memory (worker side) before it is cached. */
export interface ParsedShard {
  manifest: ShardManifest;
  /** Content hash of the source files (hex SHA-256 tree hash), the cache key. */
  hash: string;
  docs: Doc[];
  queries: Query[];
  qrels: Qrels;
  /** NOTICE.md text if the shard has one. */
  notice?: string;
  /** Relative image paths referenced by docs or queries, each present and verified. */
  images: string[];
  warnings: ShardWarning[];
  /** Total bytes read from the source. */
  bytes: number;
  /**
   * Streamed reads (ReadShardOptions.onDoc): `docs` is empty, the documents went to onDoc; these say
   * how many there were and which file and file digest (hex) they came from, for the second pass.
   */
  streamed?: {
    docCount: number;
    corpusFile: string;
    corpusDigest: string;
    /** Every file read, with its digest (hex): what a resumed import checks a re-picked source by. */
    files?: Record<string, string>;
  };
}

/** Progress of any long job, one discriminated union for every worker. */
export type Progress =
  /** `docsPerSec` / `etaSeconds`: set by a streamed import (documents validated, time left for the file). */
  | {
      kind: 'read';
      file: string;
      bytes: number;
      totalBytes?: number;
      docsPerSec?: number;
      etaSeconds?: number;
    }
  /**
   * Lines (rows) of `file` checked so far; `bytes` / `totalBytes`: of the file read so far and its
   * length when known (Content-Length, the file's size), with the rate and time left of `read`.
   */
  | {
      kind: 'parse';
      file: string;
      lines: number;
      bytes?: number;
      totalBytes?: number;
      docsPerSec?: number;
      etaSeconds?: number;
    }
  /** `what: 'documents'`: a streamed import (records = documents, then queries, judgements, images), with its rate and time left. */
  | {
      kind: 'store';
      done: number;
      total: number;
      what?: 'documents';
      /** The shard's documents (the first `docTotal` records are they). */
      docTotal?: number;
      docsPerSec?: number;
      etaSeconds?: number;
    }
  /** `what: 'ids'`: the shard's document id directory, built once after the import (part of caching it). */
  | { kind: 'index'; done: number; total: number; what?: 'ids' }
  | { kind: 'search'; done: number; total: number }
  /** Model file bytes fetched (or read from the browser cache); `total` when the server sends a length. */
  | { kind: 'download'; file: string; loaded: number; total?: number }
  /**
   * Documents embedded (stored or reused) of `total`; rate over this run's computed documents.
   * `precomputed` / `reused`: how many of `done` came from the shard's precomputed embeddings or from
   * batches stored by an earlier run (nothing computed for them); `from: 'precomputed'`: the run
   * takes its rows from the shard's precomputed set (said before the first batch).
   */
  | {
      kind: 'embed';
      done: number;
      total: number;
      docsPerSec: number;
      etaSeconds?: number;
      precomputed?: number;
      reused?: number;
      from?: 'precomputed';
      /** What is embedded when it is not the corpus: the task's queries, other texts, query images. */
      items?: 'queries' | 'texts' | 'images';
    }
  /** The model's first run on its device (kernel compilation, shader builds, the output check). */
  | { kind: 'compile'; model: string; device: string }
  | { kind: 'status'; message: string };

export type ProgressFn = (p: Progress) => void;

/** Which part of a document an embedding is of. */
export type EmbedPart = 'text' | 'image';
