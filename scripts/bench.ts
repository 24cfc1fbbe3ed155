// Headless runner: builds the static site, serves it on 127.0.0.1, drives it in headless Chromium
// through the same UI path a person uses (URL parameters → import → run → export buttons), saves
// run.trec / qrels.trec / metrics.json / metrics.csv, re-scores run.trec independently, prints the table.
//
//   npm run bench -- --shard ../shared/data/medquad [--task T] [--retriever bm25] [--k1 0.9] [--b 0.4]
//                    [--depth 100] [--out bench-results] [--no-build] [--maxLineMB 8 --maxFieldMB 4 --maxImageMB 32 --maxImageMP 100]
//                    [--semantics 10.0-c|9.0.8]   (trec_eval 10.0 -c, default; or 9.0.8 / pytrec_eval: set in the metrics panel)
//   npm run bench -- --shard ../shared/data/vqa-rad --retriever dense --model loupe-test/clip-tiny-random
//                    [--device auto|webgpu|wasm] [--dtype fp32|q8|…] [--fusion both|score|feature] [--alpha 0.5]
//                    [--index exact|hnsw] [--M 16] [--efConstruction 200] [--efSearch 384]
//                    [--chunks first|mean|max] [--overlap 32]   (long texts: README "Models")
//                    [--images first|mean|max]                  (multi-image items: README "Shards")
//   npm run bench -- --shard ../shared/data/vqa-rad --task text-to-image \
//                    --compare 'bm25(k1=0.9,b=0.4);dense(model=loupe-test/clip-tiny-random,dtype=fp32)' [--fuse 'rrf(k=60)']
//     runs (or reuses) each retriever through the UI's permalink and prints the UI's comparison table;
//     with three runs or more also the UI's "which runs really differ" table (Tukey HSD on nDCG@10: runs
//     by mean, rank intervals, tied with the best; the table bench:compare prints).
//     --fuse takes any permalink fusion: rrf, wrrf, combsum, combmnz, combmax, combmin, combanz, linear,
//     isr, logisr, borda, condorcet, with k=, norm=minmax|zscore|sum|max|rank|none, w=0.7:0.3, and
//     cross-validated tuning: 'linear(norm=minmax,cv=5,seed=42,measure=ndcg_cut_10,step=0.1)'.
//   npm run bench -- --shard ../shared/data/medquad --retriever dense --model loupe-test/bert-tiny-random \
//                    --device wasm --dtype fp32 --approximation [--task T]
//     after each task's exact dense run, the Benchmark view's "Quality under approximation" panel as a
//     person uses it: every configuration it lists as not stored yet ticked (HNSW at ef 16, 64, 256,
//     the two-pass 4-bit scan, the model's other dtypes; on a shard with a packed IVF index, IVF by
//     nprobe), "Run the ticked ones, then compare" clicked, the panel's Export CSV saved as
//     approximation.csv beside the run's files and printed as a text table (measure with its CI, Δ to
//     exact, Holm's p, recall@10 vs exact, query p50/p99 in ms, bytes per query, index memory).
//     Needs --retriever dense and --index exact (the panel's HNSW rows are its own). Each dtype row
//     embeds the corpus again: keep to small shards on a small machine.
//
// Exit codes: 0 done; 2 invalid input (usage, or a shard that fails validation: each issue is printed as
// file:line [code] message, no stack trace); 1 internal failure (a bug or a broken environment).
import type { Page } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { evaluate, measureLabel, standardMeasures } from '../src/lib/core/eval/metrics';
import { parseQrels, parseRun } from '../src/lib/core/eval/trec';
import { DEFAULT_SEMANTICS, SEMANTICS, parseSemantics, type Semantics } from '../src/lib/core/eval/semantics';
import { compareWithTrecEval } from './lib/trec-eval-output';
import { parseFuseSpec } from '../src/lib/core/eval/permalink';
import { formatTextTable } from '../src/lib/core/eval/all-pairs';
import { approximationTextRows, readApproximationCsv } from '../src/lib/core/eval/approximation-text';
import { isTestModel } from '../src/lib/core/retrieval/runs';
import { TIE_TOP_K, queriesWithTies } from '../src/lib/core/eval/ties';
import { readShard } from '../src/lib/core/shard/read-shard';
import { loadNodeDicomCodecs } from './lib/node-dicom-codecs';
import { LIMIT_OPTIONS, parseLimits } from '../src/lib/core/shard/limits';
import { ShardValidationError, type ShardIssue } from '../src/lib/core/shard/source';
import { FsSource } from './lib/fs-source';
import { ROOT, benchArgs, openBrowser, sitePreview, usage } from './lib/bench-harness';

const args = benchArgs({
  shard: { type: 'string' },
  task: { type: 'string' },
  retriever: { type: 'string', default: 'bm25' },
  k1: { type: 'string' },
  b: { type: 'string' },
  depth: { type: 'string', default: '100' },
  model: { type: 'string' },
  device: { type: 'string', default: 'auto' },
  dtype: { type: 'string', default: 'auto' },
  fusion: { type: 'string', default: 'both' },
  alpha: { type: 'string', default: '0.5' },
  index: { type: 'string', default: 'exact' },
  M: { type: 'string' },
  efConstruction: { type: 'string' },
  efSearch: { type: 'string' },
  chunks: { type: 'string', default: 'first' },
  images: { type: 'string' },
  overlap: { type: 'string' },
  compare: { type: 'string' },
  fuse: { type: 'string' },
  approximation: { type: 'boolean', default: false },
  out: { type: 'string', default: 'bench-results' },
  semantics: { type: 'string', default: DEFAULT_SEMANTICS },
  // Shard size limits (README "Limits"): passed to the page URL and to the pre-validation.
  maxLineMB: { type: 'string' },
  maxFieldMB: { type: 'string' },
  maxImageMB: { type: 'string' },
  maxImageMP: { type: 'string' },
});

if (!args.shard) usage('usage: npm run bench -- --shard <folder or URL> [--task T] [--retriever bm25]');
let semantics: Semantics = DEFAULT_SEMANTICS;
try {
  semantics = parseSemantics(args.semantics!);
} catch (e) {
  usage((e as Error).message);
}
if (args.retriever !== 'bm25' && args.retriever !== 'dense')
  usage(`unknown retriever '${args.retriever}': use bm25 or dense`);
const registry = JSON.parse(readFileSync(join(ROOT, 'models/registry.json'), 'utf8')) as {
  models: { id: string; kind: string; local?: boolean }[];
};
const model = args.retriever === 'dense' ? registry.models.find((m) => m.id === args.model) : undefined;
if (args.retriever === 'dense' && !model)
  usage(`--model must be one of: ${registry.models.map((m) => m.id).join(', ')}`);
if (args.approximation && (args.retriever !== 'dense' || args.compare || args.index !== 'exact'))
  usage('--approximation needs --retriever dense with --index exact, and no --compare');

/** Prints a shard's validation issues (file:line [code] message) and exits 2: invalid input, not a crash. */
function invalidShard(
  shard: string,
  issues: Pick<ShardIssue, 'file' | 'line' | 'code' | 'message'>[],
): never {
  console.error(
    `bench: the shard ${shard} is invalid (${issues.length} issue${issues.length === 1 ? '' : 's'}):`,
  );
  for (const i of issues) console.error(`  ${i.file}${i.line ? `:${i.line}` : ''} [${i.code}] ${i.message}`);
  process.exit(2);
}

/** The page rejected its input (the shard, a task name): exit 2 with its message, no stack trace. */
class InputError extends Error {}

// Anything thrown and not handled is an internal failure: exit 1 (with the stack: it is a bug to report).
process.on('uncaughtException', (e) => {
  if (e instanceof InputError) usage(`bench: ${e.message}`);
  console.error('bench: internal failure:', e);
  process.exit(1);
});

const limitArgs = Object.values(LIMIT_OPTIONS)
  .map((o) => o.name)
  .filter((n) => args[n as keyof typeof args] !== undefined);
const { limits, errors: limitErrors } = parseLimits(
  (n) => args[n as keyof typeof args] as string | undefined,
);
if (limitErrors.length) usage(`bench: ${limitErrors.join('; ')}`);

const isUrl = /^https?:\/\//.test(args.shard);
if (!isUrl) {
  const folder = resolve(args.shard);
  if (!existsSync(folder) || !statSync(folder).isDirectory()) usage(`--shard ${args.shard}: not a folder`);
  // Validate before building anything: an invalid shard is the user's input, reported as such (exit 2).
  // The page validates again on import; this only makes the verdict fast and stack-free.
  try {
    await readShard(new FsSource(folder), { limits, loadDicomCodecs: loadNodeDicomCodecs });
  } catch (e) {
    if (e instanceof ShardValidationError) invalidShard(args.shard, e.issues);
    throw e;
  }
}
const shardPath = isUrl ? args.shard : `/shards/${basename(resolve(args.shard))}/`;
// No data goes into dist/: not the shard given, not the demo shards, nothing beside them. The preview
// server serves the given shard from where it is, at /shards/<name>/, and nothing else of its folder
// (vite.config.ts: LOUPE_DATA_DIR is its parent, LOUPE_DEMO_SHARDS its name).
process.env.LOUPE_DEMO_SHARDS = '';
const server = await sitePreview({
  noBuild: args['no-build'],
  previewEnv: isUrl
    ? {}
    : { LOUPE_DATA_DIR: dirname(resolve(args.shard)), LOUPE_DEMO_SHARDS: basename(resolve(args.shard)) },
});
const base = server.base;
const shardUrl = new URL(shardPath, base).href;
const browser = await openBrowser({ acceptDownloads: true });
const page = browser.page;

/** Navigates and waits for one of the phases; returns ms from navigation start to that phase. */
async function visit(query: Record<string, string>, until: string[]): Promise<number> {
  const url = `${base}/?${new URLSearchParams(query)}`;
  await page.goto(url);
  const sel = until.map((p) => `[data-testid="app"][data-phase="${p}"]`).join(', ');
  await page.waitForSelector(
    `${sel}, [data-testid="app"][data-phase="error"], [data-testid="shard-issues"]`,
    {
      timeout: 30 * 60_000,
    },
  );
  const phase = await page.getAttribute('[data-testid="app"]', 'data-phase');
  if (!until.includes(phase ?? '')) {
    // Validation issues (a URL shard: folders were validated before the build) are the user's input.
    const issues = await page.locator('[data-testid="shard-issues"]').allInnerTexts();
    if (issues.length) throw new InputError(`the shard ${args.shard} is invalid:\n${issues.join('\n')}`);
    const text = await page.locator('[data-testid="message"]').allInnerTexts();
    throw new Error(`page ended in phase ${phase}: ${text.join('\n')}`);
  }
  // The app marks `loupe:<phase>` when it gets there; polling latency is not counted.
  return page.evaluate(
    (ph) => performance.getEntriesByName(`loupe:${ph}`).at(-1)?.startTime ?? performance.now(),
    phase!,
  );
}

async function saveDownload(p: Page, testId: string, file: string) {
  const [dl] = await Promise.all([p.waitForEvent('download'), p.click(`[data-testid="${testId}"]`)]);
  await dl.saveAs(file);
}

const common: Record<string, string> = { shard: shardUrl, depth: args.depth! };
for (const n of limitArgs) common[n] = args[n as keyof typeof args] as string;
if (args.k1) common.k1 = args.k1;
if (args.b) common.b = args.b;
if (model) {
  Object.assign(common, {
    retriever: 'dense',
    model: model.id,
    device: args.device!,
    dtype: args.dtype!,
    fusion: args.fusion!,
    alpha: args.alpha!,
  });
  if (args.index !== 'exact' && args.index !== 'hnsw') throw new InputError('--index is exact or hnsw');
  // HNSW: the exact run is made too, for recall@10 (both runs are exported).
  if (args.index === 'hnsw') {
    common.index = 'hnsw';
    for (const k of ['M', 'efConstruction', 'efSearch'] as const) if (args[k]) common[k] = args[k]!;
  }
  // Long texts: truncated to the model's window (first), or every window averaged (mean) or max-scored.
  if (!['first', 'mean', 'max'].includes(args.chunks!))
    throw new InputError('--chunks is first, mean or max');
  if (args.chunks !== 'first') common.chunks = args.chunks!;
  if (args.images !== undefined) {
    if (!['first', 'mean', 'max'].includes(args.images))
      throw new InputError('--images is first, mean or max (multi-image items)');
    common.images = args.images;
  }
  if (args.overlap) {
    if (!/^\d+$/.test(args.overlap)) throw new InputError('--overlap is a number of tokens');
    common.overlap = args.overlap;
  }
}

/** --compare: the UI's comparison of several retrievers on one task, printed as the UI shows it. */
async function compareMode() {
  if (!args.task) throw new InputError('--compare needs --task');
  const q: Record<string, string> = {
    shard: shardUrl,
    task: args.task,
    runs: args.compare!,
    compare: '1',
    depth: args.depth!,
  };
  if (args.fuse) {
    // A bad spec is bad input (exit 2), said here rather than as a message in the page.
    try {
      parseFuseSpec(args.fuse);
    } catch (e) {
      throw new InputError(`--fuse: ${e instanceof Error ? e.message : String(e)}`);
    }
    q.fuse = args.fuse;
  }
  await visit(q, ['done']);
  await page.waitForSelector('[data-testid="comparison-table"], [data-testid="message"]', {
    timeout: 30 * 60_000,
  });
  await page.waitForFunction(() => performance.getEntriesByName('loupe:compared').length > 0, null, {
    timeout: 30 * 60_000,
  });
  if (semantics !== DEFAULT_SEMANTICS) {
    // The permalink compared under the default; choose the semantics in the metrics panel and compare again.
    await page.selectOption('[data-testid="semantics-select"]', semantics);
    await page.click('[data-testid="compare-run"]');
    await page.waitForFunction(() => performance.getEntriesByName('loupe:compared').length > 1, null, {
      timeout: 30 * 60_000,
    });
  }
  const table = await page.$$eval('[data-testid="comparison-table"] tr', (trs) =>
    trs.map((tr) => [...tr.querySelectorAll('th, td')].map((c) => (c.textContent ?? '').trim())),
  );
  const link = await page.inputValue('[data-testid="permalink"]').catch(() => '');
  const widths = table[0].map((_, i) => Math.max(...table.map((r) => (r[i] ?? '').length)));
  console.log(`\nLoupe comparison · ${args.task} · ${shardUrl} · ${SEMANTICS[semantics].label}\n`);
  for (const r of table)
    console.log(r.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  '));
  if ((await page.locator('[data-testid="compare-pick"]:checked').count()) >= 3) {
    await page.click('[data-testid="pairs-run"]');
    await page.waitForFunction(() => performance.getEntriesByName('loupe:pairs').length > 0, null, {
      timeout: 30 * 60_000,
    });
    const rows = await page.$$eval('[data-testid="pairs-runs"] tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('th, td')].map((c) => (c.textContent ?? '').trim())),
    );
    console.log(
      `\nWhich runs really differ · ${await page.innerText('[data-testid="pairs-method-note"]')}\n`,
    );
    console.log(formatTextTable(rows));
  }
  const message = await page.locator('[data-testid="message"]').allInnerTexts();
  if (message.length) console.log(`\n${message.join('\n')}`);
  console.log(`\npermalink (this server): ${link}`);
}

/**
 * --approximation: the task's "Quality under approximation" panel (Benchmark view), used as a person
 * would after the exact run: the model picked, every missing configuration left ticked, "Run the
 * ticked ones, then compare" clicked (or "Compare … stored runs" when nothing is missing), the table
 * awaited, Export CSV saved to `outDir`/approximation.csv; the CSV read back and returned as lines.
 */
async function approximationPanel(outDir: string): Promise<string[]> {
  const panel = page.locator('[data-testid="approximation"]');
  await panel.waitFor({ timeout: 60_000 });
  await panel.locator('[data-testid="approx-model"]').selectOption(model!.id);
  const missing = await panel
    .locator('[data-missing]')
    .evaluateAll((els) => els.map((e) => e.getAttribute('data-missing') ?? ''));
  const marks = () => page.evaluate(() => performance.getEntriesByName('loupe:approximation').length);
  const before = await marks();
  const t0 = Date.now();
  await panel
    .locator(missing.length ? '[data-testid="approx-run-missing"]' : '[data-testid="approx-build"]')
    .click();
  // The table is built (the stats worker's answer marks `loupe:approximation`) after the last run.
  try {
    await page.waitForFunction(
      (n) => performance.getEntriesByName('loupe:approximation').length > n,
      before,
      {
        timeout: 60 * 60_000,
      },
    );
  } catch (e) {
    const text = await page.locator('[data-testid="message"]').allInnerTexts();
    throw new Error(`the approximation table was not built: ${text.join('\n') || String(e)}`);
  }
  await panel.locator('[data-testid="approx-table"]').waitFor();
  const notRun = await panel
    .locator('[data-missing]')
    .evaluateAll((els) => els.map((e) => e.getAttribute('data-missing') ?? ''));
  const file = join(outDir, 'approximation.csv');
  await saveDownload(page, 'approx-csv', file);
  const csv = readApproximationCsv(readFileSync(file, 'utf8'));
  const measure = /^quality under approximation: (\S+)/.exec(csv.notes[0] ?? '')?.[1] ?? 'ndcg_cut_10';
  return [
    '',
    `  Quality under approximation (Benchmark view panel) · ${model!.id} · ${missing.length} configurations run (${((Date.now() - t0) / 1000).toFixed(1)} s)`,
    ...csv.notes.map((n) => `  ${n}`),
    "  ms p50/p99: each query's own search in its worker (scoring and top k; not its embedding); HNSW: 100 queries timed one at a time",
    '',
    ...formatTextTable(approximationTextRows(csv, measureLabel(measure)))
      .split('\n')
      .map((l) => `  ${l}`),
    ...(notRun.length ? [`  not run (stopped or failed): ${notRun.join('; ')}`] : []),
    ...(model!.local || isTestModel(model!.id)
      ? [`  ${model!.id} has random weights: these figures test the path, not retrieval quality.`]
      : []),
    `  file: ${file}`,
  ];
}

/** The per-language rows of the UI's metrics.json (the `language` query facet), as printed lines. */
function languageTable(ui: {
  facets?: { key: string; values: { value: string; queries: number; means: Record<string, number> }[] }[];
}): string[] {
  const facet = ui.facets?.find((f) => f.key === 'language');
  if (!facet) return [];
  const cols = ['ndcg_cut_10', 'recall_100', 'recip_rank'];
  return [
    '  per language (also in metrics.json "facets" and the language rows of metrics.csv):',
    '  ' +
      'language'.padEnd(10) +
      'queries'.padStart(8) +
      cols.map((m) => measureLabel(m).padStart(11)).join(''),
    ...facet.values.map(
      (v) =>
        '  ' +
        v.value.padEnd(10) +
        String(v.queries).padStart(8) +
        cols.map((m) => (v.means[m] ?? 0).toFixed(4).padStart(11)).join(''),
    ),
  ];
}

try {
  if (args.compare) {
    await compareMode();
    process.exit(0);
  }
  // Cold start: import the shard from its URL, build and cache the BM25 index.
  const coldMs = await visit(common, ['ready']);
  // Warm start: the same page again — shard and index come from IndexedDB.
  const warmMs = await visit(common, ['ready']);
  const tasks: { id: string; queryModality: string }[] = await page.evaluate(() =>
    [...document.querySelectorAll<HTMLOptionElement>('[data-testid="task-select"] option')].map((o) => ({
      id: o.value,
      queryModality: (o.textContent ?? '').includes('(image →') ? 'image' : 'text',
    })),
  );
  // BM25 and text encoders cannot rank image-only queries; CLIP-style models can.
  const canRun = (t: { queryModality: string }) =>
    t.queryModality !== 'image' || (!!model && model.kind !== 'text');
  const selected = args.task ? tasks.filter((t) => t.id === args.task) : tasks.filter(canRun);
  if (args.task && selected.length === 0)
    throw new InputError(`task '${args.task}' not in shard (has: ${tasks.map((t) => t.id).join(', ')})`);

  const measures = standardMeasures([1, 5, 10, 100]);
  const shown = ['ndcg_cut_10', 'recall_10', 'recall_100', 'recip_rank', 'map', 'P_10'];
  const lines: string[] = [];
  for (const task of selected) {
    const doneAt = await visit({ ...common, task: task.id, run: '1' }, ['done']);
    // The semantics is a metrics-panel setting: chosen there, as a person would, before exporting.
    if (semantics !== DEFAULT_SEMANTICS)
      await page.selectOption('[data-testid="semantics-select"]', semantics);
    const t0 = await page.evaluate(() => performance.getEntriesByName('loupe:ready').at(-1)?.startTime ?? 0);
    // One visit can make several runs (image + text queries: score fusion and feature fusion).
    const rows = page.locator(`[data-testid="runs-table"] tbody tr[data-task="${task.id}"]`);
    const names = await rows.locator('[data-testid="run-name"]').allInnerTexts();
    for (let r = 0; r < names.length; r++) {
      await rows.nth(r).locator('[data-testid="run-name"]').click();
      const slug = names[r].replace(/[^\w.-]+/g, '_').replace(/^_+|_+$/g, '');
      const outDir = resolve(
        args.out!,
        `${basename(shardPath)}-${task.id}-${args.retriever}`,
        names.length > 1 ? slug : '',
      );
      mkdirSync(outDir, { recursive: true });
      await saveDownload(page, 'export-run', join(outDir, 'run.trec'));
      await saveDownload(page, 'export-sidecar', join(outDir, 'run.json'));
      await saveDownload(page, 'export-qrels', join(outDir, 'qrels.trec'));
      await saveDownload(page, 'export-json', join(outDir, 'metrics.json'));
      await saveDownload(page, 'export-csv', join(outDir, 'metrics.csv'));
      const ui = JSON.parse(readFileSync(join(outDir, 'metrics.json'), 'utf8'));

      // Independent check: parse the exported files from disk and score them again.
      const qrels = parseQrels(readFileSync(join(outDir, 'qrels.trec'), 'utf8'), 'qrels.trec');
      const run = parseRun(readFileSync(join(outDir, 'run.trec'), 'utf8'), 'run.trec');
      const again = evaluate(qrels, run, measures, SEMANTICS[semantics].options).all;
      if (ui.semantics !== semantics)
        throw new Error(`metrics.json says ${ui.semantics}, expected ${semantics}`);
      let worst = 0;
      for (const m of measures) worst = Math.max(worst, Math.abs((again[m] ?? 0) - (ui.overall[m] ?? 0)));
      let trecEvalNote = 'no trec_eval binary (set TREC_EVAL=/path/to/trec_eval to compare)';
      if (process.env.TREC_EVAL && run.size === 0) {
        // trec_eval refuses a result file without results; there is nothing to cross-check.
        trecEvalNote = 'trec_eval skipped: the run is empty (no query retrieved anything)';
      } else if (process.env.TREC_EVAL) {
        const args = [
          ...SEMANTICS[semantics].trecEvalFlags,
          '-m',
          'ndcg_cut.10',
          '-m',
          'recall.100',
          '-m',
          'recip_rank',
        ];
        let out: string;
        try {
          out = execFileSync(
            process.env.TREC_EVAL,
            [...args, join(outDir, 'qrels.trec'), join(outDir, 'run.trec')],
            {
              encoding: 'utf8',
              stdio: ['ignore', 'pipe', 'pipe'],
            },
          );
        } catch (e) {
          const err = e as { status?: number; stderr?: string; message: string };
          throw new Error(
            `TREC_EVAL=${process.env.TREC_EVAL} failed on ${outDir} (exit ${err.status ?? '?'}): ` +
              `${(err.stderr ?? '').trim() || err.message}`,
          );
        }
        trecEvalNote = compareWithTrecEval(out, ui.overall, ['ndcg_cut_10', 'recall_100', 'recip_rank']).note;
      }
      lines.push(
        `${basename(shardPath)} / ${task.id} · ${names[r]} (${ui.queries} queries, run ${((doneAt - t0) / 1000).toFixed(2)} s)`,
        '  ' + shown.map((m) => `${measureLabel(m).padStart(11)}`).join(''),
        '  ' + shown.map((m) => `${ui.overall[m].toFixed(4).padStart(11)}`).join(''),
        `  re-scored from run.trec: max |diff| ${worst.toExponential(1)} · ${trecEvalNote}`,
        ...languageTable(ui),
      );
      if (worst > 1e-12) throw new Error(`re-scoring run.trec disagrees with the UI by ${worst}`);
      // Ties, counted again from run.trec: the same queries as the UI's metrics.json.
      const tied = queriesWithTies(run, Object.keys(ui.perQuery), TIE_TOP_K, SEMANTICS[semantics].options);
      if (tied.length !== ui.ties.queries.length)
        throw new Error(
          `run.trec has ${tied.length} queries with a tie in the top 10, the UI ${ui.ties.queries.length}`,
        );
      lines.push(
        `  ties: ${tied.length} of ${ui.queries} queries have a tie in the top 10` +
          (tied.length
            ? ' (ordered by document id, as trec_eval does; the UI shows the range over tie orders)'
            : ''),
        `  files: ${outDir}`,
      );
    }
    if (args.approximation)
      lines.push(
        ...(await approximationPanel(
          resolve(args.out!, `${basename(shardPath)}-${task.id}-${args.retriever}`),
        )),
      );
  }
  if (model?.local)
    lines.push(
      '',
      `Note: ${model.id} is a generated model with random weights; its numbers test the pipeline, not retrieval.`,
    );
  console.log(`\nLoupe headless run · ${args.retriever} · ${shardUrl} · ${SEMANTICS[semantics].label}`);
  console.log(
    `cold start to ready ${(coldMs / 1000).toFixed(2)} s · warm start to ready ${(warmMs / 1000).toFixed(2)} s\n`,
  );
  console.log(lines.join('\n'));
  writeFileSync(
    resolve(args.out!, `${basename(shardPath)}-timings.json`),
    JSON.stringify(
      { shard: shardUrl, coldReadyMs: coldMs, warmReadyMs: warmMs, date: new Date().toISOString() },
      null,
      2,
    ),
  );
} finally {
  await browser.close();
  await server.close();
}
