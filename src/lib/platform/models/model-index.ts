// The model folders this site serves (models/index.json, written by the build and answered by the dev
// server: scripts/lib/model-index.ts), read once per page; and whether the Hugging Face hub answers.
import type { ModelSpec } from '../../core/retrieval/models';

let served: Promise<Set<string> | null> | null = null;

/**
 * The folders under models/ that hold a model (`generated/loupe-test/clip-tiny-random`,
 * `Xenova/all-MiniLM-L6-v2` when self-hosted); null when the site has no index (nothing is then
 * known to be served).
 */
export function servedModelFolders(): Promise<Set<string> | null> {
  served ??= (async () => {
    try {
      const res = await fetch(new URL('models/index.json', document.baseURI), { cache: 'no-cache' });
      if (!res.ok || /text\/html/.test(res.headers.get('content-type') ?? '')) return null;
      const body = (await res.json()) as { folders?: unknown };
      return Array.isArray(body.folders)
        ? new Set(body.folders.filter((f): f is string => typeof f === 'string'))
        : null;
    } catch {
      return null;
    }
  })();
  return served;
}

/** The folder under models/ a registry model is served from (generated ones: their local path). */
export function modelFolder(spec: ModelSpec): string {
  return spec.local ? (spec.localPath ?? spec.hubId) : spec.hubId;
}

/** HUB_PROBE_MS: how long the hub may take to answer before it counts as unreachable. */
export const HUB_PROBE_MS = 5000;

/**
 * Whether the Hugging Face hub answers: one HEAD request for a small file of `spec` (the registry
 * default), made in a short-lived worker (workers/hub-probe.worker.ts). False on a network error, an
 * error status or no answer within HUB_PROBE_MS.
 */
export function hubAnswers(spec: ModelSpec): Promise<boolean> {
  const url = `https://huggingface.co/${spec.hubId}/resolve/${encodeURIComponent(spec.revision)}/config.json`;
  return new Promise((resolve) => {
    let worker: Worker;
    try {
      worker = new Worker(new URL('../../../../workers/hub-probe.worker.ts', import.meta.url), {
        type: 'module',
        name: 'loupe-hub-probe',
      });
    } catch {
      return resolve(false);
    }
    const done = (ok: boolean) => {
      clearTimeout(timer);
      worker.terminate();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), HUB_PROBE_MS + 1000);
    worker.onmessage = (e: MessageEvent<boolean>) => done(e.data === true);
    worker.onerror = () => done(false);
    worker.postMessage({ url, timeoutMs: HUB_PROBE_MS });
  });
}
