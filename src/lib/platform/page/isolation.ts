// Cross-origin isolation (SharedArrayBuffer, so ORT runs its WASM on 2 threads) on any static host.
// A server that sends COOP/COEP isolates the page by itself ('headers'). Otherwise the app's service
// worker (public/sw.js, also the offline cache) re-serves every same-origin response with those
// headers, and the page reloads once to come back under them ('service-worker'). Where even that is
// impossible (no service workers: private windows, sandboxed or cross-origin iframes without
// allow="cross-origin-isolated", plain http) the app runs on one thread ('none') and says why.
import { wasmThreads } from '../gpu/backend';

/** How the page got (or did not get) cross-origin isolation. */
export type Isolation = 'headers' | 'service-worker' | 'none';

/** What the UI shows: how the page is isolated, why not when it is not, and the WASM threads that gives. */
export interface IsolationStatus {
  isolation: Isolation;
  /** One sentence for the UI; for 'none' it says why and what it costs. */
  reason: string;
  /** ORT WASM threads this page can use. */
  threads: number;
  /** Whether the service worker (offline cache) controls this page. */
  serviceWorker: boolean;
}

/** SW_URL: the service worker, relative to the page (its folder is the worker's scope). */
export const SW_URL = './sw.js';
/** The response header the service worker adds when it (not the server) supplied COOP/COEP. */
export const SW_MARKER_HEADER = 'X-Loupe-Isolation';
const RELOAD_FLAG = 'loupe-isolation-reload';

let status: IsolationStatus | null = null;

function sessionFlag(op: 'get' | 'set' | 'clear'): boolean {
  try {
    if (op === 'get') return sessionStorage.getItem(RELOAD_FLAG) === '1';
    if (op === 'set') sessionStorage.setItem(RELOAD_FLAG, '1');
    else sessionStorage.removeItem(RELOAD_FLAG);
  } catch {
    // Sandboxed documents may have no sessionStorage: then we never reload twice either.
    return op === 'get';
  }
  return false;
}

function none(reason: string, serviceWorker = false): IsolationStatus {
  return {
    isolation: 'none',
    reason: `${reason}; ONNX Runtime runs on 1 WASM thread (slower)`,
    threads: 1,
    serviceWorker,
  };
}

/** Whether this page's own response came with COOP/COEP from the server or from the service worker. */
async function headerSource(): Promise<Isolation> {
  if (!navigator.serviceWorker?.controller) return 'headers';
  try {
    const res = await fetch(location.href, { method: 'HEAD', cache: 'no-store' });
    return res.headers.get(SW_MARKER_HEADER) === 'service-worker' ? 'service-worker' : 'headers';
  } catch {
    // Offline: the page came from the worker's cache, which adds the headers itself.
    return 'service-worker';
  }
}

function waitForController(ms: number): Promise<boolean> {
  if (navigator.serviceWorker.controller) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(!!navigator.serviceWorker.controller), ms);
    navigator.serviceWorker.addEventListener('controllerchange', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

/**
 * Registers the service worker (offline cache and, where the server sends no COOP/COEP, the
 * isolation headers) and, when the page is not cross-origin isolated yet, reloads it once under the
 * worker. Resolves with the status when the app may start; never resolves when it reloads the page.
 * `register: false` (dev server) only reports.
 */
export async function ensureIsolation(opts: { register?: boolean } = {}): Promise<IsolationStatus> {
  const isolated = globalThis.crossOriginIsolated === true;
  const sw = 'serviceWorker' in navigator ? navigator.serviceWorker : undefined;
  if (opts.register === false || !sw) {
    status = isolated
      ? {
          isolation: 'headers',
          reason: 'the server sends COOP/COEP',
          threads: wasmThreads(),
          serviceWorker: false,
        }
      : none(
          !sw
            ? 'no service worker here (private window, sandboxed iframe or plain http), so no cross-origin isolation'
            : 'the server sends no COOP/COEP headers',
        );
    return status;
  }
  try {
    await sw.register(SW_URL, { scope: './' });
  } catch (e) {
    status = isolated
      ? {
          isolation: 'headers',
          reason: 'the server sends COOP/COEP',
          threads: wasmThreads(),
          serviceWorker: false,
        }
      : none(`the service worker could not be registered (${(e as Error)?.message ?? e})`);
    return status;
  }
  if (isolated) {
    sessionFlag('clear');
    const source = await headerSource();
    status = {
      isolation: source,
      reason:
        source === 'headers'
          ? 'the server sends COOP/COEP'
          : 'the service worker adds COOP/COEP (the server sends none)',
      threads: wasmThreads(),
      serviceWorker: !!sw.controller,
    };
    return status;
  }
  const controlled = await waitForController(10_000);
  if (controlled && !sessionFlag('get')) {
    // One reload brings the page back through the worker, with the headers.
    sessionFlag('set');
    location.reload();
    return new Promise<IsolationStatus>(() => undefined);
  }
  sessionFlag('clear');
  status = none(
    controlled
      ? framed()
        ? // A frame is isolated only when the page around it is: the cause is the embedding page.
          'the page that embeds Loupe is not cross-origin isolated (a frame gets WASM threads only when the page around it sends COOP/COEP)'
        : 'the page stayed not cross-origin isolated under the service worker'
      : 'the service worker did not take control of the page',
    controlled,
  );
  return status;
}

/** Whether this page is shown inside another page's frame. */
function framed(): boolean {
  try {
    return window.self !== window.top;
  } catch {
    return true;
  }
}

/** The status found by ensureIsolation (before it ran: what the page alone says). */
export function isolationStatus(): IsolationStatus {
  return (
    status ??
    (globalThis.crossOriginIsolated === true
      ? {
          isolation: 'headers',
          reason: 'the server sends COOP/COEP',
          threads: wasmThreads(),
          serviceWorker: false,
        }
      : none('not cross-origin isolated'))
  );
}
