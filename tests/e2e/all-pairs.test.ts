// "Which runs really differ" in Chromium (issue 37 item 1): eight BM25 settings on medquad, all pairs by
// Tukey's HSD and by the randomized version. The expected groups, matrix cells and rank intervals are
// computed here by the core (all-pairs.ts) over the per-query measures of each run's Metrics JSON as
// the app exports it. Then four BM25 settings on vqa-rad's tasks, compared per task and pooled (its
// image-to-image task has no BM25 runs and is left out). The page must not scroll sideways at 390,
// 1024 and 1440 px. Last, the same across the three tasks of a 10,000-document scale shard
// (make-scale-shard --tasks 3, in a temporary folder under the gitignored generated-shards/).
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import type { Page } from 'playwright-core';
import { launch, pageErrors, type Session, download } from './browser';
import { shotPath } from './artifacts';
import {
  allPairs,
  allPairsAcrossTasks,
  formatP,
  runsTable,
  type AllPairsOptions,
  type AllPairsRun,
} from '../../src/lib/core/eval/all-pairs';
import type { MultiComparison } from '../../src/lib/core/eval/multi-compare';
import { makeScaleShard } from './shard-fixtures';
import { rmSync } from 'node:fs';
import { basename } from 'node:path';

const baseUrl = inject('baseUrl');
const SPECS = [0.1, 0.5, 1.2, 3].flatMap((k1) => [0, 1].map((b) => `bm25(k1=${k1},b=${b})`));
const TASKS = ['text-to-image', 'image-question-to-passage'];
const VQA_SPECS = ['bm25(k1=0.1,b=0)', 'bm25(k1=0.9,b=0.4)', 'bm25(k1=1.2,b=0.75)', 'bm25(k1=3,b=1)'];
const MEASURE = 'ndcg_cut_10';

/** Opens the task with the runs (made, or found stored) and all of them ticked. */
async function openTask(page: Page, shard: string, task: string, specs: string[]) {
  const q = new URLSearchParams({ shard, task, runs: specs.join(';') });
  await page.goto(`${baseUrl}/?${q}#/benchmark`);
  await page.waitForSelector('[data-testid="app"][data-phase="done"]', { timeout: 300_000 });
  await expect.poll(() => page.locator('[data-testid="compare-pick"]:checked').count()).toBe(specs.length);
}

/** The ticked runs in run-list order: the order the app sends them to the worker. */
function pickedIds(page: Page): Promise<string[]> {
  return page.$$eval('[data-testid="compare-pick"]:checked', (boxes) =>
    boxes.map((b) => b.getAttribute('data-run')!),
  );
}

async function computePairs(page: Page, marks: number) {
  await page.click('[data-testid="pairs-run"]');
  await page.waitForFunction((n) => performance.getEntriesByName('loupe:pairs').length >= n, marks, {
    timeout: 120_000,
  });
  await page.waitForSelector('[data-testid="pairs-matrix"]');
}

/** Each shown run's per-query measures, from the Metrics JSON the app exports. */
async function exportedRuns(page: Page, ids: string[]): Promise<AllPairsRun[]> {
  const out: AllPairsRun[] = [];
  for (const id of ids) {
    await page.click(`[data-testid="runs-table"] tr[data-run="${id}"] [data-testid="run-name"]`);
    const m = JSON.parse(await download(page, 'export-json')) as {
      run: { id: string; name: string };
      perQuery: Record<string, Record<string, number>>;
    };
    expect(m.run.id).toBe(id);
    out.push({ id, name: m.run.name, perQuery: new Map(Object.entries(m.perQuery)) });
  }
  return out;
}

/** The page shows `c`: runs table (order, means, rank intervals, tied), and every matrix cell. */
async function expectShown(page: Page, c: MultiComparison) {
  const rows = await page.$$eval('[data-testid="pairs-runs"] tbody tr', (trs) =>
    trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent!.trim())),
  );
  expect(rows).toEqual(runsTable(c));
  const tied = await page.$$eval('[data-testid="pairs-runs"] tbody tr.tied', (trs) =>
    trs.map((tr) => tr.getAttribute('data-run')),
  );
  expect(tied.sort()).toEqual([...c.tiedWithBest].sort());
  const cells = await page.$$eval('[data-testid="pairs-matrix"] td[data-row]', (tds) =>
    tds.map((td) => ({
      row: td.getAttribute('data-row')!,
      col: td.getAttribute('data-col')!,
      diff: Number(td.getAttribute('data-diff')),
      p: Number(td.getAttribute('data-p')),
      text: td.textContent!,
      cls: td.className,
    })),
  );
  const N = c.runs.length;
  expect(cells).toHaveLength(N * (N - 1));
  for (const pair of c.pairs)
    for (const [row, col, sign] of [
      [pair.a, pair.b, -1],
      [pair.b, pair.a, 1],
    ] as const) {
      const cell = cells.find((x) => x.row === row && x.col === col)!;
      // Chromium's and Node's Math.exp / Math.log may differ in the last bits: 1e-12 is far below
      // anything shown (and the golden files' 1e-9).
      expect(Math.abs(cell.diff - sign * pair.diff)).toBeLessThan(1e-12);
      expect(Math.abs(cell.p - pair.pAdj)).toBeLessThan(1e-12);
      expect(cell.text).toContain(`p ${formatP(pair.pAdj)}`);
      expect(cell.text.includes('*')).toBe(pair.significant);
      expect(/\b(better|worse)\b/.test(cell.cls)).toBe(pair.significant);
    }
}

/** Each task's column of the per-task table shows that task's means and tied-with-best runs. */
async function expectPerTask(page: Page, across: ReturnType<typeof allPairsAcrossTasks>, runs: number) {
  for (const t of across.perTask) {
    const c = t.comparison!;
    const shown = await page.$$eval(`[data-testid="pairs-tasks"] td[data-task="${t.task}"]`, (tds) =>
      tds.map((td) => [td.parentElement!.getAttribute('data-run')!, td.textContent!.trim()]),
    );
    expect(shown).toHaveLength(runs);
    for (const [id, text] of shown) {
      const i = c.runs.indexOf(id);
      expect(text).toBe(`${c.means[i].toFixed(4)}${c.tiedWithBest.includes(id) ? ' ✓' : ''}`);
    }
  }
}

async function noSideScroll(page: Page, name: string, widths = [390, 1024, 1440]) {
  for (const width of widths) {
    await page.setViewportSize({ width, height: 900 });
    await page.waitForTimeout(200);
    const [sw, iw] = await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
    expect(sw, `page width at ${width}px`).toBeLessThanOrEqual(iw);
    await page.locator('[data-testid="pairs"]').screenshot({ path: shotPath(`${name}-${width}.png`) });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

describe('all pairs of eight runs (issue 37 item 1)', () => {
  let s: Session;
  beforeAll(async () => {
    s = await launch();
  });
  afterAll(async () => {
    await s?.dispose();
  });

  test('Tukey HSD and randomized Tukey HSD of 8 BM25 runs equal the core on the exported per-query measures; across tasks', async () => {
    const { page } = s;
    const errors = pageErrors(page);
    await openTask(page, '/shards/medquad/', 'qa-answer-retrieval', SPECS);
    await computePairs(page, 1);
    const ids = await pickedIds(page);
    expect(ids).toHaveLength(8);
    const inputs = await exportedRuns(page, ids);
    const tukey = allPairs({ inputs, measure: MEASURE, options: { method: 'tukey' } });
    await expectShown(page, tukey);
    expect(await page.innerText('[data-testid="pairs-method-note"]')).toContain(tukey.method);
    // Eight BM25 settings are not all one group: something is significantly different.
    expect(tukey.pairs.some((p) => p.significant)).toBe(true);

    // Exports name the method and hold the same numbers.
    const csv = await download(page, 'pairs-csv');
    expect(csv).toContain(`# method: ${tukey.method}, alpha 0.05`);
    const json = JSON.parse(await download(page, 'pairs-json'));
    expect(json.method).toBe(tukey.method);
    expect(json.measure).toBe(MEASURE);
    expect(json.tied_with_best).toEqual(tukey.tiedWithBest);
    expect(json.rank_intervals).toEqual(tukey.rankIntervals);
    json.pairs.forEach((p: { a: string; b: string; p_adj: number }, k: number) => {
      expect([p.a, p.b]).toEqual([tukey.pairs[k].a, tukey.pairs[k].b]);
      expect(Math.abs(p.p_adj - tukey.pairs[k].pAdj)).toBeLessThan(1e-12);
    });
    await noSideScroll(page, 'all-pairs-tukey');

    // The randomized version: seeded, so the core gives the same p values for the same seed.
    await page.selectOption('[data-testid="pairs-method"]', 'randomized');
    await computePairs(page, 2);
    const opts: AllPairsOptions = { method: 'randomized', trials: 1000, seed: 42 };
    const randomized = allPairs({ inputs, measure: MEASURE, options: opts });
    await expectShown(page, randomized);
    expect(await page.innerText('[data-testid="pairs-method-note"]')).toMatch(
      /1000 trials, seed 42, Monte Carlo standard error of p up to 0\.\d{4}/,
    );
    await page.screenshot({ path: shotPath('all-pairs-randomized-page.png'), fullPage: false });

    // Four runs on each of vqa-rad's text tasks, then per task and pooled.
    await openTask(page, '/shards/vqa-rad/', TASKS[0], VQA_SPECS);
    const first = await exportedRuns(page, await pickedIds(page));
    await openTask(page, '/shards/vqa-rad/', TASKS[1], VQA_SPECS);
    await page.selectOption('[data-testid="pairs-method"]', 'tukey');
    await page.check('[data-testid="pairs-across"]');
    await computePairs(page, 1);
    const here = await exportedRuns(page, await pickedIds(page));
    // Runs are matched across tasks by name: the first task's runs take this task's ids and order.
    const there = here.map((h) => ({ ...first.find((r) => r.name === h.name)!, id: h.id }));
    const across = allPairsAcrossTasks({
      tasks: [
        { task: TASKS[0], inputs: there },
        { task: TASKS[1], inputs: here },
      ],
      measure: MEASURE,
    });
    await expectShown(page, across.pooled);
    await expectPerTask(page, across, VQA_SPECS.length);
    const pooledJson = JSON.parse(await download(page, 'pairs-json'));
    expect(pooledJson.pooled.method).toBe(across.pooled.method);
    expect(pooledJson.per_task.map((t: { task: string }) => t.task)).toEqual(TASKS);
    expect(pooledJson.skipped_tasks).toEqual(['image-to-image']);
    // The CSV's per-task rows: each task's means and tied group at full precision.
    const perTaskRows = (await download(page, 'pairs-csv'))
      .split('# per task')[1]
      .trim()
      .split('\n')
      .slice(2);
    expect(perTaskRows).toEqual(
      across.perTask.flatMap(({ task, comparison: c }) =>
        c!.runs.map((r, i) =>
          [task, r, c!.names![i], c!.means[i], ...c!.rankIntervals[i], c!.tiedWithBest.includes(r)].join(','),
        ),
      ),
    );
    await noSideScroll(page, 'all-pairs-across');
    expect(errors.join('\n')).toBe('');
  }, 900_000);

  test('across the three tasks of a 10k-document scale shard: per-task means, tied with best per task and pooled equal the core', async () => {
    const { page } = s;
    const errors = pageErrors(page);
    // 10,000 documents, 300 queries dealt to 3 tasks (100 each), no vectors: BM25 only.
    const dir = makeScaleShard('all-pairs-tasks-', { docs: 10_000, queries: 300, tasks: 3 });
    try {
      const shard = `/generated-shards/${basename(dir)}/`;
      const tasks = ['scale-qa-1', 'scale-qa-2', 'scale-qa-3'];
      const specs = ['bm25(k1=0.1,b=0)', 'bm25(k1=1.2,b=0.75)', 'bm25(k1=3,b=1)'];
      const earlier: AllPairsRun[][] = [];
      for (const task of tasks.slice(0, 2)) {
        await openTask(page, shard, task, specs);
        earlier.push(await exportedRuns(page, await pickedIds(page)));
      }
      await openTask(page, shard, tasks[2], specs);
      await page.selectOption('[data-testid="pairs-method"]', 'tukey');
      await page.check('[data-testid="pairs-across"]');
      const marks = await page.evaluate(() => performance.getEntriesByName('loupe:pairs').length);
      await computePairs(page, marks + 1);
      const here = await exportedRuns(page, await pickedIds(page));
      for (const r of [...earlier.flat(), ...here]) expect(r.perQuery.size).toBe(100);
      const match = (runs: AllPairsRun[]) =>
        here.map((h) => ({ ...runs.find((r) => r.name === h.name)!, id: h.id }));
      const across = allPairsAcrossTasks({
        tasks: [
          { task: tasks[0], inputs: match(earlier[0]) },
          { task: tasks[1], inputs: match(earlier[1]) },
          { task: tasks[2], inputs: here },
        ],
        measure: MEASURE,
      });
      expect(across.perTask.map((t) => t.task)).toEqual(tasks);
      await expectShown(page, across.pooled);
      await expectPerTask(page, across, specs.length);
      const json = JSON.parse(await download(page, 'pairs-json'));
      expect(json.per_task.map((t: { task: string }) => t.task)).toEqual(tasks);
      expect(json.skipped_tasks).toEqual([]);
      expect(json.pooled.tied_with_best).toEqual(across.pooled.tiedWithBest);
      await noSideScroll(page, 'all-pairs-scale-tasks', [390]);
      expect(errors.join('\n')).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});
