// Parquet datasets (MIEB / Hugging Face layout) as shards. The Parquet files are presented to the very
// same reader as a JSONL shard (read-shard.ts) through a virtual "BEIR + images" source: shard.json,
// corpus.jsonl, queries.jsonl and qrels/test.tsv are written on the fly from the rows, and images come
// out of the image columns. So every row is validated by the same code, with the same issue codes; each
// issue is then moved from its virtual line back to the Parquet file, row group and row it came from.
// The corpus is streamed one row group at a time; queries and qrels (small) are read up front, because
// the tasks written into shard.json depend on them.
// This file assembles the virtual shard; the files, cells, inspection, image stash and relocation of
// issues are in parquet-files, cells, inspect-parquet, image-stash and relocate.
import { ShardValidationError, type ShardIssue, type ShardSource } from '../../shard/source';
import type { Doc, Modality, ParsedShard, ShardWarning, TaskInfo } from '../../types';
import { readShard, type ReadShardOptions } from '../../shard/read-shard';
import { checkParquetMapping, inSplits, parseModality, type ParquetMapping } from './mapping';
import { asString, bytesKey, extOf, imageBytes, metaValue, sameBytes } from './cells';
import { memoryImageStash, type ImageStash } from './image-stash';
import { inspectParquet, type ParquetInspection } from './inspect-parquet';
import { openAll, readGroup, type OpenFile } from './parquet-files';
import { LineMap, relocate, relocateWarning, VIRTUAL, type ImageCell, type VirtualOrigins } from './relocate';

export { isParquetSource } from './detect';
export { inspectParquet, type ParquetInspection } from './inspect-parquet';
export { memoryImageStash, type ImageStash } from './image-stash';

/** Examples listed in a warning that counts many cases. */
const EXAMPLES = 5;
const enc = new TextEncoder();
/** Virtual corpus lines handed to the reader at a time. */
const LINES_PER_CHUNK = 2048;

/** Options of {@link readParquetShard}: those of readShard, plus an inspection already made. */
export interface ReadParquetOptions extends ReadShardOptions {
  inspection?: ParquetInspection;
  /** Where images wait for validation (default: memory). */
  imageStash?: ImageStash;
}

const TASK_SUFFIX: Record<Modality, string> = { text: 'text', image: 'image', 'image+text': 'image-text' };
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

/**
 * One Parquet import: the rows written as a virtual "BEIR + images" shard, read by readShard. A
 * streamed import (opts.onDoc, see stream-parquet.ts) keeps no documents: only what the corpus
 * modalities of the tasks need (the documents that are not text-only).
 */
export class ParquetShard implements VirtualOrigins {
  private files: OpenFile[] = [];
  private readonly issues: ShardIssue[] = [];
  private readonly warnings: ShardWarning[] = [];
  readonly maps = { corpus: new LineMap(), queries: new LineMap(), qrels: new LineMap() };
  /** Images wait here until readShard asks for them; query images are also kept to spot shared ones. */
  private readonly stash: ImageStash;
  private readonly imagePaths = new Set<string>();
  private readonly queryImages = new Map<string, Uint8Array>();
  readonly imageLoc = new Map<string, ImageCell>();
  private readonly imageByContent = new Map<string, string[]>();
  private queriesJsonl: Uint8Array = new Uint8Array();
  private qrelsTsv: Uint8Array = new Uint8Array();
  private tasks: TaskInfo[] = [];
  private readonly splitOfTask = new Map<string, string>();
  /** `file\trow` of the rows whose id cell had an issue (the virtual shard has "" there). */
  private readonly badIdRows = new Set<string>();
  /** Streamed reads: the parts of the documents that are not text-only (the others are 'text'). */
  private readonly nonTextDocs = new Map<string, Modality>();

  constructor(
    private readonly source: ShardSource,
    readonly inspection: ParquetInspection,
    readonly mapping: ParquetMapping,
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

  of(role: string, splits?: string[]): OpenFile[] {
    return this.files.filter((f) => f.info.role === role && (!splits || inSplits(f.info, splits)));
  }

  /** Opens the files and reads the qrels and queries (what the virtual shard's corpus comes after). */
  async prepare(): Promise<void> {
    this.files = await openAll(
      this.source,
      this.inspection.files.map((f) => f.path),
    );
    const judged = await this.readQrels();
    await this.readQueries(judged);
  }

  /** The virtual queries and qrels files as written by prepare() (a second pass compares them). */
  records(): { queries: Uint8Array; qrels: Uint8Array } {
    return { queries: this.queriesJsonl, qrels: this.qrelsTsv };
  }

  /** A validation error of the virtual shard with its issues moved to the Parquet cells. */
  relocated(e: ShardValidationError): ShardValidationError {
    // this.issue() throws with its own list once the cap is reached: nothing to merge then.
    if (e.issues === this.issues) return e;
    const relocated = e.issues.map((i) => relocate(this, i)).filter((i) => !this.followsBadId(i));
    return new ShardValidationError([...this.issues, ...relocated]);
  }

  async read(): Promise<ParsedShard> {
    let parsed: ParsedShard;
    const onDoc = this.opts.onDoc;
    try {
      await this.prepare();
      parsed = await readShard(
        this.virtualSource(),
        onDoc
          ? {
              ...this.opts,
              onDoc: (d) => {
                const m = docModality(d);
                if (m !== 'text') this.nonTextDocs.set(d.id, m);
                return onDoc(d);
              },
            }
          : this.opts,
      );
    } catch (e) {
      if (!(e instanceof ShardValidationError)) throw e;
      throw this.relocated(e);
    }
    if (this.issues.length) throw new ShardValidationError(this.issues);
    parsed.manifest.name = this.mapping.name || this.source.label;
    parsed.warnings = [
      ...this.warnings,
      ...parsed.warnings.filter((w) => w.code !== 'missing-name').map((w) => relocateWarning(this, w)),
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
      this.badIdRows.add(`${at.file}\t${at.row}`);
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

  /**
   * Whether a relocated issue only repeats a bad id cell's issue: the reader's complaint about the empty
   * id written in its place (invalid, duplicate or unknown id "").
   */
  private followsBadId(i: ShardIssue): boolean {
    return (
      i.row !== undefined &&
      this.badIdRows.has(`${i.file}\t${i.row}`) &&
      ['invalid-id', 'duplicate-id', 'unknown-query', 'unknown-document'].includes(i.code) &&
      i.message.includes('""')
    );
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
        // Handed on a few thousand lines at a time: a large row group is not copied whole as JSON too.
        let out: string[] = [];
        for (let i = 0; i < group.length; i++) {
          const r = group[i];
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
          if (out.length === LINES_PER_CHUNK) {
            yield enc.encode(out.join(''));
            out = [];
          }
        }
        line += group.length;
        if (out.length) yield enc.encode(out.join(''));
      }
    }
  }

  private manifestBytes(): Uint8Array {
    // No name and no source label: the same files give the same content hash from a folder, a zip or a
    // URL (as a JSONL shard does); the name is set after reading.
    // Nor the embedding column's mapping: embeddings are kept beside the shard, not part of it.
    const { name: _name, embedding: _embedding, ...mapping } = this.mapping;
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

  /** The virtual "BEIR + images" shard (after prepare()). */
  virtualSource(): ShardSource {
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

  /**
   * Corpus modality of each task: the parts its relevant documents carry (all images → image, all
   * text → text, otherwise image+text), unless the mapping overrides it.
   */
  private deriveCorpusModalities(parsed: ParsedShard): void {
    // A streamed read kept only the documents that are not text-only (the rest are 'text').
    const docParts = parsed.streamed ? this.nonTextDocs : new Map<string, Modality>();
    for (const d of parsed.docs) docParts.set(d.id, docModality(d));
    const partsOf = (id: string) => docParts.get(id) ?? (parsed.streamed ? 'text' : undefined);
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
          const m = grade > 0 ? partsOf(d) : undefined;
          if (m) seen.add(m);
        }
      }
      t.corpusModality = seen.size === 1 ? [...seen][0] : seen.size === 0 ? 'text' : 'image+text';
    }
  }
}

/** The parts a document carries: text only, an image only, or both. */
function docModality(d: Doc): Modality {
  return !d.image ? 'text' : d.text.trim() === '' && d.title.trim() === '' ? 'image' : 'image+text';
}
