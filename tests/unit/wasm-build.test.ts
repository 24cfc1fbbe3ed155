// The HNSW engine's wasm is committed (src/lib/wasm/generated) so that fresh machines need no
// Emscripten. Where Emscripten and the hnswlib headers are installed, this rebuilds it from source
// into a temporary folder and checks that the committed files are reproduced byte for byte.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const COMMITTED = join(ROOT, 'src/lib/wasm/generated');
const FILES = ['hnsw.wasm', 'hnsw.mjs', 'hnsw.d.mts'];
const hasEmcc = spawnSync('sh', ['-c', 'command -v emcc'], { stdio: 'ignore' }).status === 0;
const hasHeaders = existsSync('/usr/include/hnswlib/hnswalg.h');

describe('committed HNSW wasm', () => {
  it('is present (npm start and the build need no Emscripten)', () => {
    for (const f of FILES) expect(existsSync(join(COMMITTED, f)), f).toBe(true);
    // A real wasm module, not a Git LFS pointer or an empty file.
    expect([...readFileSync(join(COMMITTED, 'hnsw.wasm')).subarray(0, 4)]).toEqual([0, 0x61, 0x73, 0x6d]);
  });

  it.skipIf(!hasEmcc || !hasHeaders)(
    'is what scripts/build-wasm.sh builds from src/lib/wasm/hnsw.cpp, byte for byte',
    () => {
      const out = mkdtempSync(join(tmpdir(), 'loupe-wasm-'));
      try {
        execFileSync('bash', ['scripts/build-wasm.sh'], {
          cwd: ROOT,
          env: { ...process.env, LOUPE_WASM_OUT: out },
          stdio: 'pipe',
        });
        for (const f of FILES) {
          const fresh = readFileSync(join(out, f));
          const committed = readFileSync(join(COMMITTED, f));
          // On a difference: run `npm run build:wasm` and commit src/lib/wasm/generated.
          expect(fresh.equals(committed), `${f} differs from a rebuild: run npm run build:wasm`).toBe(true);
        }
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    },
    180_000,
  );
});
