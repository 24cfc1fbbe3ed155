// Issues and warnings of the virtual JSONL shard moved back to the Parquet cells they came from: a
// virtual line becomes a file, row group and row (through a LineMap per virtual file), a virtual image
// path the image column's cell, and the virtual file names in messages the Parquet files'.

import type { ShardIssue } from '../../shard/source';
import type { ShardWarning } from '../../types';
import type { ParquetMapping } from './mapping';
import type { OpenFile } from './parquet-files';

/** The virtual shard's record files and manifest, as the shard reader names them. */
export const VIRTUAL = {
  manifest: 'shard.json',
  corpus: 'corpus.jsonl',
  queries: 'queries.jsonl',
  qrels: 'qrels/test.tsv',
};

/** Where a run of virtual lines came from: lines [line, …) are rows [row, …) of `file`'s row group. */
export interface Segment {
  line: number;
  file: string;
  rowGroup: number;
  row: number;
}

/** Virtual line → Parquet row, by the segments written (in line order). */
export class LineMap {
  readonly segments: Segment[] = [];
  /** The Parquet row of virtual `line`, or null before the first segment. */
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

/** A Parquet cell an image came from. */
export interface ImageCell {
  file: string;
  rowGroup: number;
  row: number;
  column: string;
}

/** What relocation needs of the Parquet shard being read. */
export interface VirtualOrigins {
  readonly maps: { corpus: LineMap; queries: LineMap; qrels: LineMap };
  /** Virtual image path → the cell it came from. */
  readonly imageLoc: Map<string, ImageCell>;
  readonly mapping: ParquetMapping;
  readonly inspection: { label: string };
  /** The open files of a role, of `splits` when given. */
  of(role: string, splits?: string[]): OpenFile[];
}

/** `message` with the virtual file names replaced by the Parquet files' (or their count). */
function wording(o: VirtualOrigins, message: string): string {
  const name = (role: string, what: string) => {
    const fs = role === 'corpus' ? o.of('corpus') : o.of(role, o.mapping.splits);
    return fs.length === 1 ? `${what} (${fs[0].info.path})` : `${what} (${fs.length} Parquet files)`;
  };
  return message
    .replaceAll('corpus.jsonl', name('corpus', 'the corpus'))
    .replaceAll('queries.jsonl', name('query', 'the queries'))
    .replaceAll('qrels/test.tsv', name('qrels', 'the qrels'))
    .replaceAll('shard.json', 'the derived tasks');
}

/** The Parquet column a virtual record file's id field was written from. */
function idColumn(o: VirtualOrigins, file: string, field: string): string | undefined {
  if (file === VIRTUAL.corpus && field === '_id') return o.mapping.corpus.id;
  if (file === VIRTUAL.queries && field === '_id') return o.mapping.query.id;
  if (file === VIRTUAL.qrels && field === 'query-id') return o.mapping.qrels.queryId;
  if (file === VIRTUAL.qrels && field === 'corpus-id') return o.mapping.qrels.corpusId;
  return undefined;
}

/** An issue of the virtual shard, moved to the Parquet file, row group and row (or image cell) it came from. */
export function relocate(o: VirtualOrigins, i: ShardIssue): ShardIssue {
  // Issues raised here (a corrupt row group…) already name their Parquet file.
  if (!Object.values(VIRTUAL).includes(i.file) && !o.imageLoc.has(i.file)) return i;
  const map =
    i.file === VIRTUAL.corpus
      ? o.maps.corpus
      : i.file === VIRTUAL.queries
        ? o.maps.queries
        : i.file === VIRTUAL.qrels
          ? o.maps.qrels
          : null;
  // "(first on line 12)" points into the same virtual file: say which row that is.
  let message = wording(o, i.message).replace(/first on line (\d+)/, (all, n: string) => {
    const first = map?.locate(Number(n));
    return first ? `first in ${first.file}, row group ${first.rowGroup}, row ${first.row}` : all;
  });
  // The reader names the virtual id field (`_id "a b" is not a valid id…`): name the Parquet column.
  if (i.code === 'invalid-id')
    message = message.replace(
      /^(_id|query-id|corpus-id) ("(?:[^"\\]|\\.)*") is not/,
      (all, field: string, value: string) => {
        const column = idColumn(o, i.file, field);
        return column ? `column "${column}" holds ${value}, not` : all;
      },
    );
  if (map && i.line !== undefined) {
    const at = map.locate(i.line);
    if (at) return { file: at.file, rowGroup: at.rowGroup, row: at.row, code: i.code, message };
  }
  const img = o.imageLoc.get(i.file);
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
      ? o.of('corpus')
      : i.file === VIRTUAL.queries
        ? o.of('query', o.mapping.splits)
        : i.file === VIRTUAL.qrels
          ? o.of('qrels', o.mapping.splits)
          : [];
  return {
    file: files.length === 1 ? files[0].info.path : i.file === VIRTUAL.manifest ? o.inspection.label : i.file,
    code: i.code,
    message,
  };
}

/** A warning of the virtual shard, moved like {@link relocate}. */
export function relocateWarning(o: VirtualOrigins, w: ShardWarning): ShardWarning {
  const r = relocate(o, { file: w.file, code: w.code ?? '', message: w.message });
  return { ...w, file: r.file, message: r.message };
}
