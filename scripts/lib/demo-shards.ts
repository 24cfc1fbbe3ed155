// Which shards a build copies into dist/shards/: only those named for it, never whatever else sits in
// the data folder (a researcher's held-out or unlicensed shards beside the demo ones stay where they are).
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The demo shards of ../shared/data: what `npm run build` copies when LOUPE_DEMO_SHARDS is not set. */
export const DEMO_SHARDS = ['medquad', 'r2med-demo', 'vqa-rad', 'xling-med'];

/** A shard folder's name: one path segment, not `.` or `..`, nothing a path could escape with. */
const isFolderName = (n: string) => n !== '.' && n !== '..' && !/[/\\\0]/.test(n);

/**
 * LOUPE_DEMO_SHARDS: folder names under the data folder, separated by commas. Unset: `null`
 * (the default list); set but empty: no shard at all. A name that is not a plain folder name throws.
 */
export function parseDemoShards(value: string | undefined): string[] | null {
  if (value === undefined) return null;
  const names = value
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const bad = names.filter((n) => !isFolderName(n));
  if (bad.length)
    throw new Error(
      `LOUPE_DEMO_SHARDS: ${bad.map((n) => `'${n}'`).join(', ')} ${bad.length === 1 ? 'is not a folder name' : 'are not folder names'} ` +
        '(give the names of shard folders inside LOUPE_DATA_DIR, separated by commas)',
    );
  return [...new Set(names)];
}

/** Whether `dir` is a shard folder (it holds a corpus.jsonl). */
export function isShardFolder(dir: string): boolean {
  return existsSync(join(dir, 'corpus.jsonl')) && statSync(join(dir, 'corpus.jsonl')).isFile();
}

/**
 * The shards a build copies from `dataDir`, sorted by name. With LOUPE_DEMO_SHARDS (`value`), exactly
 * those: a name that is not a shard folder in `dataDir` throws (a build must not silently lack a shard it
 * was asked for). Without it, the demo list: a demo shard that is absent (no shared data folder) is skipped.
 */
export function shardsToCopy(dataDir: string, value: string | undefined): string[] {
  const named = parseDemoShards(value);
  if (named === null) return DEMO_SHARDS.filter((n) => isShardFolder(join(dataDir, n)));
  const missing = named.filter((n) => !isShardFolder(join(dataDir, n)));
  if (missing.length)
    throw new Error(
      `LOUPE_DEMO_SHARDS names ${missing.map((n) => `'${n}'`).join(', ')}, but ${dataDir} has no such shard ` +
        `folder (a folder holding a corpus.jsonl)`,
    );
  return [...named].sort((a, b) => a.localeCompare(b));
}
