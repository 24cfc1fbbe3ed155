// Entry point: settle cross-origin isolation (and the offline service worker) before the app
// starts, so that no import or run begins on a page that is about to reload once.
import { ensureIsolation } from './lib/platform/page/isolation';

// Not under the dev server (which sends COOP/COEP itself): a worker caching there would get in the way.
const isolation = await ensureIsolation({ register: import.meta.env.MODE !== 'development' });
await import('./main');
// Offline after one visit: the worker caches the app shell and the ONNX Runtime wasm in the
// background, once the page is quiet (a link's first query, its model's download and ONNX Runtime's
// start go first).
if (isolation.serviceWorker || navigator.serviceWorker?.controller)
  void import('./lib/platform/page/activity')
    .then((a) => a.whenQuiet())
    .then(() => import('./lib/platform/storage/offline'))
    .then((m) =>
      m.precacheShell().then((r) => {
        if (!r.ok) console.warn(`loupe: offline cache not filled: ${r.error}`);
      }),
    );
