// Interactive query latency as a user meets it: the production build (vite build + preview, cross-origin
// isolated), the real Search view in headless Chromium, WASM. Two scenarios:
//   text        medquad, 100 ad-hoc text queries (the shard's own), loupe-test/minilm-l6-random q8
//   image+text  vqa-rad image-question-to-passage, 100 image + question queries (the shard's own),
//               loupe-test/clip-vit-b16-random q8 (the CLIP ViT-B/16 shape)
// Each query is typed (and its image picked through the file input) and submitted; the app's
// performance measures (src/lib/platform/page/query-timing.ts) give each stage: tokenize, preprocess
// (image decode + resize), encode, search, fuse, render, and `query` end to end (submit to results
// painted). `other` is what no stage covers (worker round trips, the job bar, state). The first query
// of a scenario embeds the corpus (or reuses precomputed embeddings) and is reported apart; two
// more warm-up queries are not counted. The counted queries alternate cold (Search pressed right
// after the image and text are in) and hidden (pressed 1 s later: the app has embedded the image as it
// was added and the text on the typing pause), and both are reported. Prints p50/p95 per stage and writes bench-results/latency.json;
// --write-benchmarks replaces the bench:latency section of BENCHMARKS.md.
//
//   npm run bench:latency [-- --queries 100] [--only text|image+text] [--no-build] [--write-benchmarks]
//   (smallest: --queries 2 --only text)
//
// Figures come from generated models with random weights (the shapes of the real ones): their compute
// cost is the real models', their rankings are not.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { DATA_DIR } from '../tests/paths';
import {
  benchArgs,
  openBrowser,
  publish,
  quantile,
  requireGenerated,
  runInfo,
  searchApp,
  sitePreview,
  whole,
} from './lib/bench-harness';

const STAGES = ['tokenize', 'preprocess', 'encode', 'search', 'fuse', 'render'] as const;
type Row = Record<(typeof STAGES)[number] | 'query' | 'other', number>;

const argv = benchArgs({
  queries: { type: 'string', default: '100' },
  only: { type: 'string' },
  out: { type: 'string', default: 'bench-results/latency.json' },
  /** A browser profile to keep between runs (its cached corpus embeddings skip the first query's wait). */
  profile: { type: 'string' },
});
const N = whole('queries', argv.queries);
/** Image + text p50 from pressing Search with the image and text embedded ahead (issue 20). */
const HIDDEN_TARGET_MS = 100;
/** The pause before Search in the hidden rows (the issue's "image added ≥ 1 s before"). */
const HIDDEN_PAUSE_MS = 1000;

interface Scenario {
  name: 'text' | 'image+text';
  shard: string;
  task: string;
  model: string;
  target: number;
  queries: { text: string; image?: string }[];
}

function shardQueries(shard: string, task: string, withImage: boolean) {
  return readFileSync(join(DATA_DIR, shard, 'queries.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { text?: string; image?: string; task?: string })
    .filter((q) => q.task === task && q.text && (!withImage || q.image))
    .map((q) => ({ text: q.text!, image: withImage ? q.image : undefined }));
}

const scenarios: Scenario[] = [
  {
    name: 'text' as const,
    shard: 'medquad',
    task: 'qa-answer-retrieval',
    model: 'loupe-test/minilm-l6-random',
    target: 50,
    queries: shardQueries('medquad', 'qa-answer-retrieval', false),
  },
  {
    name: 'image+text' as const,
    shard: 'vqa-rad',
    task: 'image-question-to-passage',
    model: 'loupe-test/clip-vit-b16-random',
    target: 250,
    queries: shardQueries('vqa-rad', 'image-question-to-passage', true),
  },
].filter((s) => !argv.only || s.name === argv.only);

async function timings(page: Page): Promise<Row> {
  return page.evaluate(
    (stages) => {
      const out: Record<string, number> = {};
      for (const s of [...stages, 'query'])
        out[s] = performance.getEntriesByName(`loupe:${s}`, 'measure').reduce((a, e) => a + e.duration, 0);
      out.other = out.query - stages.reduce((a, s) => a + out[s], 0);
      return out as Row;
    },
    STAGES as unknown as string[],
  );
}

/**
 * Types the query (and picks its image), submits, and waits until its results are painted. `hidden`:
 * as a person who adds the image, types and pauses: Search is pressed HIDDEN_PAUSE_MS after the image
 * and the text are in (the app embeds both ahead); otherwise right after (cold).
 */
async function ask(page: Page, q: Scenario['queries'][number], hidden = false): Promise<Row> {
  if (q.image) {
    // As a user replaces the image: remove the previous one, pick the next.
    const remove = page.getByRole('button', { name: 'remove image' });
    if (await remove.count()) await remove.click();
    await page.setInputFiles('[data-testid="search-image-input"]', join(DATA_DIR, 'vqa-rad', q.image));
    await page.waitForSelector('[data-testid="search-image-preview"]');
  }
  await searchApp(page, { search: { text: q.text, pauseMs: hidden ? HIDDEN_PAUSE_MS : 0, enter: true } });
  return timings(page);
}

await requireGenerated(scenarios.map((s) => s.model));
process.env.LOUPE_DATA_DIR = DATA_DIR;
// A kept profile needs the same origin (port) to find its IndexedDB again.
const server = await sitePreview({ noBuild: argv['no-build'], port: argv.profile ? 4199 : undefined });
const base = server.base;
const run = runInfo();

const results: {
  scenario: string;
  model: string;
  target: number;
  firstQueryMs: number;
  threads: string;
  rows: Row[];
  hiddenRows: Row[];
}[] = [];

for (const sc of scenarios) {
  const { page, close } = await openBrowser({
    profileDir: argv.profile ? resolve(argv.profile, sc.name) : undefined,
  });
  try {
    const params = new URLSearchParams({
      shard: `${base}/shards/${sc.shard}/`,
      task: sc.task,
      'search-model': sc.model,
      device: 'wasm',
      dtype: 'q8',
    });
    await searchApp(page, { url: `${base}/?${params}#/search`, idle: true });
    const queries = sc.queries.slice(0, N + 3);
    if (queries.length < N + 3)
      throw new Error(`${sc.shard}/${sc.task} has only ${sc.queries.length} queries`);
    console.log(`${sc.name}: first query (loads the model, embeds or reads the corpus)…`);
    const first = await ask(page, queries[0]);
    await ask(page, queries[1]);
    await ask(page, queries[2]);
    const threads = await page.evaluate(
      () =>
        `${crossOriginIsolated ? 'cross-origin isolated' : 'not isolated'}, ${navigator.hardwareConcurrency} cores`,
    );
    // Cold and hidden alternate query by query (the same conditions for both).
    const rows: Row[] = [];
    const hiddenRows: Row[] = [];
    for (const [i, q] of queries.slice(3).entries()) {
      if (i % 2 === 0) rows.push(await ask(page, q));
      else hiddenRows.push(await ask(page, q, true));
      if ((i + 1) % 25 === 0) console.log(`  ${i + 1}/${N}`);
    }
    const med = (k: string) =>
      quantile(
        rows.map((x) => (x as Record<string, number>)[k]),
        0.5,
      ).toFixed(1);
    console.log(
      `  p50 ms: ${Object.keys(rows[0])
        .map((k) => `${k} ${med(k)}`)
        .join(' · ')}`,
    );
    results.push({
      scenario: sc.name,
      model: sc.model,
      target: sc.target,
      firstQueryMs: first.query,
      threads,
      rows,
      hiddenRows,
    });
  } finally {
    await close();
  }
}
await server.close();

const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const lines: string[] = [];
for (const r of results) {
  const p50 = quantile(
    r.rows.map((x) => x.query),
    0.5,
  );
  const hp50 = quantile(
    r.hiddenRows.map((x) => x.query),
    0.5,
  );
  const hiddenTarget = r.scenario === 'image+text' ? HIDDEN_TARGET_MS : r.target;
  lines.push(
    `**${r.scenario}** (${r.model}, q8, WASM; ${r.threads}): ${r.rows.length} cold + ${r.hiddenRows.length} hidden ` +
      `queries, alternating. End-to-end p50 from pressing Search: cold **${fmt(p50)} ms** (target ≤ ${r.target} ms: ` +
      `${p50 <= r.target ? 'met' : 'missed'}), hidden **${fmt(hp50)} ms** (target ≤ ${hiddenTarget} ms: ` +
      `${hp50 <= hiddenTarget ? 'met' : 'missed'}); first query ${fmt(r.firstQueryMs)} ms (model load and corpus ` +
      'embedding or reuse). Cold: Search pressed right after the image and text are in; hidden: ' +
      `${HIDDEN_PAUSE_MS} ms later (the image was embedded as it was added, the text on the typing pause).`,
    '',
    '| stage | cold p50 ms | cold p95 ms | hidden p50 ms | hidden p95 ms |',
    '| --- | ---: | ---: | ---: | ---: |',
  );
  for (const s of [...STAGES, 'other', 'query'] as const) {
    const xs = r.rows.map((x) => x[s]);
    const hs = r.hiddenRows.map((x) => x[s]);
    lines.push(
      `| ${s === 'query' ? 'end to end' : s} | ${fmt(quantile(xs, 0.5))} | ${fmt(quantile(xs, 0.95))} | ` +
        `${fmt(quantile(hs, 0.5))} | ${fmt(quantile(hs, 0.95))} |`,
    );
  }
  lines.push('');
}
const header =
  `${run.header('npm run bench:latency')}. ` +
  `Random-weight generated models (the real models' shapes and compute, not their rankings).`;
publish('latency', `${header}\n\n${lines.join('\n')}`, {
  write: argv['write-benchmarks'],
  json: { file: argv.out!, data: { started: run.started.toISOString(), results } },
});
