import { defineConfig, type Plugin } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { createReadStream, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { extname, join, resolve, sep } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { contentSecurityPolicy, extraConnectSources } from './scripts/lib/csp.ts';

/** Cross-origin isolation (SharedArrayBuffer, threaded ORT wasm); mirrored in public/_headers. */
const ISOLATION_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/** Demo shards folder; never copied into the repo or the build. */
const DATA_DIR = resolve(process.env.LOUPE_DATA_DIR ?? resolve(import.meta.dirname, '../shared/data'));

const MIME: Record<string, string> = {
  '.json': 'application/json',
  '.jsonl': 'application/x-ndjson',
  '.tsv': 'text/tab-separated-values; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.webp': 'image/webp',
  '.dcm': 'application/dicom',
};

/** Shards made by scripts (scripts/make-dicom-shard.sh), gitignored; served at /generated-shards/. */
const GENERATED_DIR = resolve(import.meta.dirname, 'generated-shards');

/** Shard folders under DATA_DIR: any folder holding a corpus.jsonl. */
function listShards(): { name: string; url: string }[] {
  if (!existsSync(DATA_DIR)) return [];
  return readdirSync(DATA_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(DATA_DIR, d.name, 'corpus.jsonl')))
    .map((d) => ({ name: d.name, url: `/shards/${d.name}/` }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Serves DATA_DIR at /shards/ (dev and preview): /shards/index.json lists the bundled demo shards,
 * every other path is a file or a real 404 (never the SPA's index.html, which would parse as garbage).
 */
function demoShards(): Plugin {
  const handler = (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const generated = url.pathname.startsWith('/generated-shards/');
    if (!url.pathname.startsWith('/shards/') && !generated) return next();
    for (const [k, v] of Object.entries(ISOLATION_HEADERS)) res.setHeader(k, v);
    if (url.pathname === '/shards/index.json') {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ dataDir: DATA_DIR, shards: listShards() }));
      return;
    }
    const root = generated ? GENERATED_DIR : DATA_DIR;
    const rel = decodeURIComponent(
      url.pathname.slice(generated ? '/generated-shards/'.length : '/shards/'.length),
    );
    const file = resolve(root, rel);
    if (!file.startsWith(root + sep) || !existsSync(file) || !statSync(file).isFile()) {
      res.statusCode = 404;
      res.end('not found');
      return;
    }
    res.setHeader('Content-Type', MIME[extname(file).toLowerCase()] ?? 'application/octet-stream');
    res.setHeader('Content-Length', String(statSync(file).size));
    createReadStream(file).pipe(res);
  };
  return {
    name: 'loupe-demo-shards',
    configureServer: (server) => void server.middlewares.use(handler),
    configurePreviewServer: (server) => void server.middlewares.use(handler),
  };
}

/** Model folder (registry.json, generated test models, any self-hosted hub models), served at /models/. */
const MODELS_DIR = resolve(import.meta.dirname, 'models');

const MODEL_MIME: Record<string, string> = {
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.onnx': 'application/octet-stream',
  '.onnx_data': 'application/octet-stream',
  '.model': 'application/octet-stream',
};

/**
 * Serves MODELS_DIR at /models/ (dev and preview) for transformers.js (`env.localModelPath =
 * '/models/'`): a file, or a real 404 for a missing one (transformers.js then tries the next file
 * or the hub; an SPA index.html would break its JSON parsing). Requests with a query string
 * (`?import` from `import registry from 'models/registry.json'`) are left to Vite.
 */
function modelFiles(): Plugin {
  const handler = (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (!url.pathname.startsWith('/models/') || url.search !== '') return next();
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    for (const [k, v] of Object.entries(ISOLATION_HEADERS)) res.setHeader(k, v);
    let rel: string;
    try {
      rel = decodeURIComponent(url.pathname.slice('/models/'.length));
    } catch {
      rel = '';
    }
    const file = resolve(MODELS_DIR, rel);
    if (!rel || !file.startsWith(MODELS_DIR + sep) || !existsSync(file) || !statSync(file).isFile()) {
      res.statusCode = 404;
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.end('not found');
      return;
    }
    res.setHeader('Content-Type', MODEL_MIME[extname(file).toLowerCase()] ?? 'application/octet-stream');
    res.setHeader('Content-Length', String(statSync(file).size));
    // Regenerated test models must not be served stale from the HTTP cache.
    res.setHeader('Cache-Control', 'no-cache');
    if (req.method === 'HEAD') return void res.end();
    createReadStream(file).pipe(res);
  };
  return {
    name: 'loupe-models',
    configureServer: (server) => void server.middlewares.use(handler),
    configurePreviewServer: (server) => void server.middlewares.use(handler),
  };
}

/** Extra shard hosts allowed by the Content-Security-Policy (build time: a policy cannot be widened at run time). */
const EXTRA_CONNECT = extraConnectSources(process.env.LOUPE_CONNECT_SRC);
const CSP_META_RE = /(<meta\s+http-equiv="Content-Security-Policy"\s+content=")[^"]*(")/;

/**
 * One Content-Security-Policy (scripts/lib/csp.ts) in index.html's <meta> (for hosts that send no
 * headers), in the preview server's header (preview.headers below) and in dist/_headers, each with
 * LOUPE_CONNECT_SRC's extra hosts.
 */
function csp(): Plugin {
  let outDir = 'dist';
  return {
    name: 'loupe-csp',
    configResolved: (c) => void (outDir = resolve(c.root, c.build.outDir)),
    // Only pages that carry the meta (index.html; test harness pages have none). tests/e2e/csp.test.ts
    // checks that the built index.html has it.
    transformIndexHtml: (html) =>
      html.replace(CSP_META_RE, `$1${contentSecurityPolicy({ extraConnect: EXTRA_CONNECT, meta: true })}$2`),
    writeBundle: () => {
      const file = join(outDir, '_headers');
      if (!existsSync(file)) return;
      const policy = contentSecurityPolicy({ extraConnect: EXTRA_CONNECT });
      writeFileSync(file, readFileSync(file, 'utf8').replace(/(Content-Security-Policy: ).*/, `$1${policy}`));
    },
  };
}

export default defineConfig({
  plugins: [svelte(), demoShards(), modelFiles(), csp()],
  server: { host: '127.0.0.1', headers: ISOLATION_HEADERS },
  preview: {
    host: '127.0.0.1',
    headers: {
      ...ISOLATION_HEADERS,
      'Content-Security-Policy': contentSecurityPolicy({ extraConnect: EXTRA_CONNECT }),
    },
  },
  worker: { format: 'es' },
  optimizeDeps: { exclude: ['@huggingface/transformers', 'onnxruntime-web'] },
  build: { target: 'es2022', sourcemap: true },
});
