import { build, createServer, preview, type PreviewServer, type ViteDevServer } from 'vite';
import type { TestProject } from 'vitest/node';
import { createReadStream, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import type { Plugin } from 'vite';

let server: ViteDevServer | PreviewServer | undefined;
let outDir: string | undefined;

const HARNESS_DIR = resolve(import.meta.dirname, '../browser');
const FIXTURES_DIR = resolve(import.meta.dirname, '../fixtures');

/**
 * The preview server serves only the build; the dev server serves every file of the repository, and
 * two files (analyzers, parquet) fetch the shards they generate under tests/fixtures/ from it. This
 * serves that folder alone, read-only, to the build's server (a real 404 for anything else there).
 */
function fixtureFiles(): Plugin {
  const handler = (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    if (!path.startsWith('/tests/fixtures/')) return next();
    const file = resolve(FIXTURES_DIR, path.slice('/tests/fixtures/'.length));
    if (!file.startsWith(FIXTURES_DIR + sep) || !existsSync(file) || !statSync(file).isFile()) {
      res.statusCode = 404;
      return void res.end('not found');
    }
    res.setHeader('Content-Length', String(statSync(file).size));
    createReadStream(file).pipe(res);
  };
  return { name: 'loupe-e2e-fixtures', configurePreviewServer: (s) => void s.middlewares.use(handler) };
}

/**
 * The site the e2e files drive, started once for all of them (LOUPE_E2E_SERVER):
 * - `build` (default): the production build (what a deployment serves: bundled, minified, with its
 *   service worker), written to a temporary folder with the test harness pages (tests/browser/*.html)
 *   as extra entries, served by Vite's preview server with the same middleware (demo shards, models,
 *   COOP/COEP, CSP). A fresh browser profile starts the app in ~1.5 s this way, against ~3.5–6 s from
 *   the dev server, which sends some 250 modules one by one: the suite opens well over a hundred.
 * - `dev`: the Vite dev server, to debug a test against unbundled sources.
 */
export async function setup(project: TestProject) {
  const kind = process.env.LOUPE_E2E_SERVER ?? 'build';
  if (kind !== 'build' && kind !== 'dev')
    throw new Error(`LOUPE_E2E_SERVER: ${kind} is neither build nor dev`);
  if (kind === 'dev') {
    server = await createServer({
      configFile: 'vite.config.ts',
      // No HMR and no file watching: e2e files run two at a time, and a file that builds the site
      // (deploy, embed, url-state…) writes index.html into its output folder, on which a watching
      // server sent every open page a full reload: the other file's page lost its import mid-way.
      server: { port: 0, host: '127.0.0.1', strictPort: false, hmr: false, watch: null },
      logLevel: 'warn',
    });
    await server.listen();
  } else {
    outDir = mkdtempSync(join(tmpdir(), 'loupe-e2e-site-'));
    const harnesses = Object.fromEntries(
      readdirSync(HARNESS_DIR)
        .filter((f) => f.endsWith('.html'))
        .map((f) => [`harness-${f.replace(/\.html$/, '')}`, join(HARNESS_DIR, f)]),
    );
    // The tests' own servers (range servers, shard hosts) listen on other ports of 127.0.0.1: the
    // site's Content-Security-Policy names them as a deployment names its shard hosts. Only for this
    // build and its server: files that build the site themselves (csp, deploy…) see the variable unset.
    const connect = process.env.LOUPE_CONNECT_SRC;
    process.env.LOUPE_CONNECT_SRC = 'http://127.0.0.1:*';
    try {
      await build({
        configFile: 'vite.config.ts',
        logLevel: 'warn',
        build: { outDir, emptyOutDir: true, rolldownOptions: { input: harnesses } },
      });
      server = await preview({
        configFile: 'vite.config.ts',
        build: { outDir },
        plugins: [fixtureFiles()],
        preview: { port: 0, host: '127.0.0.1', strictPort: false },
        logLevel: 'warn',
      });
    } finally {
      if (connect === undefined) delete process.env.LOUPE_CONNECT_SRC;
      else process.env.LOUPE_CONNECT_SRC = connect;
    }
  }
  const address = server.httpServer?.address();
  if (!address || typeof address === 'string') throw new Error('vite did not bind a TCP port');
  project.provide('baseUrl', `http://127.0.0.1:${address.port}`);
}

export async function teardown() {
  await server?.close();
  if (outDir) rmSync(outDir, { recursive: true, force: true });
}

declare module 'vitest' {
  export interface ProvidedContext {
    baseUrl: string;
  }
}
