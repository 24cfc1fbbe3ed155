// What `npm run build` copies into dist/shards/: the shards LOUPE_DEMO_SHARDS names, never a folder
// beside them; a name that is not a shard stops the build before anything is written. (The headless
// runner's build, which copies no data at all, is in bench-cli.test.ts.) And what a deployable build
// holds: no generated test model, no source map, a size a course page's host takes, no noise in its log.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
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

/** Every file under `dir` with its size in bytes. */
function sizes(dir: string, prefix = ''): [string, number][] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((e) => {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    return e.isDirectory() ? sizes(dir, rel) : [[rel, statSync(join(dir, rel)).size] as [string, number]];
  });
}

describe('a deployable build (npm run build, no switches)', () => {
  it('ships no generated test model and no source map, fits a course page, and prints no noise', () => {
    const out = join(tmp, 'dist-deploy');
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'production' };
    delete env.LOUPE_TEST_MODELS;
    delete env.LOUPE_SOURCEMAP;
    delete env.LOUPE_DEMO_SHARDS;
    delete env.LOUPE_DATA_DIR;
    const r = spawnSync(join(ROOT, 'node_modules/.bin/vite'), ['build', '--outDir', out, '--emptyOutDir'], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
      timeout: 300_000,
    });
    expect(r.status, r.stderr).toBe(0);
    // The generated random-weight models stay in models/generated/ (LOUPE_TEST_MODELS=1 copies them).
    expect(existsSync(join(out, 'models/generated'))).toBe(false);
    expect(JSON.parse(readFileSync(join(out, 'models/index.json'), 'utf8'))).toEqual({
      version: 1,
      folders: [],
    });
    const files = sizes(out);
    expect(files.filter(([f]) => f.endsWith('.map'))).toEqual([]);
    // Hosts refuse files over 100 MB (GitHub Pages, most LMS file areas).
    expect(files.filter(([, n]) => n > 100e6)).toEqual([]);
    const MB = (n: number) => n / 2 ** 20;
    const app = MB(files.filter(([f]) => !f.startsWith('shards/')).reduce((a, [, n]) => a + n, 0));
    const shards = MB(files.filter(([f]) => f.startsWith('shards/')).reduce((a, [, n]) => a + n, 0));
    // The app is ONNX Runtime's two wasm builds (40 MB: the plain one for a fast first visit, the
    // asyncify one for WebGPU) and about 3 MB of scripts; the demo shards (every one in the data
    // folder unless LOUPE_DEMO_SHARDS names some) come on top.
    console.log(`deployable build: app ${app.toFixed(1)} MB + demo shards ${shards.toFixed(1)} MB`);
    expect(app).toBeLessThan(50);
    expect(app + shards).toBeLessThan(60);
    // Nothing a person deploying the site cannot act on.
    const output = r.stdout + r.stderr;
    expect(output).not.toMatch(/externalized for browser compatibility/);
    expect(output).not.toMatch(/PLUGIN_TIMINGS/);
  });
});
