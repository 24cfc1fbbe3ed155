// Loupe's service worker: one worker for one scope (the app's folder), doing two jobs.
// 1. Cross-origin isolation on hosts that send no COOP/COEP (GitHub Pages, university web space):
//    every same-origin response is re-served with those headers, so the page, once reloaded under
//    this worker, is cross-origin isolated and ONNX Runtime can use WASM threads.
// 2. Offline after one visit: the app shell (index.html, assets/, manifest) and the ONNX Runtime wasm
//    are cached by the precache (asked for by the page once it is quiet), and what later visits fetch
//    is added to that cache; hashed assets are served cache-first, the rest network-first with the
//    cache as a fallback. Shards, runs and embeddings live in IndexedDB and model files in transformers.js's
//    own browser cache, so shards/ and models/ are not cached here (except shards/index.json and models/index.json).
// Plain JavaScript on purpose: public/ is copied verbatim, at a fixed URL, for every host.
/* eslint-env serviceworker */
'use strict';

const SHELL_PREFIX = 'loupe-shell-';
const MARKER = 'X-Loupe-Isolation';
const scope = new URL(self.registration.scope);

self.addEventListener('install', () => self.skipWaiting());

self.addEventListener('activate', (event) => {
  event.waitUntil(self.clients.claim());
});

/** The response with COOP/COEP/CORP added where the server sent none (and a marker saying so). */
function isolate(res) {
  if (res.status === 0 || res.type === 'opaque' || res.type === 'opaqueredirect') return res;
  const headers = new Headers(res.headers);
  const hadHeaders =
    headers.get('Cross-Origin-Opener-Policy') === 'same-origin' &&
    /require-corp|credentialless/.test(headers.get('Cross-Origin-Embedder-Policy') || '');
  if (!hadHeaders) {
    headers.set('Cross-Origin-Opener-Policy', 'same-origin');
    headers.set('Cross-Origin-Embedder-Policy', 'require-corp');
    headers.set(MARKER, 'service-worker');
  } else headers.set(MARKER, 'headers');
  if (!headers.has('Cross-Origin-Resource-Policy'))
    headers.set('Cross-Origin-Resource-Policy', 'cross-origin');
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}

/** Path of a URL relative to the scope ('' for the scope itself), or null outside it. */
function inScope(url) {
  if (url.origin !== scope.origin || !url.pathname.startsWith(scope.pathname)) return null;
  return url.pathname.slice(scope.pathname.length);
}

/**
 * The newest app-shell cache, or null before the first precache has made one. A first visit keeps
 * nothing as it goes: the precache, once the page is quiet, fetches every shell file into a new
 * versioned cache and drops any other, so copies kept during the visit would only be work (a clone
 * and a Cache Storage write of each asset, the 14 MB ONNX Runtime wasm among them) while the visitor
 * waits for the first result.
 */
async function shellCache() {
  const names = (await caches.keys()).filter((n) => n.startsWith(SHELL_PREFIX)).sort();
  return names.length ? caches.open(names.at(-1)) : null;
}

/** Whether a response for this path is worth keeping for offline use. */
function cacheable(rel, req) {
  if (req.mode === 'navigate') return true;
  if (rel.startsWith('models/')) return rel === 'models/index.json';
  if (rel.startsWith('shards/')) return rel === 'shards/index.json';
  return true;
}

async function fromCache(req, rel) {
  const opts = { ignoreSearch: req.mode === 'navigate' || rel === '' };
  for (const name of (await caches.keys())
    .filter((n) => n.startsWith(SHELL_PREFIX))
    .sort()
    .reverse()) {
    const c = await caches.open(name);
    const hit =
      (await c.match(req, opts)) ||
      (req.mode === 'navigate'
        ? (await c.match(scope.href)) || (await c.match(new URL('index.html', scope)))
        : undefined);
    if (hit) return hit;
  }
  return undefined;
}

async function handle(req, rel) {
  // Content-hashed build assets never change: cache first.
  if (rel.startsWith('assets/')) {
    const hit = await fromCache(req, rel);
    if (hit) return isolate(hit);
  }
  try {
    const keep = req.method === 'GET' && cacheable(rel, req) ? shellCache().catch(() => null) : null;
    const res = await fetch(req);
    const cache = res.ok && keep ? await keep : null;
    if (cache) cache.put(req, res.clone()).catch(() => undefined);
    return isolate(res);
  } catch (e) {
    if (req.method === 'GET' || req.method === 'HEAD') {
      const hit = await fromCache(
        new Request(req.url, { mode: req.mode === 'navigate' ? 'same-origin' : req.mode }),
        rel,
      );
      if (hit) return isolate(hit);
    }
    throw e;
  }
}

self.addEventListener('fetch', (event) => {
  const req = event.request;
  const url = new URL(req.url);
  const rel = inScope(url);
  // Other origins (the model hub, remote shards) are left to the browser: CORS requests need no CORP.
  if (rel === null) return;
  if (req.cache === 'only-if-cached' && req.mode !== 'same-origin') return;
  // Data the app fetches (shard files, model files) passes by: a fetch() of same-origin data needs no
  // isolation header, the data is kept elsewhere (IndexedDB, transformers.js's cache), and a trip
  // through this worker costs time on every file (a shard's hundreds of images, a model's megabytes).
  // Pages, build assets (ONNX Runtime's wasm) and the index.json lists still go through (isolated,
  // cached for offline).
  const page = rel === '' || rel.endsWith('.html');
  if (req.destination === '' && !page && !rel.startsWith('assets/') && !/(^|\/)index\.json$/.test(rel))
    return;
  event.respondWith(handle(req, rel));
});

/**
 * Caches every file the build lists in sw-precache.json (the app shell and the ONNX Runtime wasm)
 * under loupe-shell-<version>, then drops older versions. Answers the page with the outcome.
 */
async function precache() {
  const res = await fetch(new URL('sw-precache.json', scope), { cache: 'no-cache' });
  if (!res.ok) throw new Error(`sw-precache.json: HTTP ${res.status}`);
  const manifest = await res.json();
  const name = SHELL_PREFIX + manifest.version;
  const cache = await caches.open(name);
  const want = ['', ...manifest.files].map((f) => new URL(f, scope).href);
  const have = new Set((await cache.keys()).map((r) => r.url));
  for (const url of want) {
    if (have.has(url)) continue;
    const r = await fetch(url, { cache: 'no-cache' });
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
    await cache.put(url, r);
  }
  for (const old of await caches.keys())
    if (old.startsWith(SHELL_PREFIX) && old !== name) await caches.delete(old);
  return { version: manifest.version, files: want.length };
}

self.addEventListener('message', (event) => {
  const msg = event.data || {};
  if (msg.type !== 'precache') return;
  const port = event.ports[0];
  event.waitUntil(
    precache().then(
      (r) => port && port.postMessage({ ok: true, ...r }),
      (e) => port && port.postMessage({ ok: false, error: String((e && e.message) || e) }),
    ),
  );
});
