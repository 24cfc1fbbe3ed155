// A dense run through the compact vector store (issue 18 item 4) in the app, end to end in
// Chromium: a 10,000-document synthetic shard (make-scale-shard, random unit vectors as precomputed
// embeddings of the generated bert-tiny model: random weights, so this checks the path, not
// retrieval quality) opened by one link with the store's threshold moved to 10,000 documents
// (`compact-from=10000`; the default is 256 MiB of float32 rows). The run must say it used the store,
// read R = 100 float32 rows per query back from OPFS (the index worker's counters), and rank every
// query's top 10 as the float32 exact run of the same link without the option does (fresh profile).
// The corpus goes from IndexedDB to the store in pieces (src/lib/state/dense.ts embedCorpusTo, into src/lib/clients/index-client.ts): the page
// must never have received the matrix (its embedCorpus results carried no vectors), while the exact
// run's page received the whole matrix.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { launch, pageErrors, download } from './browser';
import { makeScaleShard } from './shard-fixtures';

const baseUrl = inject('baseUrl');
const MODEL = 'loupe-test/bert-tiny-random';
// Three pieces of 4,096 rows: the store is written and read back in several.
const DOCS = 10_000;
const QUERIES = 50;

/**
 * One dense run from a fresh profile; its run file's lines, the run's name, the store's counters, the
 * encoder workers started and closed, and (with `search`) the top document of that text typed in the
 * Search view of the same page afterwards.
 */
async function denseRun(dir: string, extra: Record<string, string>, search?: string) {
  const s = await launch();
  try {
    const { page } = s;
    const encoderWorkers = { started: 0, closed: 0 };
    page.on('worker', (w) => {
      if (!w.url().includes('encoder.worker')) return;
      encoderWorkers.started++;
      w.on('close', () => encoderWorkers.closed++);
    });
    const q = new URLSearchParams({
      shard: `/generated-shards/${basename(dir)}/`,
      task: 'scale-qa',
      runs: `dense(model=${MODEL},dtype=fp32,device=wasm)`,
      depth: '100',
      'search-model': MODEL,
      device: 'wasm',
      dtype: 'fp32',
      ...extra,
    });
    await page.goto(`${baseUrl}/?${q}`);
    await page.waitForSelector(
      '[data-testid="app"][data-phase="done"], [data-testid="app"][data-phase="error"]',
      {
        timeout: 300_000,
      },
    );
    expect(await page.getAttribute('[data-testid="app"]', 'data-phase')).toBe('done');
    const name = await page
      .locator('[data-testid="runs-table"] [data-testid="run-name"]')
      .first()
      .innerText();
    await page.locator('[data-testid="runs-table"] [data-testid="run-name"]').first().click();
    const trec = await download(page, 'export-run');
    const w = page.workers().find((x) => x.url().includes('index.worker'));
    const counters = w
      ? await w.evaluate(
          () => (self as unknown as { loupeCompactCounters: Record<string, unknown> }).loupeCompactCounters,
        )
      : null;
    const enc = page
      .workers()
      .filter((x) => x.url().includes('encoder.worker'))
      .at(-1);
    const encoder = await enc!.evaluate(
      () => (self as unknown as { loupeEncoderCounters: Record<string, number> }).loupeEncoderCounters,
    );
    const received = await page.evaluate(
      () => (globalThis as unknown as { loupeCorpusReceived: Record<string, number> }).loupeCorpusReceived,
    );
    const message = await page.locator('[data-testid="messages"]').innerText();
    // The run's details: what Loupe did and why, one line a step of its plan.
    const plan = await page.locator('[data-testid="run-plan"] [data-testid="plan-step"]').allInnerTexts();
    let searchTop: string | null = null;
    if (search) {
      // The Search view of the same page: the model loads again if the run stopped it.
      await page.evaluate(() => (location.hash = '#/search'));
      await page.fill('[data-testid="search-input"]', search);
      await page.click('[data-testid="search-submit"]');
      await page.waitForSelector('[data-testid="search-summary"]', { timeout: 120_000 });
      searchTop = await page
        .locator('[data-testid="result-column"]')
        .first()
        .locator('[data-testid="results"] li button')
        .first()
        .getAttribute('data-doc');
    }
    expect(pageErrors(page).join('\n')).toBe('');
    // Counted now: closing the browser closes the rest.
    const workers = { ...encoderWorkers };
    return { name, trec, counters, encoder, received, encoderWorkers: workers, message, searchTop, plan };
  } finally {
    await s.dispose();
  }
}

/** Each query's top 10 of a TREC run file: [doc id, score] in rank order. */
function top10(trec: string): Map<string, [string, number][]> {
  const out = new Map<string, [string, number][]>();
  for (const line of trec.trim().split('\n')) {
    const [qid, , doc, rank, score] = line.split(/\s+/);
    if (Number(rank) > 10) continue;
    const l = out.get(qid) ?? [];
    l.push([doc, Number(score)]);
    out.set(qid, l);
  }
  return out;
}

describe('dense run through the compact store (issue 18 item 4)', () => {
  let dir = '';
  const EXCLUDING = 5;
  const excluded = new Map<string, Set<string>>();
  beforeAll(() => {
    dir = makeScaleShard('compact-10k-', { docs: DOCS, queries: QUERIES, model: MODEL });
    // The first EXCLUDING queries exclude a quarter of the corpus each (`exclude_ids`): without the
    // exclusion some of those documents would be in nearly every such query's top 10.
    const ids = readFileSync(join(dir, 'corpus.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { _id: string })._id);
    const lines = readFileSync(join(dir, 'queries.jsonl'), 'utf8').split('\n').filter(Boolean);
    lines.forEach((l, i) => {
      if (i >= EXCLUDING) return;
      const q = JSON.parse(l) as Record<string, unknown>;
      q.exclude_ids = ids.filter((_, j) => j % 4 === i % 4);
      excluded.set(q._id as string, new Set(q.exclude_ids as string[]));
      lines[i] = JSON.stringify(q);
    });
    writeFileSync(join(dir, 'queries.jsonl'), lines.join('\n') + '\n');
  }, 300_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('ranks the top 10 of float32 exact search, reading 100 rows per query from OPFS', async () => {
    const probe = JSON.parse(
      readFileSync(join(dir, 'queries.jsonl'), 'utf8').split('\n').filter(Boolean)[EXCLUDING],
    ) as { _id: string; text: string };
    const compact = await denseRun(dir, { 'compact-from': String(DOCS) }, probe.text);
    expect(compact.name).toContain('4-bit scan, int8 rescoring of the best 2000, exact rescoring of top 100');
    expect(compact.counters).toEqual({
      searches: 1,
      queries: QUERIES,
      rowsRead: QUERIES * 100,
      reads: expect.any(Number),
      store: 'opfs',
    });
    // Streamed: every row left the encoder worker in pieces of at most 4,096 rows; the page got none.
    expect(compact.received).toEqual({ results: 1, floats: 0, streamed: 1 });
    expect(compact.encoder).toMatchObject({ streamedRows: DOCS, precomputedRows: DOCS });
    expect(compact.encoder.streamedPieces).toBeGreaterThanOrEqual(DOCS / 4096);
    // Each full piece's buffer came back from the index worker and was filled again.
    expect(compact.encoder.reusedPieces).toBe(Math.floor(DOCS / 4096));
    expect(compact.encoder.largestPiece).toBeLessThanOrEqual(4096);
    // The queries were embedded first and the worker holding the query model was stopped: the corpus
    // was handed over by a second worker that loaded no model (it embedded nothing; the rows were
    // precomputed); the Search view's query then loaded the model again in that worker.
    expect(compact.message).toContain('the query model was stopped once the queries were embedded');
    expect(compact.encoder.batchesEmbedded).toBe(0);
    expect(compact.encoderWorkers.started).toBe(2);
    expect(compact.encoderWorkers.closed).toBe(1);
    // The run's details say so, step by step, each with its reason.
    expect(compact.plan.map((l) => l.split(':')[0])).toEqual([
      'Freed the BM25 index’s memory',
      'Loaded the model',
      'Embedded the queries',
      'Stopped the encoder worker',
      'Took the corpus vectors (text)',
      'Handed the corpus to the compact store',
      'Ranked the queries against the compact store',
    ]);
    expect(compact.plan[3]).toContain('ORT never gives it back');
    expect(compact.plan[5]).toContain(`threshold of ${DOCS}`);
    const exact = await denseRun(dir, {});
    // The float32 path still brings the whole matrix (bert-tiny-random: 64 dimensions) to the page.
    expect(exact.received).toEqual({ results: 1, floats: DOCS * 64, streamed: 0 });
    expect(exact.encoder.streamedRows).toBe(0);
    expect(exact.name).not.toContain('int8');
    expect(exact.message).not.toContain('the query model was stopped');
    expect(exact.encoderWorkers).toEqual({ started: 1, closed: 0 });
    expect(exact.plan.map((l) => l.split(':')[0])).toEqual([
      'Loaded the model',
      'Took the corpus vectors (text)',
      'Handed the corpus to the float32 matrix',
      'Embedded the queries',
      'Ranked the queries against the float32 matrix',
    ]);
    // The float32 path never searched the store (its index worker, if started at all, read nothing).
    expect(exact.counters ?? { searches: 0, rowsRead: 0 }).toMatchObject({ searches: 0, rowsRead: 0 });
    const a = top10(compact.trec);
    const b = top10(exact.trec);
    // The typed query, with the model loaded again, finds the run's top document for it.
    expect(compact.searchTop).toBe(a.get(probe._id)![0][0]);
    expect(a.size).toBe(QUERIES);
    expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
    // Excluded documents are never returned, by either path.
    expect(excluded.size).toBe(EXCLUDING);
    for (const [qid, ex] of excluded) {
      for (const run of [a, b]) expect(run.get(qid)!.filter(([doc]) => ex.has(doc))).toEqual([]);
      expect(a.get(qid)).toHaveLength(10);
    }
    for (const [qid, hits] of b) {
      const got = a.get(qid)!;
      expect(got.map((h) => h[0])).toEqual(hits.map((h) => h[0]));
      // Exact scores both: float32 rows rescored vs the float64 cosine, equal to float32 precision.
      got.forEach((h, i) => expect(Math.abs(h[1] - hits[i][1])).toBeLessThan(1e-6));
    }
  }, 600_000);
});
