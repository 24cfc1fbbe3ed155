// Page-side helpers for tests/e2e/range-docs.test.ts (called through page.evaluate): the Range
// document reader (src/lib/platform/sources/range-docs.ts) as the app uses it. Served by the Vite dev server at
// /tests/browser/range-docs-harness.html; never part of the app build.
import { RangeDocReader } from '../../src/lib/platform/sources/range-docs';
import type { Doc } from '../../src/lib/core/types';

type Outcome = { ok: true; docs: Doc[]; bytesRead: number; requests: number } | { ok: false; error: string };

const readers = new Map<string, RangeDocReader>();

const rangeDocsHarness = {
  /** Reads `ids` through the reader of `shardUrl` (one reader per URL, kept between calls). */
  async read(shardUrl: string, ids: string[]): Promise<Outcome> {
    let reader = readers.get(shardUrl);
    if (!reader) readers.set(shardUrl, (reader = new RangeDocReader(shardUrl, 'corpus.offsets.bin')));
    try {
      const got = await reader.readIds(ids);
      return { ok: true, docs: [...got.values()], bytesRead: reader.bytesRead, requests: reader.requests };
    } catch (e) {
      return { ok: false, error: (e as Error)?.message ?? String(e) };
    }
  },
};

export type RangeDocsHarness = typeof rangeDocsHarness;
declare global {
  interface Window {
    rangeDocsHarness: RangeDocsHarness;
  }
}
window.rangeDocsHarness = rangeDocsHarness;
