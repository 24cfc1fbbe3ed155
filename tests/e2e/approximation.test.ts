// Quality under approximation (issue 37 item 2) in real Chromium: a synthetic scale shard (make-scale-
// shard in a temporary folder under the gitignored generated-shards/, random unit vectors as the
// precomputed corpus embeddings of the generated bert-tiny model: random weights, so the numbers
// measure the path, not retrieval quality) opened by one link that runs exact dense search. The
// Benchmark view's "Quality under approximation" panel lists what is not stored yet; it runs HNSW at
// ef = the depth, twice and four times it (100, 200, 400), the two-pass 4-bit scan and the model's other encoder dtypes as dense runs of
// their own, then shows one row per configuration: the measure with its CI, Δ to exact with its
// test, the groups, recall@10 against exact (equal to what each HNSW run recorded itself), query
// p50/p99 (every row), bytes per query and memory. The CSV holds the same rows; the chart exports as SVG; the view fits 390, 1024 and
// 1440 px without sideways scroll, with no page error.
//
// Size: 3,000 documents and 100 queries by default: what the rows and their checks need, since the
// corpus is embedded again for each dtype row (LOUPE_APPROX_DOCS=100000 for the 100k rung: its import and three
// HNSW builds over 100k rows take several minutes on the shared 2-core machine).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { launch, pageErrors, phase, type Session, download } from './browser';
import { shotPath } from './artifacts';
import { DATA_DIR } from '../paths';
import { serveRanges, type RangeServer } from './range-server';
import { makeScaleShard, packShard, writeSubset } from './shard-fixtures';
import { csvCells } from '../../src/lib/core/eval/approximation-text';
import { defaultNprobe } from '../../src/lib/core/retrieval/ivf';

const baseUrl = inject('baseUrl');
const MODEL = 'loupe-test/bert-tiny-random';
const DOCS = Number(process.env.LOUPE_APPROX_DOCS ?? 3_000);
const QUERIES = 100;

interface Rect {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}
interface Mark extends Rect {
  text: string;
  label: boolean;
}
const overlap = (a: Rect, b: Rect) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
// Half a pixel of rounding allowed at the chart's edge.
const inside = (a: Rect, o: Rect) =>
  a.x0 >= o.x0 - 0.5 && a.x1 <= o.x1 + 0.5 && a.y0 >= o.y0 - 0.5 && a.y1 <= o.y1 + 0.5;

/** The chart's drawn width and its box's (in the page). */
function chartWidths(fig: Element): { svg: number; box: number } {
  const svg = fig.querySelector('svg')!;
  return { svg: svg.getBoundingClientRect().width, box: svg.parentElement!.clientWidth };
}

/**
 * In the page: the chart's box, its point labels and numbers, its key lines (as drawn, from
 * getBoundingClientRect), and which table rows have this cost (the others are not plotted).
 */
function chartGeometry(fig: Element): { svg: Rect; marks: Mark[]; keys: Mark[]; plotted: number[] } {
  const rect = (e: Element) => {
    const r = e.getBoundingClientRect();
    return { x0: r.left, y0: r.top, x1: r.right, y1: r.bottom };
  };
  const svg = fig.querySelector('svg')!;
  const mark = (e: Element) => ({
    ...rect(e),
    text: e.textContent ?? '',
    label: e.hasAttribute('data-label'),
  });
  const panel = fig.closest('[data-testid="approximation"]')!;
  const cost = panel.querySelector<HTMLSelectElement>('[data-testid="approx-cost"]')!.value;
  const attr = cost === 'memory' ? 'data-memory' : cost === 'bytes' ? 'data-bytes' : 'data-p50';
  const rows = [...panel.querySelectorAll('[data-testid="approx-table"] tbody tr')];
  // A row without this cost shows '—' in its cell and is left out of the chart.
  const plotted = rows.flatMap((r, i) =>
    r.querySelector(`[${attr}]`)?.textContent?.trim() === '—' ? [] : [i],
  );
  return {
    svg: rect(svg),
    marks: [...svg.querySelectorAll('[data-label], [data-marker]')].map(mark),
    keys: [...svg.querySelectorAll('[data-key]')].map(mark),
    plotted,
  };
}

describe('quality under approximation (issue 37 item 2)', () => {
  let s: Session;
  let dir = '';
  beforeAll(async () => {
    dir = makeScaleShard('approx-', { docs: DOCS, queries: QUERIES, model: MODEL });
    s = await launch();
  }, 300_000);
  afterAll(async () => {
    await s?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('exact, HNSW at three ef, the two-pass scan and the other dtypes: one table, one chart, CSV and SVG', async () => {
    const { page } = s;
    const errors = pageErrors(page);
    const q = new URLSearchParams({
      shard: `/generated-shards/${basename(dir)}/`,
      task: 'scale-qa',
      runs: `dense(model=${MODEL},dtype=fp32,device=wasm)`,
      device: 'wasm',
      dtype: 'fp32',
    });
    await page.goto(`${baseUrl}/?${q}`);
    expect(await phase(page, 'done', 'error')).toBe('done');

    // One exact run stored: the panel offers what is missing.
    const panel = page.locator('[data-testid="approximation"]');
    await panel.waitFor();
    const missing = await panel
      .locator('[data-missing]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-missing')));
    expect(missing).toEqual([
      'HNSW ef 100',
      'HNSW ef 200',
      'HNSW ef 400',
      'two-pass 4-bit scan',
      'exact, q8 encoder',
      'exact, fp16 encoder',
    ]);
    const t0 = Date.now();
    await panel.locator('[data-testid="approx-run-missing"]').click();
    await panel.locator('[data-testid="approx-progress"]').waitFor({ timeout: 60_000 });
    await panel.locator('[data-testid="approx-table"]').waitFor({ timeout: 900_000 });
    console.log(
      `approximation: ${missing.length} configurations run and compared in ${((Date.now() - t0) / 1000).toFixed(1)} s (${DOCS} documents, ${QUERIES} queries)`,
    );
    expect(await panel.locator('[data-testid="approx-missing"]').count()).toBe(0);

    const rows = panel.locator('[data-testid="approx-table"] tbody tr');
    const kinds = await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-kind')));
    expect(kinds).toEqual(['exact', 'dtype', 'dtype', 'hnsw', 'hnsw', 'hnsw', 'compact']);
    const labels = await rows.locator('th').allInnerTexts();
    expect(labels.slice(3)).toEqual([
      'HNSW M 16, ef 100',
      'HNSW M 16, ef 200',
      'HNSW M 16, ef 400',
      expect.stringMatching(/^two-pass 4-bit scan/),
    ]);

    // recall@10 against exact: the HNSW rows equal what each HNSW run measured itself (its name says it).
    const names = await page.locator('[data-testid="runs-table"] [data-testid="run-name"]').allInnerTexts();
    const recallOf = (r: number) =>
      rows.nth(r).locator('[data-recall]').getAttribute('data-recall').then(Number);
    for (const [r, ef] of [
      [3, 100],
      [4, 200],
      [5, 400],
    ] as const) {
      const name = names.find((n) => n.includes(`HNSW ef=${ef} `))!;
      const own = Number(/recall@10 vs exact ([0-9.]+)/.exec(name)![1]);
      expect((await recallOf(r)).toFixed(3)).toBe(own.toFixed(3));
    }
    expect(await recallOf(0)).toBe(1);
    // Recall grows with ef; the two-pass scan rescored exactly finds exact's top 10.
    expect(await recallOf(5)).toBeGreaterThanOrEqual(await recallOf(3));
    expect(await recallOf(6)).toBeGreaterThanOrEqual(0.99);
    // The exact row: no Δ, tied with itself; the two-pass scan reads its rescored rows from OPFS.
    expect(await rows.nth(0).locator('[data-diff]').getAttribute('data-diff')).toBe('0');
    expect(Number(await rows.nth(6).locator('[data-bytes]').getAttribute('data-bytes'))).toBe(100 * 64 * 4);
    expect(Number(await rows.nth(0).locator('[data-memory]').getAttribute('data-memory'))).toBe(
      DOCS * 64 * 4,
    );

    // The CSV: the methods named, the same rows and values as the table.
    const csv = (await download(page, 'approx-csv')).trimEnd().split('\n');
    expect(csv[0]).toMatch(new RegExp(`^# quality under approximation: ndcg_cut_10 over ${QUERIES} queries`));
    expect(csv[3].startsWith('label,kind,setting,mean,')).toBe(true);
    expect(csv).toHaveLength(4 + 7);
    const shownMeans = await rows
      .locator('[data-mean]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-mean')));
    expect(csv.slice(4).map((l) => csvCells(l)[3])).toEqual(shownMeans);
    expect(csv.slice(4).map((l) => csvCells(l)[0])).toEqual(labels);

    // Query p50/p99 on every row: HNSW's timing pass; exact search, the other dtypes and the two-pass
    // scan each query's own ranking time in its worker (scoring and top k, not its embedding). Not
    // timed against a bound: only that each row has a number, in the table and in the CSV.
    const p50s = await rows
      .locator('[data-p50]')
      .evaluateAll((els) => els.map((e) => [e.getAttribute('data-p50'), e.getAttribute('data-p99')]));
    expect(p50s).toHaveLength(7);
    for (const [i, [p50, p99]] of p50s.entries()) {
      expect(p50, `row ${labels[i]}: p50`).not.toBe('');
      expect(Number.isFinite(Number(p50)) && Number(p50) >= 0, `row ${labels[i]}: p50 ${p50}`).toBe(true);
      expect(Number(p99), `row ${labels[i]}: p99 ≥ p50`).toBeGreaterThanOrEqual(Number(p50));
    }
    const p50Col = csv[3].split(',').indexOf('query_ms_p50');
    expect(csv.slice(4).map((l) => csvCells(l)[p50Col])).toEqual(p50s.map(([p50]) => p50));

    // The chart: one point per row, exported as SVG.
    const chart = panel.locator('[data-testid="chart"]');
    await chart.locator('svg').first().waitFor();
    const [dl] = await Promise.all([
      page.waitForEvent('download'),
      chart.locator('[data-testid="export-svg"]').click(),
    ]);
    const svg = readFileSync(await dl.path(), 'utf8');
    expect(svg).toMatch(/^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    // The placed point labels go with it (drawn again at the export's width).
    expect(svg).toMatch(/<text[^>]*data-label[^>]*>[^<]+<\/text>/);

    // The names the chart must show, on the plot or in its key: each row's setting ('exact' for exact).
    const rowNames = csv.slice(4).map((l) => (csvCells(l)[1] === 'exact' ? 'exact' : csvCells(l)[2]));
    const costs = ['memory', 'bytes', 'ms'] as const;
    for (const width of [390, 1024, 1440]) {
      await page.setViewportSize({ width, height: 860 });
      await expect
        .poll(() => page.evaluate(() => document.documentElement.scrollWidth - innerWidth))
        .toBeLessThanOrEqual(0);
      for (const c of costs) {
        await panel.locator('[data-testid="approx-cost"]').selectOption(c);
        // As wide as its box (redrawn when the box changes), at every width.
        await expect
          .poll(() => chart.evaluate(chartWidths).then((w) => Math.abs(w.svg - w.box)), { timeout: 10_000 })
          .toBeLessThanOrEqual(2);
        if (c === 'memory') await panel.screenshot({ path: shotPath(`approximation-${width}.png`) });
        else await chart.screenshot({ path: shotPath(`approximation-${width}-${c}.png`) });
        const g = await chart.evaluate(chartGeometry);
        if (width === 1440) expect(g.svg.x1 - g.svg.x0).toBeGreaterThan(1000);
        // Point labels and numbers: none over another, none out of the chart; every row named.
        expect(g.marks.length).toBeGreaterThan(0);
        for (const [i, a] of g.marks.entries()) {
          expect(inside(a, g.svg), `${c} at ${width}: "${a.text}" leaves the chart`).toBe(true);
          for (const b of g.marks.slice(i + 1))
            expect(overlap(a, b), `${c} at ${width}: "${a.text}" over "${b.text}"`).toBe(false);
        }
        for (const k of g.keys) expect(inside(k, g.svg), `${c} at ${width}: key line "${k.text}"`).toBe(true);
        // (Key lines joined by spaces: an entry wider than the chart is broken at spaces.)
        const shown = [
          ...g.marks.filter((m) => m.label).map((m) => m.text),
          g.keys.map((m) => m.text).join(' '),
        ].join(' | ');
        const plotted = rowNames.filter((_, i) => g.plotted.includes(i));
        for (const n of plotted) expect(shown, `${c} at ${width}: ${n}`).toContain(n);
      }
      expect(
        await page.evaluate(() => document.documentElement.scrollWidth - innerWidth),
      ).toBeLessThanOrEqual(0);
    }
    expect(errors.join('\n')).toBe('');
  }, 1_200_000);
});

// The packed IVF index at several nprobe: medquad (1,000 of its answers, 24 queries) packed by
// `npm run pack-shard -- --index ivf` with the generated bert-tiny model, served under a sub-path by a
// static server that honours Range and logs its bytes, opened by URL and run once (through the index,
// nprobe 16 of 48 lists). The panel then runs exact search with the index skipped (the corpus
// embedded here with the same encoder the packing used) and IVF at a quarter and four times the
// default nprobe, each from an empty cache of the index; the IVF rows' bytes per query are the
// server's log for their runs.
// LOUPE_APPROX_IVF_DOCS=100000: the same on the packed 100k shard (make-scale-shard's text, 100
// queries, embedded by pack-shard and packed in 2·√n = 632 lists: nprobe 4, 16, 64). Its packing
// takes about 4 minutes and its exact row embeds the 100k corpus in the page.
const IVF_DOCS = Number(process.env.LOUPE_APPROX_IVF_DOCS ?? 0);
const IVF = IVF_DOCS
  ? { name: 'scale-ivf', task: 'scale-qa', queries: 100, nlist: Math.round(2 * Math.sqrt(IVF_DOCS)) }
  : { name: 'medquad-ivf', task: 'qa-answer-retrieval', queries: 24, nlist: 48 };
const IVF_NPROBE = defaultNprobe(IVF.nlist);
const IVF_GRID = [Math.max(1, Math.round(IVF_NPROBE / 4)), IVF_NPROBE, Math.min(IVF.nlist, IVF_NPROBE * 4)];
describe('quality under approximation: the packed IVF index by nprobe', () => {
  let s: Session;
  let dir = '';
  let server: RangeServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loupe-approx-ivf-'));
    const packed = join(dir, `shards/${IVF.name}`);
    if (IVF_DOCS) makeScaleShard('', { docs: IVF_DOCS, queries: IVF.queries, out: packed });
    else writeSubset(join(DATA_DIR, 'medquad'), packed, { docs: 1000, queries: 24, name: IVF.name });
    packShard(packed, ['--model', MODEL, '--index', 'ivf', '--nlist', String(IVF.nlist)]);
    server = await serveRanges(dir, '/course/loupe/');
    s = await launch();
  }, 1_800_000);
  afterAll(async () => {
    await s?.dispose();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test(
    `exact (index skipped) and IVF at nprobe ${IVF_GRID.join(', ')}: recall rises with nprobe, bytes = the server log`,
    async () => {
      const { page } = s;
      const errors = pageErrors(page);
      const url = `${server.url}shards/${IVF.name}/`;
      const t0 = Date.now();
      await page.goto(
        `${baseUrl}/?shard=${url}&task=${IVF.task}&retriever=dense&model=${MODEL}&device=wasm&dtype=fp32&run=1`,
      );
      expect(await phase(page, 'done', 'error')).toBe('done');
      const panel = page.locator('[data-testid="approximation"]');
      await panel.waitFor();
      expect(await panel.locator('[data-testid="approx-no-exact"]').count()).toBe(1);
      const missing = await panel
        .locator('[data-missing]')
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-missing')!));
      expect(missing.slice(0, 3)).toEqual([
        'exact search (corpus embedded here)',
        `IVF nprobe ${IVF_GRID[0]}`,
        `IVF nprobe ${IVF_GRID[2]}`,
      ]);
      // Only these three (HNSW, the scan and the dtypes are the other test's).
      for (const m of missing.slice(3)) await panel.locator(`[data-missing="${m}"]`).uncheck();
      const from = server.log.length;
      await panel.locator('[data-testid="approx-run-missing"]').click();
      await panel
        .locator('[data-testid="approx-table"]')
        .waitFor({ timeout: IVF_DOCS ? 3_000_000 : 600_000 });
      // Every nprobe of the grid (around the index's default, 16) is stored now: none is offered again.
      expect(await panel.locator('[data-missing^="IVF"], [data-missing^="exact search"]').count()).toBe(0);
      const rows = panel.locator('[data-testid="approx-table"] tbody tr');
      expect(await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-kind')))).toEqual([
        'exact',
        'ivf',
        'ivf',
        'ivf',
      ]);
      expect(await rows.locator('th').allInnerTexts()).toEqual([
        'exact (fp32)',
        ...IVF_GRID.map((n) => `IVF ${IVF.nlist} lists, nprobe ${n}`),
      ]);
      const recall = await rows
        .locator('[data-recall]')
        .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-recall'))));
      expect(recall[1]).toBeLessThanOrEqual(recall[2]);
      expect(recall[2]).toBeLessThanOrEqual(recall[3]);
      // Every list probed (medquad), candidates rescored exactly: exact search's top 10.
      if (IVF_GRID[2] === IVF.nlist) expect(recall[3]).toBeGreaterThanOrEqual(0.99);
      // The bytes of the two IVF runs made here (cold cache) are what the server sent for them.
      const bytes = await rows
        .locator('[data-bytes]')
        .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-bytes'))));
      const sent = server.log
        .slice(from)
        .filter((e) => !!e.range && /\/(ivf-text\.bin|text\.npy)$/.test(e.path))
        .reduce((a, e) => a + e.bytes, 0);
      expect(bytes[0]).toBe(0);
      expect(Math.round((bytes[1] + bytes[3]) * IVF.queries)).toBe(sent);
      expect(bytes[1]).toBeLessThan(bytes[3]);
      // Query p50/p99 from the index worker's clock for every IVF row.
      for (const r of [1, 2, 3])
        expect(Number(await rows.nth(r).locator('[data-p50]').getAttribute('data-p50'))).toBeGreaterThan(0);
      // And exact search's own ranking time per query in the retrieval worker.
      const exactP50 = await rows.nth(0).locator('[data-p50]').getAttribute('data-p50');
      expect(exactP50).not.toBe('');
      expect(Number(exactP50)).toBeGreaterThanOrEqual(0);
      await panel.screenshot({ path: shotPath(`approximation-${IVF.name}.png`) });
      if (IVF_DOCS)
        console.log(
          `approximation on the packed ${IVF_DOCS.toLocaleString('en')}-document shard (${Math.round((Date.now() - t0) / 1000)} s):\n` +
            (await download(page, 'approx-csv')),
        );
      expect(errors.filter((e) => !/Failed to load resource/.test(e)).join('\n')).toBe('');
    },
    IVF_DOCS ? 3_600_000 : 900_000,
  );
});
