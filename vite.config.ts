import { defineConfig, type Plugin } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { createHash } from 'node:crypto';
import {
  cpSync,
  createReadStream,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
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

/**
 * Shard folders under DATA_DIR: any folder holding a corpus.jsonl. URLs are relative to the page
 * (`shards/<name>/`), so the same list works at the origin root and under any sub-path.
 */
function listShards(): { name: string; url: string }[] {
  if (!existsSync(DATA_DIR)) return [];
  return readdirSync(DATA_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(DATA_DIR, d.name, 'corpus.jsonl')))
    .map((d) => ({ name: d.name, url: `shards/${d.name}/` }))
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
      res.end(JSON.stringify({ shards: listShards() }));
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
    // A static deployment has no middleware: the shards and their index go into dist/shards/.
    writeBundle(options) {
      const out = resolve(options.dir ?? 'dist', 'shards');
      const shards = listShards();
      mkdirSync(out, { recursive: true });
      for (const s of shards) cpSync(join(DATA_DIR, s.name), join(out, s.name), { recursive: true });
      writeFileSync(join(out, 'index.json'), JSON.stringify({ shards }, null, 2) + '\n');
    },
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
    // The generated test models and any self-hosted ones are the offline models of a static deploy.
    writeBundle(options) {
      const out = resolve(options.dir ?? 'dist', 'models');
      for (const e of existsSync(MODELS_DIR) ? readdirSync(MODELS_DIR, { withFileTypes: true }) : [])
        if (e.isDirectory()) cpSync(join(MODELS_DIR, e.name), join(out, e.name), { recursive: true });
    },
  };
}

/** Every file under `dir`, as paths relative to it with '/'. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((e) => {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    return e.isDirectory() ? filesUnder(dir, rel) : [rel];
  });
}

/**
 * Writes dist/sw-precache.json for the service worker (public/sw.js): the app shell, the ONNX
 * Runtime wasm and the demo shard list, under a version that changes with any of them. Shards and
 * models stay out: they are cached in IndexedDB and transformers.js's browser cache.
 */
function precacheList(): Plugin {
  let outDir = 'dist';
  return {
    name: 'loupe-precache',
    apply: 'build',
    writeBundle(options) {
      outDir = options.dir ?? outDir;
    },
    // After every writeBundle (shards and models are copied there).
    closeBundle() {
      const files = filesUnder(outDir)
        .filter((f) => !/^(shards|models)\//.test(f) || f === 'shards/index.json')
        .filter((f) => !f.endsWith('.map') && f !== 'sw.js' && f !== 'sw-precache.json' && f !== '_headers')
        .sort();
      const hash = createHash('sha256');
      for (const f of files) hash.update(f).update(readFileSync(join(outDir, f)));
      const version = hash.digest('hex').slice(0, 16);
      writeFileSync(join(outDir, 'sw-precache.json'), JSON.stringify({ version, files }, null, 2) + '\n');
    },
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
  // Relative asset URLs: dist/ runs from any static host, at the root or under a sub-path.
  base: './',
  plugins: [svelte(), demoShards(), modelFiles(), csp(), precacheList()],
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
