// What `npm run build` copies into dist/shards/: the shards LOUPE_DEMO_SHARDS names, never a folder
// beside them; a name that is not a shard stops the build before anything is written. (The headless
// runner's build, which copies no data at all, is in bench-cli.test.ts.)
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const tmp = mkdtempSync(join(tmpdir(), 'loupe-build-shards-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A folder that holds a corpus.jsonl (all the build looks at), with `text` in it. */
function shard(name: string, text: string) {
  const dir = join(tmp, 'data', name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'corpus.jsonl'), JSON.stringify({ _id: 'd1', text }) + '\n');
}

function build(outDir: string, env: Record<string, string>) {
  return spawnSync(
    join(ROOT, 'node_modules/.bin/vite'),
    ['build', '--outDir', outDir, '--emptyOutDir', '--logLevel', 'warn'],
    {
      cwd: ROOT,
      env: { ...process.env, NODE_ENV: 'production', LOUPE_DATA_DIR: join(tmp, 'data'), ...env },
      encoding: 'utf8',
      timeout: 300_000,
    },
  );
}

describe('the build copies only the shards named for it', () => {
  shard('course', 'public course shard');
  shard('held-out', 'heldoutprivatetext');

  it('LOUPE_DEMO_SHARDS=course: course is copied and listed, the folder beside it is not', () => {
    const out = join(tmp, 'dist');
    const r = build(out, { LOUPE_DEMO_SHARDS: 'course' });
    expect(r.status).toBe(0);
    expect(readdirSync(join(out, 'shards')).sort()).toEqual(['course', 'index.json']);
    expect(JSON.parse(readFileSync(join(out, 'shards/index.json'), 'utf8'))).toEqual({
      shards: [{ name: 'course', url: 'shards/course/' }],
    });
    expect(readFileSync(join(out, 'shards/course/corpus.jsonl'), 'utf8')).toContain('public course shard');
    expect(existsSync(join(out, 'shards/held-out'))).toBe(false);
  });

  it('a name that is not a shard folder there: the build stops, says which, and writes nothing', () => {
    const out = join(tmp, 'dist-bad');
    const r = build(out, { LOUPE_DEMO_SHARDS: 'course,nope' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(
      `LOUPE_DEMO_SHARDS names 'nope', but ${join(tmp, 'data')} has no such shard folder (a folder holding a corpus.jsonl)`,
    );
    expect(existsSync(out)).toBe(false);
  });
});
