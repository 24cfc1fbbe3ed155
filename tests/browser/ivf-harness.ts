// Page-side helpers for tests/e2e/ivf-range.test.ts (called through page.evaluate): the index
// worker's remote IVF-int8 search through its client, as the app calls it. Served by the Vite dev
// server at /tests/browser/ivf-harness.html; never part of the app build.
import {
  clearRemoteIvfCache,
  flushRemoteIvfCache,
  searchRemoteIvf,
  stopIndexWorker,
  type IvfRemoteRequest,
  type IvfRemoteResult,
} from '../../src/lib/clients/index-client';
import { listIvfCache } from '../../src/lib/platform/storage/ivf-cache';

type Outcome = { ok: true; result: IvfRemoteResult } | { ok: false; error: string };

const ivfHarness = {
  /** One search call (queries: n × dim values as a plain array). */
  async search(req: IvfRemoteRequest, queries: number[]): Promise<Outcome> {
    try {
      return { ok: true, result: await searchRemoteIvf(req, Float32Array.from(queries)) };
    } catch (e) {
      return { ok: false, error: (e as Error)?.message ?? String(e) };
    }
  },
  /** A fresh index worker (nothing in memory; the OPFS cache stays, once its writes are done). */
  async restartWorker(): Promise<void> {
    await flushRemoteIvfCache();
    stopIndexWorker();
  },
  async clearCache(): Promise<void> {
    await clearRemoteIvfCache();
  },
  /** Files in the packed-index cache (OPFS), all indexes together. */
  async cachedFiles(): Promise<number> {
    return [...(await listIvfCache()).values()].reduce((n, f) => n + f.files, 0);
  },
};

export type IvfHarness = typeof ivfHarness;
declare global {
  interface Window {
    ivfHarness: IvfHarness;
  }
}
window.ivfHarness = ivfHarness;
document.getElementById('status')!.textContent = 'ready';
