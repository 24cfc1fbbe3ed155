// BM25 analyzers in Chromium: the generated monolingual shards (scripts/make-monolingual-shards.ts)
// are imported through the real shard worker and searched by the real retrieval worker, once as
// written (shard.json declares the language) and once declaring none (English analyzer). In the
// browser, Thai and the default analyzer segment with Chromium's ICU, so this checks that path too:
// every language's analyzer must beat the English one, by the margins the Node test sees.
import { readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Harness, Outcome } from '../browser/harness';
import {
  MONOLINGUAL_OUT_DIR,
  MONOLINGUAL_SPECS,
  writeMonolingualShards,
} from '../../scripts/make-monolingual-shards';
import { harnessCaller, launch, type Session } from './browser';

const baseUrl = inject('baseUrl');
const call = harnessCaller<Harness>('harness');

/** The files of a generated shard folder, and the folder's URL on the Vite server. */
function served(dir: string): { url: string; files: string[] } {
  const files = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath, d.name)).split(sep).join('/'))
    .sort();
  const url = `/${relative(join(import.meta.dirname, '../..'), dir)
    .split(sep)
    .join('/')}/`;
  return { url, files };
}

function ok(r: Outcome) {
  if (!r.ok) throw new Error(`import failed: ${JSON.stringify(r)}`);
  return r;
}

describe('BM25 analyzers on monolingual shards in Chromium', () => {
  let session: Session;
  let page: Page;
  const own = writeMonolingualShards(MONOLINGUAL_OUT_DIR);
  const english = writeMonolingualShards(MONOLINGUAL_OUT_DIR, MONOLINGUAL_SPECS, { declareLanguage: false });

  beforeAll(async () => {
    session = await launch();
    page = session.page;
    await page.goto(`${baseUrl}/tests/browser/harness.html`);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
  });

  afterAll(async () => {
    await session?.dispose();
  });

  /** nDCG@10 of BM25 over the shard in `dir`, through import, the worker's index and its run. */
  async function ndcg(dir: string): Promise<number> {
    const { url, files } = served(dir);
    await call(page, 'fetchFiles', dir, url, files);
    const r = ok(await call(page, 'importFiles', dir));
    const m = await call(page, 'bm25Metrics', r.summary.hash);
    return m.mono.metrics.ndcg_cut_10;
  }

  it('each language analyzer retrieves what the English one misses', async () => {
    const rows: string[] = [];
    for (let i = 0; i < MONOLINGUAL_SPECS.length; i++) {
      const lang = MONOLINGUAL_SPECS[i].language;
      const a = await ndcg(own[i]);
      const b = await ndcg(english[i]);
      rows.push(`${lang} ${a.toFixed(3)} vs ${b.toFixed(3)}`);
      expect(a, lang).toBeGreaterThanOrEqual(0.8);
      expect(a - b, lang).toBeGreaterThanOrEqual(0.3);
    }
    console.log(`nDCG@10 with the language's analyzer vs English: ${rows.join(' · ')}`);
  }, 300_000);
});
