import { defineConfig } from 'vitest/config';

// Unit tests run in Node against pure core code; e2e tests drive real headless Chromium
// (playwright-core + Debian's /usr/bin/chromium) against the site served by globalSetup (the
// production build, or the dev server with LOUPE_E2E_SERVER=dev).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['tests/unit/**/*.test.ts'],
          environment: 'node',
          // A limit catches a hang; it never measures speed. The heaviest unit test takes about 5 s on
          // an idle 2-core machine and about 4× that in `npm run test:slow` (one core shared with a
          // busy process): these limits sit far above both, and the summary (scripts/test-summary.mjs)
          // warns about any test past a quarter of its limit.
          testTimeout: 120_000,
          hookTimeout: 300_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['tests/e2e/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['tests/e2e/global-setup.ts'],
          // A limit catches a hang. With the suite on one core (2026-12-03, 2-core EPYC: npm test pinned
          // to one core beside test:slow on the other) the heaviest tests under this limit took 99 s
          // (reference-check on SwiftShader WebGPU) and 90 s (encoders WebGPU/WASM): 55 % and 50 % of
          // the 180 s it was, so a machine half as fast again would fail them. 360 s puts them near a
          // quarter.
          testTimeout: 360_000,
          hookTimeout: 360_000,
          // Two files at a time: one file alone keeps a 2-core machine about 75 % busy (page loads,
          // range servers and workers wait on each other), two keep it 98 % busy and finish the
          // suite 1.2× sooner (1,090 s → 904 s here). Every file has its own browser profile, ports
          // and temporary folders; they share only the site's server.
          fileParallelism: true,
          maxWorkers: 2,
          // Each file in a worker thread that stays up for the next file, its modules kept (no file
          // changes global state: every file starts its own browser, servers and folders). A fresh
          // process per file cost each file a process start and playwright's import: on 12 short
          // files, 87–91 s against 100–125 s in alternating rounds (2-core EPYC, load 8–12).
          pool: 'threads',
          isolate: false,
        },
      },
    ],
  },
});
