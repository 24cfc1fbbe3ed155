import { defineConfig, type Plugin } from 'vite';
import type { LogLevel, LogOrStringHandler, RollupLog } from 'rolldown';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { createHash } from 'node:crypto';
import {
  chmodSync,
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
import { gzipSync } from 'node:zlib';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { modelIndex } from './scripts/lib/model-index.ts';
import { contentSecurityPolicy, extraConnectSources, headersFile, SITE_HEADERS } from './scripts/lib/csp.ts';
import { isShardFolder, parseDemoShards, shardsToCopy } from './scripts/lib/demo-shards.ts';

/** Cross-origin isolation (SharedArrayBuffer, threaded ORT wasm) and CORS/CORP for the embed; as in dist/_headers. */
const ISOLATION_HEADERS = SITE_HEADERS;

/**
 * The data folder (LOUPE_DATA_DIR, default ../shared/data), read when used: scripts/bench.ts points it
 * at the folder of the shard it was given. Only named shards are ever copied from it (shardsToCopy).
 */
const dataDir = () => resolve(process.env.LOUPE_DATA_DIR ?? resolve(import.meta.dirname, '../shared/data'));

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
 * The shards served at /shards/ by the dev and preview servers: those named by LOUPE_DEMO_SHARDS when it
 * is set, else every folder of the data folder that holds a corpus.jsonl.
 */
function servedShards(): string[] {
  const dir = dataDir();
  const named = parseDemoShards(process.env.LOUPE_DEMO_SHARDS);
  if (named) return named.filter((n) => isShardFolder(join(dir, n)));
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && isShardFolder(join(dir, d.name)))
    .map((d) => d.name);
}

/** Adds the owner's write permission to a copied tree (cpSync keeps the source's read-only modes). */
function ownWritable(path: string): void {
  const st = statSync(path);
  chmodSync(path, st.mode | 0o200);
  if (st.isDirectory()) for (const e of readdirSync(path)) ownWritable(join(path, e));
}

/**
 * shards/index.json's list. URLs are relative to the page (`shards/<name>/`), so the same list works at
 * the origin root and under any sub-path.
 */
function shardList(names: string[]): { name: string; url: string }[] {
  return [...names].sort((a, b) => a.localeCompare(b)).map((name) => ({ name, url: `shards/${name}/` }));
}

/**
 * Serves the served shards (servedShards) at /shards/ (dev and preview): /shards/index.json lists them,
 * every other path is a file of one of them or a real 404 (never the SPA's index.html, which would parse
 * as garbage; never a file of another folder beside them).
 */
function demoShards(): Plugin {
  const handler = (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const generated = url.pathname.startsWith('/generated-shards/');
    if (!url.pathname.startsWith('/shards/') && !generated) return next();
    for (const [k, v] of Object.entries(ISOLATION_HEADERS)) res.setHeader(k, v);
    if (url.pathname === '/shards/index.json') {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ shards: shardList(servedShards()) }));
      return;
    }
    let rel = '';
    try {
      rel = decodeURIComponent(
        url.pathname.slice(generated ? '/generated-shards/'.length : '/shards/'.length),
      );
    } catch {
      // A malformed escape: not found.
    }
    const top = rel.split('/')[0];
    const root = generated ? GENERATED_DIR : join(dataDir(), top);
    const file = resolve(root, generated ? rel : rel.slice(top.length + 1));
    if (
      (!generated && !servedShards().includes(top)) ||
      !file.startsWith(root + sep) ||
      !existsSync(file) ||
      !statSync(file).isFile()
    ) {
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
    // A bad LOUPE_DEMO_SHARDS fails at start: before the first request, before a build writes anything.
    configResolved: (config) =>
      void (config.command === 'build'
        ? shardsToCopy(dataDir(), process.env.LOUPE_DEMO_SHARDS)
        : parseDemoShards(process.env.LOUPE_DEMO_SHARDS)),
    configureServer: (server) => void server.middlewares.use(handler),
    configurePreviewServer: (server) => void server.middlewares.use(handler),
    // A static deployment has no middleware: the shards named for the build (LOUPE_DEMO_SHARDS, else the
    // demo list) and their index go into dist/shards/. Nothing else of the data folder is copied.
    writeBundle(options) {
      const out = resolve(options.dir ?? 'dist', 'shards');
      const names = shardsToCopy(dataDir(), process.env.LOUPE_DEMO_SHARDS);
      mkdirSync(out, { recursive: true });
      for (const n of names) {
        cpSync(join(dataDir(), n), join(out, n), { recursive: true });
        // The copy is the build's own: writable even when the data folder is read-only, so that
        // build:demo's pack-shard can add to it and the next build can empty dist/.
        ownWritable(join(out, n));
      }
      writeFileSync(join(out, 'index.json'), JSON.stringify({ shards: shardList(names) }, null, 2) + '\n');
    },
  };
}

/** Model folder (registry.json, generated test models, any self-hosted hub models), served at /models/. */
const MODELS_DIR = resolve(import.meta.dirname, 'models');
/**
 * Build logs without noise: the DICOM codecs' emscripten glue names `fs` and `path` on its Node branch,
 * which a browser never runs; Vite's empty stand-ins are right, and its warnings about them (18 of
 * them) say nothing a person deploying the site can act on.
 */
function quietLog(level: LogLevel, log: RollupLog, handler: LogOrStringHandler): void {
  if (/externalized for browser compatibility, imported by ".*@cornerstonejs\/codec-/.test(log.message))
    return;
  handler(level, log);
}

/** A test build (LOUPE_TEST_MODELS=1): dist/ gets the generated test models too. */
const TEST_MODELS = process.env.LOUPE_TEST_MODELS === '1';

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
    if (rel === 'index.json') {
      // The served model folders, listed now (a model generated while the server runs is included).
      res.setHeader('Content-Type', 'application/json');
      res.setHeader('Cache-Control', 'no-cache');
      return void res.end(req.method === 'HEAD' ? undefined : JSON.stringify(modelIndex(MODELS_DIR)));
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
    // Self-hosted models (a copy of a hub model under models/) are the offline models of a static
    // deploy. The generated random-weight test models (317 MiB) only with LOUPE_TEST_MODELS=1: a
    // test build; a deployable site never ships them.
    writeBundle(options) {
      const out = resolve(options.dir ?? 'dist', 'models');
      for (const e of existsSync(MODELS_DIR) ? readdirSync(MODELS_DIR, { withFileTypes: true }) : [])
        if (e.isDirectory() && (e.name !== 'generated' || TEST_MODELS))
          cpSync(join(MODELS_DIR, e.name), join(out, e.name), { recursive: true });
      // The model folders it copied, listed once for the page (no HEAD probe per model).
      mkdirSync(out, { recursive: true });
      writeFileSync(join(out, 'index.json'), JSON.stringify(modelIndex(out), null, 2) + '\n');
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
        .filter(
          (f) => !/^(shards|models)\//.test(f) || f === 'shards/index.json' || f === 'models/index.json',
        )
        .filter((f) => !f.endsWith('.map') && f !== 'sw.js' && f !== 'sw-precache.json' && f !== '_headers')
        .sort();
      const hash = createHash('sha256');
      for (const f of files) hash.update(f).update(readFileSync(join(outDir, f)));
      const version = hash.digest('hex').slice(0, 16);
      writeFileSync(join(outDir, 'sw-precache.json'), JSON.stringify({ version, files }, null, 2) + '\n');
    },
  };
}

/** EMBED_BUDGET_GZIP: the embed's own code (see embedSize), gzipped, at most. */
const EMBED_BUDGET_GZIP = 150 * 1024;

/**
 * Measures the embed's code and writes dist/embed-size.json (quoted in BENCHMARKS.md), gzipped
 * (level 9) file by file; no wasm and no model file is counted. `own`: what every embed loads to
 * answer a query, without ONNX Runtime — the element (loupe-embed.js), embed.html's JS and CSS
 * (its entry, the embed module it imports at start, and their static imports) and the two workers it
 * always starts (shard import, BM25). Listed apart: code loaded only on demand (DICOM codecs, the
 * Parquet reader, the offline helpers), the HNSW and statistics workers, and the encoder worker
 * (transformers.js and ONNX Runtime's JavaScript, with Loupe's encoder code).
 */
function embedSize(): Plugin {
  return {
    name: 'loupe-embed-size',
    apply: 'build',
    generateBundle(_options, bundle) {
      const gz = (source: string | Uint8Array) => gzipSync(source, { level: 9 }).length;
      const files = new Map<string, { bytes: number; gzip: number; kind: string }>();
      const add = (fileName: string, kind: string, follow: 'static' | 'all' = 'static') => {
        const out = bundle[fileName];
        if (!out || files.has(fileName)) return;
        const source = out.type === 'chunk' ? out.code : out.source;
        files.set(fileName, { bytes: Buffer.byteLength(source), gzip: gz(source), kind });
        if (out.type !== 'chunk') return;
        for (const f of out.imports) add(f, kind, follow);
        for (const css of out.viteMetadata?.importedCss ?? []) add(css, kind, follow);
        if (follow === 'all') for (const f of out.dynamicImports) add(f, kind, follow);
      };
      const chunks = Object.values(bundle).filter((o) => o.type === 'chunk');
      const entry = chunks.find((o) => o.facadeModuleId?.endsWith('/embed.html'));
      const main = chunks.find((o) => o.facadeModuleId?.endsWith('/src/embed/embed-main.ts'));
      if (!entry || !main) return this.warn('embed: embed.html or its module not found in the bundle');
      add('loupe-embed.js', 'element');
      add(entry.fileName, 'page');
      add(main.fileName, 'page');
      // Everything else embed.html can reach: loaded on demand.
      for (const f of [...entry.dynamicImports, ...main.dynamicImports]) add(f, 'on-demand', 'all');
      for (const c of chunks)
        if (files.get(c.fileName)?.kind === 'page')
          for (const f of c.dynamicImports) add(f, 'on-demand', 'all');
      for (const o of Object.values(bundle)) {
        const m =
          o.type === 'asset' && /(shard|retrieval|index|stats|encoder)\.worker-[\w-]+\.js$/.exec(o.fileName);
        if (m)
          add(
            o.fileName,
            m[1] === 'encoder'
              ? 'encoder-worker'
              : m[1] === 'shard' || m[1] === 'retrieval'
                ? 'worker'
                : 'worker-on-demand',
          );
      }
      const list = [...files].map(([file, v]) => ({ file, ...v })).sort((a, b) => b.gzip - a.gzip);
      const sum = (...kinds: string[]) =>
        list.filter((f) => kinds.includes(f.kind)).reduce((a, f) => a + f.gzip, 0);
      const report = {
        budgetGzip: EMBED_BUDGET_GZIP,
        ownGzip: sum('element', 'page', 'worker'),
        elementGzip: sum('element'),
        pageGzip: sum('page'),
        workersGzip: sum('worker'),
        onDemandGzip: sum('on-demand', 'worker-on-demand'),
        encoderWorkerGzip: sum('encoder-worker'),
        files: list,
      };
      this.emitFile({
        type: 'asset',
        fileName: 'embed-size.json',
        source: JSON.stringify(report, null, 2) + '\n',
      });
      const kB = (n: number) => `${(n / 1024).toFixed(1)} kB`;
      this.info(
        `embed: own code ${kB(report.ownGzip)} gzipped (budget ${kB(EMBED_BUDGET_GZIP)}): element ${kB(report.elementGzip)}, ` +
          `page ${kB(report.pageGzip)}, shard + BM25 workers ${kB(report.workersGzip)}; on demand ${kB(report.onDemandGzip)}; ` +
          `encoder worker (transformers.js + ONNX Runtime JS) ${kB(report.encoderWorkerGzip)}`,
      );
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
    writeBundle: () => writeFileSync(join(outDir, '_headers'), headersFile(EXTRA_CONNECT)),
    // The preview server sends the policy as a header: embed.html's may be framed, the app's not.
    configurePreviewServer: (server) =>
      void server.middlewares.use((req, res, next) => {
        const framed = /\/embed\.html$/.test(new URL(req.url ?? '/', 'http://x').pathname);
        res.setHeader(
          'Content-Security-Policy',
          contentSecurityPolicy({ extraConnect: EXTRA_CONNECT, framed }),
        );
        next();
      }),
  };
}

export default defineConfig({
  // Relative asset URLs: dist/ runs from any static host, at the root or under a sub-path.
  base: './',
  plugins: [svelte(), demoShards(), modelFiles(), csp(), precacheList(), embedSize()],
  server: { host: '127.0.0.1', headers: ISOLATION_HEADERS },
  preview: {
    host: '127.0.0.1',
    headers: ISOLATION_HEADERS,
  },
  // Workers are bundled by their own rolldown run: the same quiet logs.
  worker: { format: 'es', rolldownOptions: { checks: { pluginTimings: false }, onLog: quietLog } },
  optimizeDeps: {
    exclude: ['@huggingface/transformers', 'onnxruntime-web'],
    // Dependencies the scan of the HTML entries cannot see: those of workers and of dynamic imports
    // (Snowball, hyparquet, the DICOM reader). Pre-bundled at start, so that the dev server never
    // re-optimizes in the middle of a session (its reload breaks the dynamic import in flight).
    include: [
      'comlink',
      'idb',
      'fflate',
      'dicom-parser',
      'jpeg-lossless-decoder-js',
      'stemmer',
      'snowball-stemmers',
      'hyparquet',
      'hyparquet-compressors',
      ...['finnish', 'french', 'german', 'italian', 'portuguese', 'russian', 'spanish', 'turkish'].map(
        (l) => `@orama/stopwords/${l}`,
      ),
    ],
  },
  build: {
    target: 'es2022',
    // Source maps (11 MB) only when asked for (LOUPE_SOURCEMAP=1): a course page's host counts bytes.
    sourcemap: process.env.LOUPE_SOURCEMAP === '1',
    rolldownOptions: {
      // Plugin timing reports say nothing a person deploying the site can act on.
      checks: { pluginTimings: false },
      onLog: quietLog,
      // The app, the embed page (embed.html) and the element's module, which keeps a fixed name at the
      // root of dist/ so that course pages can load it (`loupe-embed.js`).
      input: {
        main: resolve(import.meta.dirname, 'index.html'),
        embed: resolve(import.meta.dirname, 'embed.html'),
        'loupe-embed': resolve(import.meta.dirname, 'src/embed/loupe-embed.ts'),
      },
      output: {
        entryFileNames: (chunk) =>
          chunk.name === 'loupe-embed' ? 'loupe-embed.js' : 'assets/[name]-[hash].js',
      },
    },
  },
});
