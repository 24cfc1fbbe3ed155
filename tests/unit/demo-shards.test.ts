// What a build copies into dist/shards/ (scripts/lib/demo-shards.ts, used by vite.config.ts and
// pack-shard --demo): LOUPE_DEMO_SHARDS's shards, else the demo list, never another folder beside them.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEMO_SHARDS, parseDemoShards, shardsToCopy } from '../../scripts/lib/demo-shards';

const tmp = mkdtempSync(join(tmpdir(), 'loupe-demo-shards-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function folder(name: string, shards: string[], others: string[] = []): string {
  const dir = join(tmp, name);
  for (const s of shards) {
    mkdirSync(join(dir, s), { recursive: true });
    writeFileSync(join(dir, s, 'corpus.jsonl'), '{"_id":"d1","text":"x"}\n');
  }
  // Folders that are not shards (no corpus.jsonl).
  for (const o of others) mkdirSync(join(dir, o), { recursive: true });
  return dir;
}

describe('shards a build copies', () => {
  it('without LOUPE_DEMO_SHARDS: the demo shards present, never a private shard beside them', () => {
    const dir = folder('default', ['medquad', 'vqa-rad', 'held-out-private'], ['notes']);
    expect(shardsToCopy(dir, undefined)).toEqual(['medquad', 'vqa-rad']);
    expect(DEMO_SHARDS).not.toContain('held-out-private');
  });

  it('no data folder: nothing, no error', () => {
    expect(shardsToCopy(join(tmp, 'absent'), undefined)).toEqual([]);
  });

  it('LOUPE_DEMO_SHARDS: exactly the named shards (commas, spaces trimmed); empty: none', () => {
    const dir = folder('named', ['a', 'b b', 'c', 'medquad']);
    expect(shardsToCopy(dir, 'c, a')).toEqual(['a', 'c']);
    expect(shardsToCopy(dir, 'b b,a,a')).toEqual(['a', 'b b']);
    expect(shardsToCopy(dir, '')).toEqual([]);
    expect(shardsToCopy(dir, ' , ')).toEqual([]);
  });

  it('a named shard that is not there, or not a shard folder: an error naming it and the folder', () => {
    const dir = folder('missing', ['a'], ['empty']);
    expect(() => shardsToCopy(dir, 'a,zz')).toThrow(
      `LOUPE_DEMO_SHARDS names 'zz', but ${dir} has no such shard folder (a folder holding a corpus.jsonl)`,
    );
    expect(() => shardsToCopy(dir, 'empty')).toThrow(/names 'empty'/);
  });

  it('names that are paths are refused: nothing outside the data folder can be named', () => {
    expect(() => parseDemoShards('../secret')).toThrow(
      "LOUPE_DEMO_SHARDS: '../secret' is not a folder name (give the names of shard folders inside LOUPE_DATA_DIR, separated by commas)",
    );
    expect(() => parseDemoShards('a,..,/etc')).toThrow("'..', '/etc' are not folder names");
    expect(() => parseDemoShards('a\\b')).toThrow(/is not a folder name/);
    expect(parseDemoShards(undefined)).toBeNull();
  });
});
