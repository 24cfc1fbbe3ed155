// Reads and validates a benchmark shard from any ShardSource, streaming: "BEIR + images" (strict, the
// project's own format, spec in shared/data/README.md), plain BEIR and R2MED's native layout (both lenient,
// since they are upstream formats we import as they are). Either every problem is reported, with file,
// line and a stable code, or a fully valid ParsedShard is returned; never something in between.

import { ShardValidationError, type ShardIssue, type ShardSource } from './source';
import type {
  Doc,
  ImageRef,
  Metadata,
  Modality,
  ParsedShard,
  ProgressFn,
  Qrels,
  Query,
  ShardFormat,
  ShardManifest,
  ShardWarning,
  TaskInfo,
} from '../types';
import { DicomError, decodeDicomImage, isDicom, parseDicom, type DicomCodecs } from '../media/dicom/image';
import { combineFileHashes, FileHasher } from './hash';
import { DEFAULT_LIMITS, formatBytes, imageDimensions, LIMIT_OPTIONS, type ShardLimits } from './limits';
import { invalidUtf8Offset, LineReadError, readLines, type Line } from './lines';

/** A BCP 47 language tag's shape: a 2–3 letter primary language, then optional subtags. */
const LANGUAGE_TAG_RE = /^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*$/;

/** Options of {@link readShard}. */
export interface ReadShardOptions {
  /** Progress (`read` per file with its size when known, `parse` with lines), at most every ~100 ms. */
  onProgress?: ProgressFn;
  /** Polled between chunks; when it returns true reading stops with an `Error` named `AbortError`. */
  isCancelled?: () => boolean;
  /** Size limits (defaults: DEFAULT_LIMITS). */
  limits?: Partial<ShardLimits>;
  /** Longest accepted line, and largest shard.json / NOTICE.md, in bytes (overrides limits.maxLineBytes). */
  maxLineBytes?: number;
  /** Issues collected before giving up (default 50). */
  maxIssues?: number;
  /**
   * Receives each referenced image once (per distinct path) after its magic bytes were checked, and only
   * while no issue has been found. The shard may still fail afterwards: discard what you kept on a throw.
   */
  onImage?: (path: string, bytes: Uint8Array) => void | Promise<void>;
  /**
   * Codecs for compressed DICOM images, loaded on the first DICOM image met. Every DICOM image is
   * decoded (first frame) to check it; without codecs a compressed one fails with "needs a codec".
   */
  loadDicomCodecs?: () => Promise<DicomCodecs>;
}

const STRICT_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;
const MODALITIES: readonly string[] = ['text', 'image', 'image+text'];
const QRELS_HEADER = 'query-id\tcorpus-id\tscore';
const BEIR_SPLITS = ['test', 'dev', 'train'];
const EXAMPLES = 5;
const PROGRESS_MS = 100;

type Json = Record<string, unknown>;

interface Layout {
  format: ShardFormat;
  corpus: string;
  queries: string;
  qrels: string;
  split?: string;
}

interface Ref {
  file: string;
  line: number;
  /** `images[2]` when the path came from an item's image list. */
  field?: string;
}

/** MAX_ITEM_IMAGES: images one document or query may list. */
export const MAX_ITEM_IMAGES = 64;

/**
 * Reads, validates and returns a whole shard. Detects the format from the files present (probing with
 * `open()` when `list()` returns null). Throws {@link ShardValidationError} with every issue found (up to
 * `maxIssues`), or an `Error` named `AbortError` when cancelled.
 */
export async function readShard(source: ShardSource, opts: ReadShardOptions = {}): Promise<ParsedShard> {
  const reader = new ShardReader(source, opts);
  try {
    return await reader.read();
  } finally {
    await reader.closeProbes();
  }
}

class ShardReader {
  private readonly source: ShardSource;
  private readonly opts: ReadShardOptions;
  private readonly maxLineBytes: number;
  private readonly limits: ShardLimits;
  private readonly maxIssues: number;
  private readonly issues: ShardIssue[] = [];
  private readonly warnings: ShardWarning[] = [];
  private readonly fileHashes = new Map<string, Uint8Array>();
  private readonly probes = new Map<string, AsyncIterable<Uint8Array> | null>();
  private listing: Set<string> | null = null;
  private strict = true;
  private format: ShardFormat = 'beir+images';
  private bytes = 0;
  private lastProgress = -Infinity;

  private manifest!: ShardManifest;
  private counts: unknown;
  private readonly docs: Doc[] = [];
  private readonly docLines = new Map<string, number>();
  private readonly queries: Query[] = [];
  private readonly queryLines = new Map<string, number>();
  private readonly qrels: Qrels = new Map();
  private readonly qrelLines = new Map<string, number>();
  private qrelRows = 0;
  private readonly imageRefs = new Map<string, Ref>();

  constructor(source: ShardSource, opts: ReadShardOptions) {
    this.source = source;
    this.opts = opts;
    this.limits = { ...DEFAULT_LIMITS, ...opts.limits };
    this.maxLineBytes = opts.maxLineBytes ?? this.limits.maxLineBytes;
    this.maxIssues = Math.max(1, opts.maxIssues ?? 50);
  }

  async read(): Promise<ParsedShard> {
    this.checkCancelled();
    const listed = await this.source.list();
    this.listing = listed ? new Set(listed) : null;
    const layout = await this.detect();
    this.format = layout.format;
    this.strict = layout.format === 'beir+images';

    if (this.strict) await this.readManifest();
    else this.manifest = this.synthesiseManifest(layout);

    await this.readCorpus(layout.corpus);
    await this.readQueries(layout.queries);
    if (layout.format === 'r2med') await this.readJsonQrels(layout.qrels);
    else await this.readTsvQrels(layout.qrels);
    this.checkRelevance(layout.qrels);
    const images = await this.readImages();
    const notice = await this.readNotice();
    if (this.strict) {
      this.checkCounts(images.length);
      this.checkModalities();
    }
    if (this.issues.length > 0) throw new ShardValidationError(this.issues);

    return {
      manifest: this.manifest,
      hash: await combineFileHashes(this.fileHashes),
      docs: this.docs,
      queries: this.queries,
      qrels: this.qrels,
      ...(notice !== undefined ? { notice } : {}),
      images,
      warnings: this.warnings,
      bytes: this.bytes,
    };
  }

  /** Releases streams opened to probe for files (URL sources) but never read. */
  async closeProbes(): Promise<void> {
    for (const stream of this.probes.values()) {
      if (!stream) continue;
      try {
        await stream[Symbol.asyncIterator]().return?.();
      } catch {
        // Closing is best effort.
      }
    }
    this.probes.clear();
  }

  // ---- issues, progress, cancellation -------------------------------------------------------------

  private issue(issue: ShardIssue): void {
    this.issues.push(issue);
    if (this.issues.length >= this.maxIssues) throw new ShardValidationError(this.issues);
  }

  /** Records an issue after which reading cannot meaningfully go on, and stops. */
  private fatal(issue: ShardIssue): never {
    if (this.issues.length < this.maxIssues) this.issues.push(issue);
    throw new ShardValidationError(this.issues);
  }

  private checkCancelled(): void {
    if (this.opts.isCancelled?.()) {
      const e = new Error(`reading ${this.source.label} was cancelled`);
      e.name = 'AbortError';
      throw e;
    }
  }

  private progress(force: boolean, ...events: Parameters<ProgressFn>[0][]): void {
    const fn = this.opts.onProgress;
    if (!fn) return;
    const now = Date.now();
    if (!force && now - this.lastProgress < PROGRESS_MS) return;
    this.lastProgress = now;
    for (const e of events) fn(e);
  }

  // ---- files --------------------------------------------------------------------------------------

  private async exists(path: string): Promise<boolean> {
    if (this.listing) return this.listing.has(path);
    if (!this.probes.has(path)) this.probes.set(path, await this.source.open(path));
    return this.probes.get(path) != null;
  }

  private async open(path: string): Promise<AsyncIterable<Uint8Array> | null> {
    if (this.probes.has(path)) {
      const s = this.probes.get(path) ?? null;
      this.probes.delete(path);
      return s;
    }
    if (this.listing && !this.listing.has(path)) return null;
    return this.source.open(path);
  }

  private async openRequired(path: string): Promise<AsyncIterable<Uint8Array>> {
    const stream = await this.open(path);
    if (!stream)
      this.fatal({
        file: path,
        code: 'missing-file',
        message: `${path} is missing from ${this.source.label}`,
      });
    return stream;
  }

  /** Lines of a text file, with hashing, byte counts, progress and cancellation folded in. */
  private async *lines(path: string): AsyncGenerator<Line> {
    const stream = await this.openRequired(path);
    const totalBytes = await this.source.size(path);
    const hasher = new FileHasher();
    let bytes = 0;
    let lines = 0;
    const emit = (force: boolean): void =>
      this.progress(
        force,
        { kind: 'read', file: path, bytes, totalBytes },
        { kind: 'parse', file: path, lines },
      );
    emit(true);
    try {
      for await (const l of readLines(stream, {
        file: path,
        maxLineBytes: this.maxLineBytes,
        strict: this.strict,
        onChunk: (chunk) => {
          this.checkCancelled();
          bytes += chunk.length;
          this.bytes += chunk.length;
          emit(false);
          return hasher.update(chunk);
        },
        onIssue: (i) => this.issue(i),
        onWarning: (w) => this.warnings.push(w),
      })) {
        lines = l.line;
        yield l;
      }
    } catch (e) {
      if (e instanceof LineReadError) this.fatal(e.issue);
      throw e;
    }
    this.fileHashes.set(path, await hasher.digest());
    emit(true);
  }

  /** A whole (small) file: shard.json, NOTICE.md (capped at maxLineBytes) or an image (maxImageBytes). */
  private async readWhole(
    path: string,
    stream: AsyncIterable<Uint8Array>,
    image = false,
  ): Promise<Uint8Array> {
    const hasher = new FileHasher();
    const parts: Uint8Array[] = [];
    const cap = image ? this.limits.maxImageBytes : this.maxLineBytes;
    const option = image ? LIMIT_OPTIONS.maxImageBytes.name : LIMIT_OPTIONS.maxLineBytes.name;
    let n = 0;
    for await (const chunk of stream) {
      this.checkCancelled();
      n += chunk.length;
      if (n > cap) {
        this.fatal({
          file: path,
          code: 'file-too-large',
          message:
            `${path} is larger than ${formatBytes(cap)} (the limit for ${image ? 'an image' : 'this file'}); ` +
            `reading stopped here. Shrink it, or raise the limit with ${option}=<MiB>`,
        });
      }
      parts.push(chunk);
      const r = hasher.update(chunk);
      if (r) await r;
    }
    this.bytes += n;
    this.fileHashes.set(path, await hasher.digest());
    // Always a fresh, exactly sized array: a source chunk may be a view into a larger (pooled) buffer, and
    // onImage consumers may keep `.buffer`.
    const out = new Uint8Array(n);
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }

  // ---- format detection ---------------------------------------------------------------------------

  private async detect(): Promise<Layout> {
    if (await this.exists('shard.json')) {
      const layout: Layout = {
        format: 'beir+images',
        corpus: 'corpus.jsonl',
        queries: 'queries.jsonl',
        qrels: 'qrels/test.tsv',
      };
      let missing = false;
      for (const f of [layout.corpus, layout.queries, layout.qrels]) {
        if (!(await this.exists(f))) {
          missing = true;
          this.issue({
            file: f,
            code: 'missing-file',
            message: `${f} is missing (shard.json is present, so this is a "BEIR + images" shard)`,
          });
        }
      }
      if (missing) throw new ShardValidationError(this.issues);
      return layout;
    }
    const hasCorpus = await this.exists('corpus.jsonl');
    if (hasCorpus && (await this.exists('queries.jsonl'))) {
      for (const split of BEIR_SPLITS) {
        const qrels = `qrels/${split}.tsv`;
        if (await this.exists(qrels))
          return { format: 'beir', corpus: 'corpus.jsonl', queries: 'queries.jsonl', qrels, split };
      }
      this.fatal({
        file: 'qrels/test.tsv',
        code: 'missing-file',
        message:
          'BEIR layout (corpus.jsonl + queries.jsonl) without judgements: add qrels/test.tsv (or qrels/dev.tsv, qrels/train.tsv)',
      });
    }
    if (hasCorpus && (await this.exists('query.jsonl'))) {
      if (await this.exists('qrels.jsonl'))
        return { format: 'r2med', corpus: 'corpus.jsonl', queries: 'query.jsonl', qrels: 'qrels.jsonl' };
      this.fatal({
        file: 'qrels.jsonl',
        code: 'missing-file',
        message: 'R2MED layout (corpus.jsonl + query.jsonl) without qrels.jsonl',
      });
    }
    const remote = /^https?:\/\//.test(this.source.label);
    this.fatal({
      file: 'shard.json',
      code: hasCorpus || !remote ? 'unknown-format' : 'not-found',
      message:
        !hasCorpus && remote
          ? `nothing found at ${this.source.label}: the server has neither shard.json nor corpus.jsonl there ` +
            '(HTTP 404). Check the address: it must be the shard folder, ending in /'
          : `${this.source.label} is not a shard: expected shard.json ("BEIR + images"), corpus.jsonl + queries.jsonl + ` +
            'qrels/<split>.tsv (BEIR) or corpus.jsonl + query.jsonl + qrels.jsonl (R2MED)',
    });
  }

  private synthesiseManifest(layout: Layout): ShardManifest {
    const task: TaskInfo =
      layout.format === 'beir'
        ? {
            id: layout.split!,
            queryModality: 'text',
            corpusModality: 'text',
            description: `Queries judged in ${layout.qrels}`,
          }
        : {
            id: 'test',
            queryModality: 'text',
            corpusModality: 'text',
            description: 'R2MED queries judged in qrels.jsonl',
          };
    return {
      name: this.source.label,
      format: layout.format,
      description:
        layout.format === 'beir'
          ? `Plain BEIR folder (judgements from ${layout.qrels})`
          : 'R2MED-format folder',
      tasks: [task],
    };
  }

  // ---- shard.json ---------------------------------------------------------------------------------

  private async readManifest(): Promise<void> {
    const file = 'shard.json';
    let bytes = await this.readWhole(file, await this.openRequired(file));
    if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
      this.issue({
        file,
        line: 1,
        code: 'bom',
        message: 'file starts with a UTF-8 byte order mark (BOM); save it as UTF-8 without BOM',
      });
      bytes = bytes.subarray(3);
    }
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
    } catch {
      const at = invalidUtf8Offset(bytes);
      this.fatal({
        file,
        line: lineAtByte(bytes, at),
        code: 'invalid-utf8',
        message: `invalid UTF-8 at byte ${at}; the file must be UTF-8 encoded`,
      });
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (e) {
      const msg = errorMessage(e);
      this.fatal({
        file,
        line: jsonErrorLine(text),
        code: 'malformed-json',
        message: `malformed JSON: ${truncate(msg, 200)}`,
      });
    }
    if (!isObject(raw))
      this.fatal({
        file,
        code: 'not-object',
        message: `shard.json must be a JSON object, found ${describe(raw)}`,
      });
    const m = raw;
    const at = (needle: string, from = 0): number | undefined => {
      const i = text.indexOf(needle, from);
      return i < 0 ? undefined : lineAtChar(text, i);
    };
    const optString = (key: string): string | undefined => {
      const v = m[key];
      if (v === undefined) return undefined;
      if (typeof v !== 'string') {
        this.issue({
          file,
          line: at(`"${key}"`),
          code: 'wrong-type',
          message: `"${key}" must be a string, found ${describe(v)}`,
        });
        return undefined;
      }
      return v;
    };

    let name = optString('name');
    if (!name) {
      this.warnings.push({
        file,
        code: 'missing-name',
        message: `shard.json has no "name"; using "${this.source.label}"`,
      });
      name = this.source.label;
    }
    if (m.format !== undefined && m.format !== 'beir+images') {
      this.warnings.push({
        file,
        code: 'format',
        message: `"format" is ${describe(m.format)}; reading it as "beir+images"`,
      });
    }
    let relevance: Record<string, string> | undefined;
    if (m.relevance !== undefined) {
      if (isObject(m.relevance) && Object.values(m.relevance).every((v) => typeof v === 'string')) {
        relevance = m.relevance as Record<string, string>;
      } else {
        this.issue({
          file,
          line: at('"relevance"'),
          code: 'wrong-type',
          message: '"relevance" must be an object mapping grades to strings',
        });
      }
    }

    const tasks: TaskInfo[] = [];
    if (!Array.isArray(m.tasks) || m.tasks.length === 0) {
      this.issue({
        file,
        line: at('"tasks"'),
        code: 'missing-tasks',
        message: `"tasks" must be a non-empty list of tasks, found ${m.tasks === undefined ? 'nothing' : describe(m.tasks)}`,
      });
    } else {
      const seen = new Set<string>();
      m.tasks.forEach((t: unknown, i: number) => {
        const where = `tasks[${i}]`;
        if (!isObject(t)) {
          this.issue({
            file,
            line: at('"tasks"'),
            code: 'not-object',
            message: `${where} must be an object, found ${describe(t)}`,
          });
          return;
        }
        const idPos = typeof t.id === 'string' ? text.indexOf(JSON.stringify(t.id)) : -1;
        const line = (key?: string): number | undefined =>
          idPos < 0
            ? at('"tasks"')
            : key
              ? (at(`"${key}"`, idPos) ?? lineAtChar(text, idPos))
              : lineAtChar(text, idPos);
        if (typeof t.id !== 'string') {
          this.issue({
            file,
            line: line(),
            code: t.id === undefined ? 'missing-field' : 'wrong-type',
            message: `${where}.id must be a string, found ${t.id === undefined ? 'nothing' : describe(t.id)}`,
          });
          return;
        }
        if (!STRICT_ID.test(t.id)) {
          this.issue({
            file,
            line: line(),
            code: 'invalid-id',
            message: `${where}.id ${JSON.stringify(t.id)} ${ID_RULE}`,
          });
        }
        if (seen.has(t.id))
          this.issue({
            file,
            line: line(),
            code: 'duplicate-id',
            message: `task id ${JSON.stringify(t.id)} is declared twice`,
          });
        seen.add(t.id);
        const modality = (key: string): Modality | undefined => {
          const v = t[key];
          if (v === undefined) {
            this.issue({
              file,
              line: line(),
              code: 'missing-field',
              message: `${where} (${t.id}) has no "${key}"`,
            });
          } else if (typeof v !== 'string' || !MODALITIES.includes(v)) {
            this.issue({
              file,
              line: line(key),
              code: 'bad-modality',
              message: `${where}.${key} is ${describe(v)}; use "text", "image" or "image+text"`,
            });
          } else return v as Modality;
          return undefined;
        };
        const queryModality = modality('query_modality');
        const corpusModality = modality('corpus_modality');
        if (t.description !== undefined && typeof t.description !== 'string') {
          this.issue({
            file,
            line: line('description'),
            code: 'wrong-type',
            message: `${where}.description must be a string`,
          });
        }
        if (queryModality && corpusModality) {
          tasks.push({
            id: t.id,
            queryModality,
            corpusModality,
            ...(typeof t.description === 'string' ? { description: t.description } : {}),
          });
        }
      });
    }
    // The documents' language, when the shard declares one (BM25 picks its analyzer from it).
    let language = optString('language');
    if (language !== undefined && !LANGUAGE_TAG_RE.test(language)) {
      this.issue({
        file,
        line: at('"language"'),
        code: 'bad-language',
        message: `"language" is ${JSON.stringify(language)}; use a language tag such as "en", "de" or "pt-BR"`,
      });
      language = undefined;
    }
    this.manifest = {
      name,
      format: 'beir+images',
      tasks,
      ...pick({
        language,
        version: optString('version'),
        description: optString('description'),
        license: optString('license'),
        licenseUrl: optString('license_url'),
        citation: optString('citation'),
        source: optString('source'),
        relevance,
      }),
    };
    this.counts = m.counts;
    // Without a sound task list every query would be misjudged; stop at the manifest's own issues.
    if (this.issues.length > 0) throw new ShardValidationError(this.issues);
  }

  // ---- records ------------------------------------------------------------------------------------

  private parseObject(file: string, l: Line): Json | null {
    let v: unknown;
    try {
      v = JSON.parse(l.text);
    } catch (e) {
      this.issue({
        file,
        line: l.line,
        code: 'malformed-json',
        message: `malformed JSON: ${truncate(errorMessage(e), 200)}`,
      });
      return null;
    }
    if (!isObject(v)) {
      this.issue({
        file,
        line: l.line,
        code: 'not-object',
        message: `expected one JSON object per line, found ${describe(v)}`,
      });
      return null;
    }
    const long = longField(v, this.limits.maxFieldChars);
    if (long) {
      this.issue({
        file,
        line: l.line,
        code: 'field-too-large',
        message:
          `field "${long.key}" has ${long.length} characters, more than the limit of ${this.limits.maxFieldChars}. ` +
          `No real corpus has such a field: check the export, or raise the limit with ${LIMIT_OPTIONS.maxFieldChars.name}=<Mi characters>`,
      });
      return null;
    }
    return v;
  }

  /** A required string field; null (after an issue) when missing or not a string. */
  private reqString(file: string, line: number, o: Json, key: string): string | null {
    const v = o[key];
    if (v === undefined) {
      this.issue({ file, line, code: 'missing-field', message: `missing required field "${key}"` });
      return null;
    }
    if (typeof v !== 'string') {
      this.issue({
        file,
        line,
        code: 'wrong-type',
        message: `field "${key}" must be a string, found ${describe(v)}`,
      });
      return null;
    }
    return v;
  }

  /** An identifier field, checked against the spec's rules (strict) or just non-empty and tab-free. */
  private idField(file: string, line: number, o: Json, key: string): string | null {
    // Upstream formats sometimes write numeric ids; they are strings for every purpose here.
    const raw = o[key];
    const v =
      !this.strict && typeof raw === 'number' && Number.isFinite(raw)
        ? String(raw)
        : this.reqString(file, line, o, key);
    if (v !== null) this.checkId(file, line, key, v);
    return v;
  }

  private checkId(file: string, line: number, what: string, id: string): void {
    const ok = this.strict ? STRICT_ID.test(id) : id !== '' && !/[\t\n\r]/.test(id);
    if (!ok) {
      const rule = this.strict ? ID_RULE : 'must be non-empty and contain no tab or line break';
      this.issue({ file, line, code: 'invalid-id', message: `${what} ${JSON.stringify(id)} ${rule}` });
    }
  }

  /** An optional image path (strict format only): type and path rules, remembered for the image pass. */
  private imageField(file: string, line: number, o: Json): string | undefined {
    const v = o.image;
    if (v === undefined) return undefined;
    if (typeof v !== 'string') {
      this.issue({
        file,
        line,
        code: 'wrong-type',
        message: `field "image" must be a string path, found ${describe(v)}`,
      });
      return undefined;
    }
    const problem = pathProblem(v);
    if (problem) {
      this.issue({ file, line, code: 'bad-path', message: `image path ${JSON.stringify(v)} ${problem}` });
      return undefined;
    }
    if (!this.imageRefs.has(v)) this.imageRefs.set(v, { file, line });
    return v;
  }

  /**
   * An optional image list (strict format only): `images: [{"path", "caption"?, "role"?}, …]` (a bare
   * path string is taken as `{"path"}`), each path checked like `image` and remembered with its index
   * for the image pass. An item gives `image` or `images`, not both.
   */
  private imagesField(file: string, line: number, o: Json): ImageRef[] | undefined {
    const v = o.images;
    if (v === undefined) return undefined;
    const bad = (message: string, code = 'wrong-type') => {
      this.issue({ file, line, code, message });
      return undefined;
    };
    if (o.image !== undefined)
      return bad('give either "image" (one image) or "images" (a list), not both', 'image-and-images');
    if (!Array.isArray(v) || v.length === 0)
      return bad(
        `field "images" must be a non-empty list of {"path", "caption", "role"}, found ${describe(v)}`,
      );
    if (v.length > MAX_ITEM_IMAGES)
      return bad(
        `field "images" lists ${v.length} images; at most ${MAX_ITEM_IMAGES} per item`,
        'too-many-images',
      );
    const out: ImageRef[] = [];
    const seen = new Set<string>();
    for (const [k, x] of v.entries()) {
      const field = `images[${k}]`;
      const item = typeof x === 'string' ? { path: x } : x;
      if (!item || typeof item !== 'object' || Array.isArray(item))
        return bad(`${field} must be {"path": …} or a path string, found ${describe(x)}`);
      const { path, caption, role } = item as Record<string, unknown>;
      if (typeof path !== 'string')
        return bad(`${field}.path must be a string path, found ${describe(path)}`);
      for (const [name, val] of [
        ['caption', caption],
        ['role', role],
      ] as const)
        if (val !== undefined && typeof val !== 'string')
          return bad(`${field}.${name} must be a string, found ${describe(val)}`);
      const problem = pathProblem(path);
      if (problem) return bad(`${field} path ${JSON.stringify(path)} ${problem}`, 'bad-path');
      if (seen.has(path)) return bad(`${field} repeats ${JSON.stringify(path)}`, 'duplicate-image');
      seen.add(path);
      if (!this.imageRefs.has(path)) this.imageRefs.set(path, { file, line, field });
      out.push({
        path,
        ...(typeof caption === 'string' ? { caption } : {}),
        ...(typeof role === 'string' ? { role } : {}),
      });
    }
    return out;
  }

  private async readCorpus(file: string): Promise<void> {
    const idKey = this.format === 'r2med' ? 'id' : '_id';
    const reserved = new Set([
      idKey,
      'title',
      'text',
      ...(this.strict ? ['image', 'images'] : []),
      ...(this.format === 'beir' ? ['metadata'] : []),
    ]);
    let empty = 0;
    const emptyExamples: string[] = [];
    for await (const l of this.lines(file)) {
      const o = this.parseObject(file, l);
      if (!o) continue;
      const id = this.idField(file, l.line, o, idKey);
      let title = '';
      if (this.format === 'beir+images') {
        title = this.reqString(file, l.line, o, 'title') ?? '';
      } else if (this.format === 'beir' && o.title !== undefined && o.title !== null) {
        if (typeof o.title === 'string') title = o.title;
        else
          this.issue({
            file,
            line: l.line,
            code: 'wrong-type',
            message: `field "title" must be a string, found ${describe(o.title)}`,
          });
      }
      const text = this.reqString(file, l.line, o, 'text');
      const image = this.strict ? this.imageField(file, l.line, o) : undefined;
      const images = this.strict ? this.imagesField(file, l.line, o) : undefined;
      if (id === null) continue;
      const first = this.docLines.get(id);
      if (first !== undefined) {
        this.issue({
          file,
          line: l.line,
          code: 'duplicate-id',
          message: `duplicate document _id ${JSON.stringify(id)} (first on line ${first})`,
        });
        continue;
      }
      this.docLines.set(id, l.line);
      if (text === null) continue;
      if (this.strict) {
        if (text.trim() === '' && o.image === undefined && o.images === undefined) {
          this.issue({
            file,
            line: l.line,
            code: 'empty-doc',
            message: `document ${JSON.stringify(id)} has neither a non-empty "text" nor an "image"`,
          });
        }
      } else if (text.trim() === '' && title.trim() === '') {
        if (empty++ < EXAMPLES) emptyExamples.push(id);
      }
      const doc: Doc = { id, title, text, meta: collectMeta(o, reserved, this.format === 'beir') };
      if (image !== undefined) doc.image = image;
      if (images) {
        doc.image = images[0].path;
        doc.images = images;
      }
      this.docs.push(doc);
    }
    if (empty > 0) {
      this.warnings.push({
        file,
        code: 'empty-doc',
        message: `${empty} document(s) have no title and no text`,
        count: empty,
        examples: emptyExamples,
      });
    }
    if (this.docLines.size === 0)
      this.issue({ file, code: 'empty-corpus', message: `${file} has no documents` });
  }

  private async readQueries(file: string): Promise<void> {
    const idKey = this.format === 'r2med' ? 'id' : '_id';
    const reserved = new Set(
      this.strict
        ? ['_id', 'text', 'image', 'images', 'task', 'exclude_ids']
        : this.format === 'beir'
          ? ['_id', 'text', 'metadata']
          : ['id', 'text'],
    );
    const taskIds = this.manifest.tasks.map((t) => t.id);
    const defaultTask = this.strict ? undefined : this.manifest.tasks[0].id;
    let empty = 0;
    const emptyExamples: string[] = [];
    for await (const l of this.lines(file)) {
      const o = this.parseObject(file, l);
      if (!o) continue;
      const id = this.idField(file, l.line, o, idKey);
      const text = this.reqString(file, l.line, o, 'text');
      let task = defaultTask;
      let image: string | undefined;
      let images: ImageRef[] | undefined;
      let excludeIds: string[] | undefined;
      if (this.strict) {
        task = this.reqString(file, l.line, o, 'task') ?? undefined;
        if (task !== undefined && !taskIds.includes(task)) {
          this.issue({
            file,
            line: l.line,
            code: 'unknown-task',
            message: `task ${JSON.stringify(task)} is not declared in shard.json (declared: ${taskIds.join(', ')})`,
          });
        }
        image = this.imageField(file, l.line, o);
        images = this.imagesField(file, l.line, o);
        excludeIds = this.excludeIds(file, l.line, o);
      }
      if (id === null) continue;
      const first = this.queryLines.get(id);
      if (first !== undefined) {
        this.issue({
          file,
          line: l.line,
          code: 'duplicate-id',
          message: `duplicate query _id ${JSON.stringify(id)} (first on line ${first})`,
        });
        continue;
      }
      this.queryLines.set(id, l.line);
      if (text === null || task === undefined) continue;
      if (text.trim() === '' && o.image === undefined && o.images === undefined) {
        if (this.strict) {
          this.issue({
            file,
            line: l.line,
            code: 'empty-query',
            message: `query ${JSON.stringify(id)} has neither a non-empty "text" nor an "image"`,
          });
        } else if (empty++ < EXAMPLES) emptyExamples.push(id);
      }
      const meta = collectMeta(o, reserved, this.format === 'beir');
      // R2MED leaves body_system empty for most subsets; an empty facet value would only be noise.
      if (this.format === 'r2med' && meta.body_system === '') delete meta.body_system;
      const q: Query = { id, text, task, meta };
      if (image !== undefined) q.image = image;
      if (images) {
        q.image = images[0].path;
        q.images = images;
      }
      if (excludeIds !== undefined) q.excludeIds = excludeIds;
      this.queries.push(q);
    }
    if (empty > 0) {
      this.warnings.push({
        file,
        code: 'empty-query',
        message: `${empty} query(ies) have empty text`,
        count: empty,
        examples: emptyExamples,
      });
    }
    if (this.queryLines.size === 0)
      this.issue({ file, code: 'no-queries', message: `${file} has no queries` });
  }

  private excludeIds(file: string, line: number, o: Json): string[] | undefined {
    const v = o.exclude_ids;
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
      this.issue({
        file,
        line,
        code: 'wrong-type',
        message: `field "exclude_ids" must be a list of strings, found ${describe(v)}`,
      });
      return undefined;
    }
    const unknown = v.filter((d) => !this.docLines.has(d));
    if (unknown.length > 0) {
      this.issue({
        file,
        line,
        code: 'unknown-exclude-id',
        message: `exclude_ids names ${unknown.length} document(s) not in corpus.jsonl: ${unknown
          .slice(0, EXAMPLES)
          .map((d) => JSON.stringify(d))
          .join(', ')}`,
      });
    }
    return v;
  }

  // ---- qrels --------------------------------------------------------------------------------------

  private unknownDocRows = 0;
  private readonly unknownDocs = new Set<string>();
  private duplicateRows = 0;
  private readonly duplicateExamples: string[] = [];

  private async readTsvQrels(file: string): Promise<void> {
    let header = true;
    for await (const l of this.lines(file)) {
      const cols = l.text.split('\t');
      if (header) {
        header = false;
        if (l.text === QRELS_HEADER) continue;
        const looksLikeData = cols.length === 3 && /^-?\d+$/.test(cols[2]);
        if (this.strict) {
          this.issue({
            file,
            line: l.line,
            code: 'bad-header',
            message: `first line must be the header "query-id<TAB>corpus-id<TAB>score", found ${JSON.stringify(truncate(l.text, 80))}`,
          });
          // A missing header should not also cost the first judgement (and a "no relevant document" cascade).
          if (!looksLikeData) continue;
        } else {
          this.warnings.push({
            file,
            code: 'bad-header',
            message: `first line ${JSON.stringify(truncate(l.text, 80))} is not the BEIR header; skipped as a header, as BEIR's loader does`,
          });
          continue;
        }
      }
      if (cols.length !== 3) {
        this.issue({
          file,
          line: l.line,
          code: 'column-count',
          message: `expected 3 tab-separated columns (query-id, corpus-id, score), found ${cols.length}`,
        });
        continue;
      }
      const score = this.parseScore(file, l.line, cols[2]);
      this.addQrel(file, l.line, cols[0], cols[1], score);
    }
    this.finishQrels(file);
  }

  private async readJsonQrels(file: string): Promise<void> {
    for await (const l of this.lines(file)) {
      const o = this.parseObject(file, l);
      if (!o) continue;
      const q = this.idField(file, l.line, o, 'q_id');
      const d = this.idField(file, l.line, o, 'p_id');
      let score: number | null = null;
      if (o.score === undefined)
        this.issue({ file, line: l.line, code: 'missing-field', message: 'missing required field "score"' });
      else if (typeof o.score !== 'number' || !Number.isSafeInteger(o.score)) {
        this.issue({
          file,
          line: l.line,
          code: 'bad-score',
          message: `"score" must be an integer, found ${describe(o.score)}`,
        });
      } else score = o.score;
      if (q !== null && d !== null) this.addQrel(file, l.line, q, d, score, true);
    }
    this.finishQrels(file);
  }

  private parseScore(file: string, line: number, s: string): number | null {
    // The spec asks for non-negative integers; upstream BEIR/TREC files may carry negative grades.
    const ok = (this.strict ? /^\d+$/ : /^-?\d+$/).test(s) && Number.isSafeInteger(Number(s));
    if (!ok) {
      this.issue({
        file,
        line,
        code: 'bad-score',
        message: `score ${JSON.stringify(truncate(s, 40))} must be a ${this.strict ? 'non-negative ' : ''}integer`,
      });
      return null;
    }
    return Number(s);
  }

  private addQrel(
    file: string,
    line: number,
    q: string,
    d: string,
    score: number | null,
    idsChecked = false,
  ): void {
    if (!idsChecked) {
      this.checkId(file, line, 'query-id', q);
      this.checkId(file, line, 'corpus-id', d);
    }
    const queries = this.format === 'r2med' ? 'query.jsonl' : 'queries.jsonl';
    let ok = score !== null;
    if (!this.queryLines.has(q)) {
      this.issue({
        file,
        line,
        code: 'unknown-query',
        message: `query ${JSON.stringify(q)} is not in ${queries}`,
      });
      ok = false;
    }
    if (!this.docLines.has(d)) {
      if (this.strict) {
        this.issue({
          file,
          line,
          code: 'unknown-document',
          message: `document ${JSON.stringify(d)} is not in corpus.jsonl`,
        });
        ok = false;
      } else {
        this.unknownDocRows++;
        this.unknownDocs.add(d);
      }
    }
    if (!ok) return;
    const key = `${q}\t${d}`;
    const first = this.qrelLines.get(key);
    if (first !== undefined) {
      if (this.strict) {
        this.issue({
          file,
          line,
          code: 'duplicate-qrel',
          message: `pair (${q}, ${d}) is judged twice (first on line ${first})`,
        });
        return;
      }
      this.duplicateRows++;
      if (this.duplicateExamples.length < EXAMPLES)
        this.duplicateExamples.push(`${q} ${d} (lines ${first}, ${line})`);
    } else {
      this.qrelLines.set(key, line);
      this.qrelRows++;
    }
    let row = this.qrels.get(q);
    if (!row) this.qrels.set(q, (row = new Map()));
    row.set(d, score!);
  }

  private finishQrels(file: string): void {
    if (this.unknownDocRows > 0) {
      this.warnings.push({
        file,
        code: 'qrels-unknown-document',
        message:
          `${this.unknownDocRows} of ${this.qrelRows} judgement rows name ${this.unknownDocs.size} document(s) missing from corpus.jsonl. ` +
          'They are kept in the qrels, so metrics match trec_eval run on the upstream qrels file; those documents can never be retrieved.',
        count: this.unknownDocRows,
        examples: [...this.unknownDocs].slice(0, EXAMPLES),
      });
    }
    if (this.duplicateRows > 0) {
      this.warnings.push({
        file,
        code: 'duplicate-qrel',
        message: `${this.duplicateRows} (query, document) pair(s) judged more than once; the last row wins, as in BEIR's loader`,
        count: this.duplicateRows,
        examples: this.duplicateExamples,
      });
    }
  }

  /** Spec rule (strict): every query has a relevant document. Lenient: drop unjudged queries like BEIR. */
  private checkRelevance(qrelsFile: string): void {
    if (this.strict) {
      if (this.qrelRows === 0 && this.queryLines.size > 0) {
        this.issue({ file: qrelsFile, code: 'empty-qrels', message: `${qrelsFile} has no judgements` });
        return;
      }
      for (const q of this.queries) {
        const row = this.qrels.get(q.id);
        if (!row || ![...row.values()].some((s) => s > 0)) {
          this.issue({
            file: 'queries.jsonl',
            line: this.queryLines.get(q.id),
            code: 'no-relevant',
            message: `query ${JSON.stringify(q.id)} has no relevant document in ${qrelsFile} (every query needs a row with score > 0)`,
          });
        }
      }
      return;
    }
    const kept = this.queries.filter((q) => this.qrels.has(q.id));
    const dropped = this.queries.length - kept.length;
    if (dropped > 0) {
      this.warnings.push({
        file: this.format === 'r2med' ? 'query.jsonl' : 'queries.jsonl',
        code: 'queries-without-qrels',
        message: `${dropped} of ${this.queries.length} queries have no row in ${qrelsFile} and were dropped, as BEIR does`,
        count: dropped,
        examples: this.queries
          .filter((q) => !this.qrels.has(q.id))
          .slice(0, EXAMPLES)
          .map((q) => q.id),
      });
      this.queries.splice(0, this.queries.length, ...kept);
      if (kept.length === 0 && this.queryLines.size > 0) {
        this.issue({
          file: qrelsFile,
          code: 'no-queries',
          message: `no query has a judgement in ${qrelsFile}`,
        });
      }
    }
  }

  // ---- images, notice, counts ---------------------------------------------------------------------

  private async readImages(): Promise<string[]> {
    const paths = [...this.imageRefs.keys()].sort();
    const images: string[] = [];
    let done = 0;
    for (const path of paths) {
      this.checkCancelled();
      const ref = this.imageRefs.get(path)!;
      const stream = await this.open(path);
      if (!stream) {
        this.issue({
          file: ref.file,
          line: ref.line,
          code: 'missing-image',
          message: `${ref.field ? `${ref.field} ` : 'image '}${JSON.stringify(path)} is not in the shard`,
        });
        continue;
      }
      const bytes = await this.readWhole(path, stream, true);
      const kind = sniffImage(bytes) ?? (isDicom(bytes, path) ? 'dicom' : null);
      if (!kind) {
        const head = Array.from(bytes.subarray(0, 8), (b) => b.toString(16).padStart(2, '0')).join(' ');
        this.issue({
          file: path,
          code: 'not-an-image',
          message: `${path} (referenced on ${ref.file}:${ref.line}${ref.field ? ` as ${ref.field}` : ''}) is not a JPEG, PNG, WebP or DICOM image (it starts with ${head || 'nothing'})`,
        });
        continue;
      }
      // Decompression bombs: refuse by the header's dimensions, before anything decodes the image.
      const dims = imageDimensions(bytes);
      if (dims && dims.width * dims.height > this.limits.maxImagePixels) {
        this.issue({
          file: path,
          code: 'image-too-large',
          message:
            `${path} (referenced on ${ref.file}:${ref.line}${ref.field ? ` as ${ref.field}` : ''}) is ${dims.width} × ${dims.height} pixels, more than the ` +
            `limit of ${this.limits.maxImagePixels / 1e6} megapixels. Downscale it, or raise the limit with ` +
            `${LIMIT_OPTIONS.maxImagePixels.name}=<megapixels>`,
        });
        continue;
      }
      if (kind === 'dicom') {
        const problem = await this.checkDicom(bytes);
        if (problem) {
          this.issue({
            file: path,
            code: problem.code,
            message: `${path} (referenced on ${ref.file}:${ref.line}${ref.field ? ` as ${ref.field}` : ''}) ${problem.message}`,
          });
          continue;
        }
      }
      if (this.issues.length === 0 && this.opts.onImage) await this.opts.onImage(path, bytes);
      images.push(path);
      done++;
      this.progress(done === paths.length, {
        kind: 'status',
        message: `Checked ${done} of ${paths.length} images`,
      });
    }
    return images;
  }

  private dicomCodecs?: Promise<DicomCodecs>;

  /**
   * Why a DICOM image cannot be shown or embedded, or null when it can: too many pixels by its header
   * (checked before decoding, like other images), else its first frame is decoded.
   */
  private async checkDicom(bytes: Uint8Array): Promise<{ code: string; message: string } | null> {
    try {
      const { info } = parseDicom(bytes);
      if (info.rows * info.columns > this.limits.maxImagePixels)
        return {
          code: 'image-too-large',
          message:
            `is ${info.columns} × ${info.rows} pixels, more than the limit of ${this.limits.maxImagePixels / 1e6} ` +
            `megapixels. Downscale it, or raise the limit with ${LIMIT_OPTIONS.maxImagePixels.name}=<megapixels>`,
        };
      let codecs: DicomCodecs = {};
      if (this.opts.loadDicomCodecs) {
        this.dicomCodecs ??= this.opts.loadDicomCodecs();
        codecs = await this.dicomCodecs;
      }
      decodeDicomImage(bytes, { codecs });
      return null;
    } catch (e) {
      if (e instanceof DicomError || e instanceof RangeError)
        return { code: 'bad-dicom', message: `is not a usable DICOM image: ${e.message}` };
      throw e;
    }
  }

  private async readNotice(): Promise<string | undefined> {
    const file = 'NOTICE.md';
    const stream = await this.open(file);
    if (!stream) return undefined;
    const bytes = await this.readWhole(file, stream);
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      const at = invalidUtf8Offset(bytes);
      if (this.strict) {
        this.issue({
          file,
          line: lineAtByte(bytes, at),
          code: 'invalid-utf8',
          message: `invalid UTF-8 at byte ${at}; the file must be UTF-8 encoded`,
        });
        return undefined;
      }
      this.warnings.push({
        file,
        code: 'invalid-utf8',
        message: `invalid UTF-8 at byte ${at}; undecodable bytes were replaced`,
      });
      return new TextDecoder('utf-8').decode(bytes);
    }
  }

  /** shard.json `counts` are informative: a mismatch is a warning, the files win. */
  private checkCounts(images: number): void {
    const c = this.counts;
    if (c === undefined) return;
    const file = 'shard.json';
    if (!isObject(c)) {
      this.warnings.push({ file, code: 'count-mismatch', message: '"counts" is not an object; ignored' });
      return;
    }
    const compare = (path: string, stated: unknown, actual: number, what: string): void => {
      if (typeof stated === 'number' && stated !== actual) {
        this.warnings.push({
          file,
          code: 'count-mismatch',
          message: `counts.${path} is ${stated}, but the shard has ${actual} ${what} (the files win)`,
        });
      }
    };
    compare('corpus', c.corpus, this.docs.length, 'documents');
    compare('queries', c.queries, this.queries.length, 'queries');
    compare('qrels', c.qrels, this.qrelRows, 'judgements');
    compare('images', c.images, images, 'distinct images');
    if (!isObject(c.tasks)) return;
    for (const [task, tc] of Object.entries(c.tasks)) {
      if (!isObject(tc)) continue;
      const qs = this.queries.filter((q) => q.task === task);
      let rows = 0;
      for (const q of qs) rows += this.qrels.get(q.id)?.size ?? 0;
      compare(`tasks.${task}.queries`, tc.queries, qs.length, `queries in task ${task}`);
      compare(`tasks.${task}.qrels`, tc.qrels, rows, `judgements in task ${task}`);
    }
  }

  /** Each query's parts should match its task's declared query_modality; tasks should have queries. */
  private checkModalities(): void {
    for (const task of this.manifest.tasks) {
      let n = 0;
      let off = 0;
      const examples: string[] = [];
      for (const q of this.queries) {
        if (q.task !== task.id) continue;
        n++;
        const m: Modality = q.image === undefined ? 'text' : q.text === '' ? 'image' : 'image+text';
        if (m !== task.queryModality && off++ < EXAMPLES) examples.push(q.id);
      }
      if (n === 0) {
        this.warnings.push({
          file: 'queries.jsonl',
          code: 'empty-task',
          message: `task ${JSON.stringify(task.id)} has no queries`,
        });
      } else if (off > 0) {
        this.warnings.push({
          file: 'queries.jsonl',
          code: 'modality-mismatch',
          message: `${off} of ${n} queries of task ${JSON.stringify(task.id)} do not have the declared query_modality "${task.queryModality}"`,
          count: off,
          examples,
        });
      }
    }
  }
}

// ---- helpers --------------------------------------------------------------------------------------

const ID_RULE = 'is not a valid id: use only A-Z a-z 0-9 _ . : - and start with a letter or digit';

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Short human description of a JSON value, for "found …" in messages. */
function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  switch (typeof v) {
    case 'string':
      return `the string ${JSON.stringify(truncate(v, 40))}`;
    case 'number':
      return `the number ${v}`;
    case 'boolean':
      return `${v}`;
    case 'object':
      return 'an object';
    default:
      return typeof v;
  }
}

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function pick<T extends Record<string, unknown>>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

/** Other string / list-of-string fields become metadata; BEIR's `metadata` object is flattened first. */
function collectMeta(o: Json, reserved: Set<string>, flattenMetadata: boolean): Metadata {
  const meta: Metadata = {};
  if (flattenMetadata && isObject(o.metadata)) {
    for (const [k, v] of Object.entries(o.metadata)) {
      if (k === '__proto__') continue;
      if (isScalar(v)) meta[k] = String(v);
      else if (Array.isArray(v) && v.every(isScalar)) meta[k] = v.map(String);
    }
  }
  for (const [k, v] of Object.entries(o)) {
    if (reserved.has(k) || k === '__proto__') continue;
    if (typeof v === 'string') meta[k] = v;
    else if (Array.isArray(v) && v.every((x) => typeof x === 'string')) meta[k] = v as string[];
  }
  return meta;
}

function isScalar(v: unknown): v is string | number | boolean {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

/** Why a shard-relative path is unacceptable, or null when it is fine. */
function pathProblem(p: string): string | null {
  if (p === '') return 'is empty';
  if (p.includes('\\')) return 'uses "\\"; paths must use "/"';
  if (p.startsWith('/') || /^[A-Za-z]:/.test(p))
    return 'is absolute; paths must be relative to the shard folder';
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(p)) return 'is a URL; paths must be relative to the shard folder';
  const segments = p.split('/');
  if (segments.includes('..')) return 'contains ".."; paths must stay inside the shard folder';
  if (segments.some((s) => s === '' || s === '.')) return 'has an empty or "." segment';
  return null;
}

/** The first string (at any depth) longer than `max` characters, with its key path; null when none is. */
function longField(v: unknown, max: number, key = ''): { key: string; length: number } | null {
  if (typeof v === 'string') return v.length > max ? { key, length: v.length } : null;
  if (typeof v !== 'object' || v === null) return null;
  for (const [k, x] of Object.entries(v)) {
    const found = longField(x, max, key ? `${key}.${k}` : k);
    if (found) return found;
  }
  return null;
}

/** JPEG, PNG or WebP by magic bytes. */
function sniffImage(b: Uint8Array): 'jpeg' | 'png' | 'webp' | null {
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length >= 8 && [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((x, i) => b[i] === x))
    return 'png';
  const ascii = (from: number, to: number): string => String.fromCharCode(...b.subarray(from, to));
  if (b.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'webp';
  return null;
}

function lineAtChar(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < index; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

function lineAtByte(bytes: Uint8Array, offset: number): number {
  let line = 1;
  for (let i = bytes.indexOf(0x0a); i >= 0 && i < offset; i = bytes.indexOf(0x0a, i + 1)) line++;
  return line;
}

/**
 * Line of the first JSON syntax error. Engines word (and locate) JSON.parse errors differently, and V8's
 * "Unexpected token" message has no position at all, so the text is re-scanned with a small validator.
 */
function jsonErrorLine(text: string): number {
  // A truncated file fails at its very end; point at its last non-blank line rather than past it.
  const end = text.trimEnd().length;
  return lineAtChar(text, Math.min(jsonErrorOffset(text), Math.max(0, end - 1)));
}

/** Offset of the first JSON syntax error in `text` (text.length when it is truncated). */
function jsonErrorOffset(text: string): number {
  let i = 0;
  const n = text.length;
  const fail = (): never => {
    throw i;
  };
  const ws = (): void => {
    while (i < n && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const lit = (word: string): void => {
    for (const c of word) {
      if (text[i] !== c) fail();
      i++;
    }
  };
  const str = (): void => {
    i++; // opening quote
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return;
      }
      if (c < 0x20) fail();
      if (c === 0x5c) {
        i++;
        const e = text[i];
        if (e === 'u') {
          for (let k = 1; k <= 4; k++) if (!/[0-9a-fA-F]/.test(text[i + k] ?? '')) fail();
          i += 5;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i++;
        else fail();
      } else i++;
    }
    fail();
  };
  const num = (): void => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) fail();
    i += m![0].length;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        str();
        ws();
        if (text[i] !== ':') fail();
        i++;
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') {
          i++;
          return;
        } else fail();
      }
    } else if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') {
          i++;
          return;
        } else fail();
      }
    } else if (c === '"') str();
    else if (c === 't') lit('true');
    else if (c === 'f') lit('false');
    else if (c === 'n') lit('null');
    else num();
  };
  try {
    value();
    ws();
    if (i < n) fail();
    return n;
  } catch (at) {
    if (typeof at === 'number') return Math.min(at, n);
    throw at;
  }
}
