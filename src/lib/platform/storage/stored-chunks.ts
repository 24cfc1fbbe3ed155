// A shard's documents, queries and qrels are stored in IndexedDB as numbered chunks of records, each
// with the FNV-1a of its records' JSON in the shard's meta row. Every reader checks a chunk the same
// way before using it: its number, that it holds records, and its checksum (rows written before the
// checksums existed have none).

export interface ChunkRow<T> {
  hash: string;
  chunkNo: number;
  records: T[];
}

/** 32-bit FNV-1a over the UTF-16 code units of `text`. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * The records of chunk `no` of `what` ('documents', 'queries', 'qrels'), after checking that `row` is
 * that chunk and, with `sum`, that its records are the ones written (structured clone keeps property
 * order, so their JSON and its checksum are as written). Throws naming the chunk otherwise.
 */
export function chunkRecords<T>(what: string, row: ChunkRow<T> | undefined, no: number, sum?: number): T[] {
  if (row?.chunkNo !== no || !Array.isArray(row.records)) throw new Error(`${what}: chunk ${no} is damaged`);
  if (sum !== undefined && fnv1a(JSON.stringify(row.records)) !== sum)
    throw new Error(`${what}: chunk ${no} does not match its checksum (its bytes were changed)`);
  return row.records;
}

/**
 * Every record of `what`, from all its chunk rows in order: `chunks` rows, `count` records in all,
 * each chunk checked (chunkRecords) and each record by `check` when given.
 */
export function allChunkRecords<T>(
  what: string,
  rows: ChunkRow<T>[],
  chunks: number,
  count: number,
  sums?: number[],
  check?: (record: T) => boolean,
): T[] {
  if (rows.length !== chunks) throw new Error(`${what}: ${rows.length} chunks stored, ${chunks} expected`);
  const out: T[] = [];
  rows.forEach((row, i) => {
    for (const x of chunkRecords(what, row, i, sums?.[i])) {
      if (check && !check(x)) throw new Error(`${what}: a record is damaged`);
      out.push(x);
    }
  });
  if (out.length !== count) throw new Error(`${what}: ${out.length} records stored, ${count} expected`);
  return out;
}
