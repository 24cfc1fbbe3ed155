// Tied scores in Chromium: an imported TREC run of medquad with ties. The metrics panel counts the
// queries with a tie in the top 10 and shows each measure's range over tie orders (stats worker); the
// drill-down marks the tied documents and says how trec_eval ordered them. Expected values are worked
// out by hand from the run written here (trec_eval's rule: score descending, then document id descending).
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { launch, pageErrors, phase, type Session } from './browser';
import { shotPath } from './artifacts';
import { DATA_DIR } from '../paths';

const baseUrl = inject('baseUrl');
const TASK = 'qa-answer-retrieval';
const tmp = mkdtempSync(join(tmpdir(), 'loupe-ties-'));

/** medquad's query ids in file order, each with its one relevant document, and every document id. */
function medquad() {
  const dir = join(DATA_DIR, 'medquad');
  const rel = new Map<string, string>();
  for (const line of readFileSync(join(dir, 'qrels/test.tsv'), 'utf8').trim().split('\n').slice(1)) {
    const [q, d, g] = line.split('\t');
    if (Number(g) > 0) rel.set(q, d);
  }
  const queries = readFileSync(join(dir, 'queries.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { _id: string; task: string })
    .filter((q) => q.task === TASK && rel.has(q._id))
    .map((q) => q._id);
  const docs = readFileSync(join(dir, 'corpus.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { _id: string })._id);
  return { rel, queries, docs };
}

const { rel, queries, docs } = medquad();
const [Q1, Q2, Q3] = queries;
const relevantIds = new Set(rel.values());
/** Non-relevant documents (for every query: each has exactly one relevant document). */
const others = docs.filter((d) => !relevantIds.has(d)).sort();
// Q1: one document above, then five tied at 0.8123: the relevant one has the smallest id of the five,
// so trec_eval ranks it last of them (rank 6); best-first it would be rank 2.
const R1 = rel.get(Q1)!;
const tiedWithR1 = others.filter((d) => d > R1).slice(0, 4);
const Q1_TIED = [R1, ...tiedWithR1];
const aboveR1 = others.find((d) => !tiedWithR1.includes(d))!;
// Q2: no tie. Q3: the relevant document first, a tie at ranks 10-11 (no relevant document in it).
const lines = [
  `${Q1} Q0 ${aboveR1} 1 0.95 t`,
  ...Q1_TIED.map((d, i) => `${Q1} Q0 ${d} ${i + 2} 0.8123 t`),
  `${Q2} Q0 ${rel.get(Q2)} 1 1 t`,
  ...others.slice(10, 13).map((d, i) => `${Q2} Q0 ${d} ${i + 2} ${0.9 - i / 10} t`),
  `${Q3} Q0 ${rel.get(Q3)} 1 1 t`,
  ...others.slice(20, 28).map((d, i) => `${Q3} Q0 ${d} ${i + 2} ${(0.9 - i / 10).toFixed(1)} t`),
  ...others.slice(30, 32).map((d, i) => `${Q3} Q0 ${d} ${i + 10} 0.05 t`),
];

describe('ties made visible', () => {
  let s: Session;
  beforeAll(async () => {
    s = await launch();
  });
  afterAll(async () => {
    await s?.dispose();
    rmSync(tmp, { recursive: true, force: true });
  });

  test('an imported run with ties: the tie count, the range over tie orders, and the drill-down marks', async () => {
    const { page } = s;
    await page.setViewportSize({ width: 1440, height: 1000 });
    await page.goto(`${baseUrl}/?shard=/shards/medquad/&task=${TASK}`);
    await phase(page, 'ready');
    await page.evaluate(() => (location.hash = '#/benchmark'));
    const file = join(tmp, 'ties.trec');
    writeFileSync(file, lines.join('\n') + '\n');
    await page.setInputFiles('[data-testid="import-run"]', file);
    await page.waitForSelector('[data-testid="tie-count"]');

    // The metrics panel: Q1 and Q3 (ranks 10-11 tied) of the task's 1000 queries.
    const count = page.locator('[data-testid="tie-count"]');
    expect(await count.getAttribute('data-tied')).toBe('2');
    expect(await count.innerText()).toContain(`2 of ${queries.length} queries have a tie in the top 10`);
    expect(queries.length).toBe(1000);
    expect(
      await page.locator('[data-testid="tied-query"]').evaluateAll((b) => b.map((x) => x.dataset.qid)),
    ).toEqual([Q1, Q3]);

    // The range over tie orders. MRR: Q1 gives 1/6 (trec_eval's order, also the worst) to 1/2 (best),
    // Q2 and Q3 give 1; the other 997 queries retrieved nothing (0, trec_eval -c).
    await page.click('[data-testid="tie-range-button"]');
    await page.waitForSelector('[data-testid="tie-range"]');
    const cell = (m: string, col: number) =>
      page.locator(`[data-testid="tie-range"] tr[data-measure="${m}"] td`).nth(col).innerText();
    const mrr = { trec: (1 / 6 + 2) / 1000, best: (1 / 2 + 2) / 1000, worst: (1 / 6 + 2) / 1000 };
    expect(await cell('recip_rank', 1)).toBe(mrr.trec.toFixed(4));
    expect(await cell('recip_rank', 2)).toBe(mrr.best.toFixed(4));
    expect(await cell('recip_rank', 3)).toBe(mrr.worst.toFixed(4));
    // The trec_eval column is the metrics table's number.
    expect(await cell('recip_rank', 1)).toBe(
      await page.locator('tr[data-scope="overall"] td[data-measure="recip_rank"]').innerText(),
    );
    // nDCG@10: Q1's relevant document at rank 2 (best) or 6 (worst); Q2 and Q3 have it at rank 1.
    expect(await cell('ndcg_cut_10', 2)).toBe(((1 / Math.log2(3) + 2) / 1000).toFixed(4));
    expect(await cell('ndcg_cut_10', 3)).toBe(((1 / Math.log2(7) + 2) / 1000).toFixed(4));
    // Recall@100 cannot move: every retrieved document stays retrieved.
    expect(await cell('recall_100', 4)).toBe('0.0000');
    await page.locator('[data-testid="run-panel"]').screenshot({ path: shotPath('ties-metrics-1440.png') });

    // The drill-down of Q1: ranks 2-6 marked, in document id descending order, the relevant one last.
    await page.click(`[data-testid="tied-query"][data-qid="${Q1}"]`);
    const detail = page.locator(`[data-testid="query-detail"][data-qid="${Q1}"]`);
    await detail.waitFor();
    const tiedRows = detail.locator('[data-testid="ranking"] li.tied');
    expect(await tiedRows.evaluateAll((li) => li.map((x) => x.dataset.rank))).toEqual([
      '2',
      '3',
      '4',
      '5',
      '6',
    ]);
    expect(await tiedRows.evaluateAll((li) => li.map((x) => x.dataset.doc))).toEqual([...Q1_TIED].reverse());
    expect(await detail.locator('li[data-rank="6"]').getAttribute('data-doc')).toBe(R1);
    expect(await detail.locator('li[data-rank="1"]').getAttribute('class')).not.toContain('tied');
    expect(await detail.locator('[data-testid="tie-mark"]').allInnerTexts()).toEqual(
      Array(5).fill('= tied 2–6'),
    );
    const notes = await detail.locator('[data-testid="tie-note"]').allInnerTexts();
    expect(notes).toEqual([
      'Tied with ranks 2–6 at 0.8123; ordered by document id descending, as trec_eval does.',
    ]);
    const summary = detail.locator('[data-testid="tie-summary"]');
    expect(await summary.innerText()).toContain(
      'Tied scores at ranks 2–6, ordered by document id descending',
    );
    expect(await summary.locator('[data-measure="recip_rank"]').innerText()).toBe('MRR 0.1667–0.5000');
    expect(await summary.locator('[data-measure="ndcg_cut_10"]').innerText()).toBe(
      `nDCG@10 ${(1 / Math.log2(7)).toFixed(4)}–${(1 / Math.log2(3)).toFixed(4)}`,
    );
    await detail.screenshot({ path: shotPath('ties-drilldown-1440.png') });

    // Q3: the tie at ranks 10-11 holds no relevant document: no measure shown changes.
    await page.click(`[data-testid="tied-query"][data-qid="${Q3}"]`);
    const d3 = page.locator(`[data-testid="query-detail"][data-qid="${Q3}"]`);
    await d3.waitFor();
    expect(await d3.locator('li.tied').evaluateAll((li) => li.map((x) => x.dataset.rank))).toEqual([
      '10',
      '11',
    ]);
    expect(await d3.locator('[data-testid="tie-summary"]').innerText()).toContain(
      'The measures above do not depend on it.',
    );
    // Q2 has no tie: no mark, no note.
    await page.fill('input[aria-label="Filter queries"]', Q2);
    await page.click(`[data-testid="query-list"] button[data-qid="${Q2}"]`);
    const d2 = page.locator(`[data-testid="query-detail"][data-qid="${Q2}"]`);
    await d2.waitFor();
    expect(
      await d2
        .locator('[data-testid="tie-mark"], [data-testid="tie-note"], [data-testid="tie-summary"]')
        .count(),
    ).toBe(0);

    // Every width: no horizontal overflow; screenshots at 390 px.
    await page.click(`[data-testid="tied-query"][data-qid="${Q1}"]`);
    await detail.waitFor();
    for (const width of [390, 1024, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      await page.waitForTimeout(100);
      const [sw, iw] = await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
      // What sticks out of the page (not out of a scrolling table), named, so a failure says what to fix.
      const outside = await page.evaluate(() =>
        [...document.querySelectorAll('body *')]
          .filter((e) => e.getBoundingClientRect().right > innerWidth + 1)
          .filter((e) => {
            for (let a = e.parentElement; a; a = a.parentElement)
              if (['auto', 'hidden', 'scroll', 'clip'].includes(getComputedStyle(a).overflowX)) return false;
            return true;
          })
          .map((e) => `${e.tagName.toLowerCase()} ${e.getAttribute('data-testid') ?? e.className}`),
      );
      expect(outside, `at ${width}px`).toEqual([]);
      expect(sw, `page width at ${width}px`).toBeLessThanOrEqual(iw);
    }
    await page.setViewportSize({ width: 390, height: 900 });
    await page.locator('[data-testid="run-panel"]').screenshot({ path: shotPath('ties-metrics-390.png') });
    await detail.screenshot({ path: shotPath('ties-drilldown-390.png') });
    expect(pageErrors(page).join('\n')).toBe('');
  });
});
