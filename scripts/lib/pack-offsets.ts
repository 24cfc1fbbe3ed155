// Writes corpus.offsets.bin (src/lib/core/shard/doc-offsets.ts) for a shard's corpus.jsonl: the
// corpus is split into lines by the importer's own line reader (same BOM, \r\n and blank-line rules,
// same byte offsets), each line's id read with its format's id key, and the file named in shard.json.
import { createReadStream, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readLines } from '../../src/lib/core/shard/lines';
import { DOC_OFFSETS_FILE, DOC_OFFSETS_KEY, encodeDocOffsets } from '../../src/lib/core/shard/doc-offsets';
import type { ShardFormat } from '../../src/lib/core/types';

/** The shard's format, as the importer detects it: shard.json, else R2MED's query.jsonl, else BEIR. */
export function shardFormat(dir: string): ShardFormat {
  if (existsSync(join(dir, 'shard.json'))) return 'beir+images';
  if (existsSync(join(dir, 'query.jsonl'))) return 'r2med';
  return 'beir';
}

/**
 * Writes `out`/corpus.offsets.bin for `dir`/corpus.jsonl (to a temporary name, then renamed) and adds
 * `"doc_offsets"` to `out`/shard.json when there is one. Throws on a line that is not a document.
 */
export async function writeDocOffsets(
  dir: string,
  out: string,
): Promise<{ file: string; docs: number; bytes: number }> {
  const corpus = join(dir, 'corpus.jsonl');
  const format = shardFormat(dir);
  const idKey = format === 'r2med' ? 'id' : '_id';
  const ids: string[] = [];
  const starts: number[] = [];
  const lengths: number[] = [];
  const lines: number[] = [];
  const seen = new Set<string>();
  let fnv = 0x811c9dc5;
  const enc = new TextEncoder();
  for await (const l of readLines(createReadStream(corpus) as AsyncIterable<Uint8Array>, {
    file: 'corpus.jsonl',
    strict: format === 'beir+images',
    maxLineBytes: 1 << 30,
    onChunk: (chunk) => {
      for (let i = 0; i < chunk.length; i++) fnv = Math.imul(fnv ^ chunk[i], 0x01000193);
    },
  })) {
    let id: unknown;
    try {
      id = (JSON.parse(l.text) as Record<string, unknown>)[idKey];
    } catch (e) {
      throw new Error(`${corpus}:${l.line}: not a JSON object (${(e as Error).message})`);
    }
    if (typeof id !== 'string') throw new Error(`${corpus}:${l.line}: no string "${idKey}"`);
    // The importer skips a repeated id (an issue): such a corpus is not packed.
    if (seen.has(id)) throw new Error(`${corpus}:${l.line}: duplicate id ${JSON.stringify(id)}`);
    seen.add(id);
    ids.push(id);
    starts.push(l.offset);
    lengths.push(enc.encode(l.text).length);
    lines.push(l.line);
  }
  const bytes = encodeDocOffsets({
    ids,
    starts,
    lengths,
    lines,
    corpusBytes: statSync(corpus).size,
    corpusFnv: fnv >>> 0,
    format,
  });
  const file = join(out, DOC_OFFSETS_FILE);
  writeFileSync(`${file}.tmp`, bytes);
  renameSync(`${file}.tmp`, file);
  const manifestFile = join(out, 'shard.json');
  if (existsSync(manifestFile)) {
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Record<string, unknown>;
    if (manifest[DOC_OFFSETS_KEY] !== DOC_OFFSETS_FILE)
      writeFileSync(
        manifestFile,
        JSON.stringify({ ...manifest, [DOC_OFFSETS_KEY]: DOC_OFFSETS_FILE }, null, 2) + '\n',
      );
  }
  return { file, docs: ids.length, bytes: bytes.length };
}
