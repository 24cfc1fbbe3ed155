// The first query as a new visitor meets it: a fresh browser profile opens the static build (served
// by a plain static server under a sub-path, no COOP/COEP headers: the service worker makes the page
// isolated with one reload), once the browser has finished its own start-up (settleBrowser), with
// vqa-rad packed by pack-shard with its corpus embeddings for the generated CLIP tiny model and its
// images in one zip (`--images`), and asks an image + text question in the Search view. It times,
// each round:
//   open      page.goto → the shard imported and the Search view ready (service worker, import)
//   query     Search pressed → the results painted, and within it each phase of the progress line
//             (loupe:phase:* measures: load, download, compile, precomputed or embed…) and the
//             query's stages (tokenize, preprocess, encode, search…)
//   total     page.goto → the first image + text result painted
// Rounds alternate the packed shard with the same shard without embeddings (its images packed too;
// its corpus embedded on the first query), each in a fresh profile. Prints medians and ranges;
// --write-benchmarks replaces the bench:first-query section of BENCHMARKS.md.
//
//   npm run bench:first-query [-- --rounds 5] [--no-build] [--write-benchmarks]
//
// The generated model has random weights: the timings are real compute for its shape, the rankings
// mean nothing.
import { execFileSync, execSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium, type Page } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from '../tests/e2e/browser';
import { buildSite, serveStatic } from '../tests/e2e/static-server';
import { DATA_DIR } from '../tests/paths';
import { median } from '../src/lib/core/eval/stats';
import { writeBenchmarksSection } from './lib/benchmarks-md';
import { cpuProbe, probeSummary, settleBrowser } from './lib/bench-browser';

const ROOT = resolve(import.meta.dirname, '..');
const OUT = join(ROOT, '.test-results/first-query-dist');
const PREFIX = '/course/loupe/';
const MODEL = 'loupe-test/clip-tiny-random';
const TASK = 'image-question-to-passage';
const IMAGE = join(DATA_DIR, 'vqa-rad/images/synpic100132.jpg');
const QUESTION = 'is there a pneumothorax?';
const TARGET_MS = 3000;

const { values: argv } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    'no-build': { type: 'boolean', default: false },
    'write-benchmarks': { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(argv.rounds);

if (!argv['no-build'] || !existsSync(join(OUT, 'index.html'))) {
  console.log('building the site…');
  buildSite(OUT);
}
// Both copies are the build's own (pack-shard --out would write beside the data otherwise): the packed
// one with its corpus embeddings and its image pack, the plain one with only the image pack, so the
// pair differs only in the corpus's embedding on the first query.
function packInto(dir: string, args: string[]) {
  rmSync(dir, { recursive: true, force: true });
  cpSync(join(DATA_DIR, 'vqa-rad'), dir, { recursive: true });
  execFileSync(
    'npx',
    ['tsx', 'scripts/pack-shard.ts', '--shard', join(DATA_DIR, 'vqa-rad'), ...args, '--out', dir],
    {
      cwd: ROOT,
      stdio: 'inherit',
    },
  );
}
if (!existsSync(join(OUT, 'shards-packed/vqa-rad/images.zip')))
  packInto(join(OUT, 'shards-packed/vqa-rad'), ['--model', MODEL, '--images']);
if (!existsSync(join(OUT, 'shards-plain/vqa-rad/images.zip')))
  packInto(join(OUT, 'shards-plain/vqa-rad'), ['--images']);

interface Round {
  shard: 'packed' | 'plain';
  openMs: number;
  queryMs: number;
  totalMs: number;
  phases: Record<string, number>;
  stages: Record<string, number>;
}

async function sumMeasures(page: Page, prefix: string): Promise<Record<string, number>> {
  return page.evaluate((pre) => {
    const out: Record<string, number> = {};
    for (const e of performance.getEntriesByType('measure'))
      if (e.name.startsWith(pre))
        out[e.name.slice(pre.length)] = (out[e.name.slice(pre.length)] ?? 0) + e.duration;
    return out;
  }, prefix);
}

async function round(base: string, shard: Round['shard']): Promise<Round> {
  const profile = mkdtempSync(join(tmpdir(), 'loupe-first-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    headless: true,
    viewport: { width: 1280, height: 900 },
  });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (e) => console.error('page error:', e.message));
    // A visit happens in a browser that is already running: its start-up work is not the page's.
    await settleBrowser(profile);
    const params = new URLSearchParams({
      shard: `shards-${shard}/vqa-rad/`,
      task: TASK,
      'search-model': MODEL,
      device: 'wasm',
    });
    const t0 = Date.now();
    await page.goto(`${base}?${params}#/search`);
    await page.waitForSelector('[data-testid="app"][data-phase="ready"]', { timeout: 10 * 60_000 });
    await page.waitForSelector('[data-testid="search-input"]');
    const t1 = Date.now();
    // The import's phases (read, parse, store…): measured before the query adds its own.
    const openPhases = await sumMeasures(page, 'loupe:phase:');
    await page.setInputFiles('[data-testid="search-image-input"]', IMAGE);
    await page.fill('[data-testid="search-input"]', QUESTION);
    const t2 = Date.now();
    await page.click('[data-testid="search-submit"]');
    await page.waitForFunction(
      () =>
        performance.getEntriesByName('loupe:query', 'measure').length > 0 ||
        !!document.querySelector('[data-testid="search-error"]'),
      null,
      { timeout: 10 * 60_000, polling: 'raf' },
    );
    const error = await page.locator('[data-testid="search-error"]').allInnerTexts();
    if (error.length) throw new Error(`search failed: ${error.join(' ')}`);
    const t3 = Date.now();
    const all = await sumMeasures(page, 'loupe:phase:');
    const phases: Record<string, number> = {};
    for (const [k, v] of Object.entries(all))
      if (v - (openPhases[k] ?? 0) > 0.5) phases[k] = v - (openPhases[k] ?? 0);
    for (const [k, v] of Object.entries(openPhases)) phases[`open:${k}`] = v;
    const stages = await sumMeasures(page, 'loupe:');
    for (const k of Object.keys(stages)) if (k.startsWith('phase:')) delete stages[k];
    return { shard, openMs: t1 - t0, queryMs: t3 - t2, totalMs: t1 - t0 + (t3 - t2), phases, stages };
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

const sec = (ms: number) => (ms / 1000).toFixed(2);

const server = await serveStatic(OUT, PREFIX);
const load0 = loadavg()[0];
const started = new Date();
const rounds: Round[] = [];
/** cpuProbe before each round: the machine's speed at the time (BENCHMARKS.md compares hours by it). */
const probes: number[] = [];
try {
  for (let i = 0; i < ROUNDS; i++)
    for (const shard of ['packed', 'plain'] as const) {
      probes.push(cpuProbe());
      const r = await round(server.url, shard);
      rounds.push(r);
      console.log(
        `round ${i + 1} ${shard}: total ${sec(r.totalMs)} s (open ${sec(r.openMs)} s, query ${sec(r.queryMs)} s) · ` +
          Object.entries(r.phases)
            .map(([k, v]) => `${k} ${sec(v)}`)
            .join(' · '),
      );
    }
} finally {
  await server.close();
}
const load1 = loadavg()[0];

const lines: string[] = [];
for (const shard of ['packed', 'plain'] as const) {
  const rs = rounds.filter((r) => r.shard === shard);
  const cell = (xs: number[]) => `${sec(median(xs))} (${sec(Math.min(...xs))}–${sec(Math.max(...xs))})`;
  const total = median(rs.map((r) => r.totalMs));
  lines.push(
    `**${shard === 'packed' ? 'with packed embeddings' : 'without embeddings'}** (${rs.length} fresh profiles): ` +
      `first image + text result **${sec(total)} s** median` +
      (shard === 'packed'
        ? ` (target ≤ ${sec(TARGET_MS)} s on an idle machine: ${total <= TARGET_MS ? 'met' : 'missed'})`
        : '') +
      '.',
    '',
    '| step | median s (range) |',
    '| --- | ---: |',
    `| open: page load, service worker, shard import | ${cell(rs.map((r) => r.openMs))} |`,
  );
  const keys = [...new Set(rs.flatMap((r) => Object.keys(r.phases)))].sort();
  for (const k of keys.filter((k) => k.startsWith('open:')))
    lines.push(`| &nbsp;&nbsp;${k.slice(5)} | ${cell(rs.map((r) => r.phases[k] ?? 0))} |`);
  lines.push(`| query: Search pressed → results painted | ${cell(rs.map((r) => r.queryMs))} |`);
  for (const k of keys.filter((k) => !k.startsWith('open:')))
    lines.push(`| &nbsp;&nbsp;${k} | ${cell(rs.map((r) => r.phases[k] ?? 0))} |`);
  for (const k of ['tokenize', 'preprocess', 'encode', 'search', 'fuse', 'render'])
    lines.push(`| &nbsp;&nbsp;stage: ${k} | ${cell(rs.map((r) => r.stages[k] ?? 0))} |`);
  lines.push(`| **total** | ${cell(rs.map((r) => r.totalMs))} |`, '');
}
const cpu = cpus()[0]?.model ?? 'unknown CPU';
const chromiumVersion = execSync(`${CHROMIUM} --version`).toString().trim();
const header =
  `${started.toISOString().slice(0, 16).replace('T', ' ')} UTC · ${cpus().length} × ${cpu} · ${chromiumVersion} · ` +
  `load average ${load0.toFixed(2)} at start, ${load1.toFixed(2)} at the end · ` +
  `${probeSummary(probes)} · ` +
  `\`npm run bench:first-query -- --rounds ${ROUNDS}\`. ` +
  `${MODEL} (generated, **random weights**: real compute for its shape, meaningless rankings), WASM.`;
console.log(`\n${header}\n\n${lines.join('\n')}`);
writeFileSync(
  join(ROOT, '.test-results/first-query.json'),
  JSON.stringify({ started, load: [load0, load1], rounds }, null, 2),
);
if (argv['write-benchmarks']) writeBenchmarksSection('first-query', `${header}\n\n${lines.join('\n')}`);
