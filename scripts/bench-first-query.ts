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
//   npm run bench:first-query [-- --rounds 5] [--no-build] [--write-benchmarks]   (smallest: --rounds 1)
//
// The generated model has random weights: the timings are real compute for its shape, the rankings
// mean nothing.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DATA_DIR } from '../tests/paths';
import {
  ROOT,
  STATIC_DIST,
  alternate,
  benchArgs,
  cell,
  median,
  openBrowser,
  pageMeasures,
  publish,
  runInfo,
  searchApp,
  sec,
  staticSite,
  whole,
} from './lib/bench-harness';

const MODEL = 'loupe-test/clip-tiny-random';
const TASK = 'image-question-to-passage';
const IMAGE = join(DATA_DIR, 'vqa-rad/images/synpic100132.jpg');
const QUESTION = 'is there a pneumothorax?';
const TARGET_MS = 3000;

const argv = benchArgs({ rounds: { type: 'string', default: '5' } });
const ROUNDS = whole('rounds', argv.rounds);

const site = await staticSite(argv['no-build']);
// Both copies are the build's own (pack-shard --out would write beside the data otherwise): the packed
// one with its corpus embeddings and its image pack, the plain one with only the image pack, so the
// pair differs only in the corpus's embedding on the first query.
function packInto(dir: string, args: string[]) {
  if (existsSync(join(dir, 'images.zip'))) return;
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
packInto(join(STATIC_DIST, 'shards-packed/vqa-rad'), ['--model', MODEL, '--images']);
packInto(join(STATIC_DIST, 'shards-plain/vqa-rad'), ['--images']);

interface Round {
  shard: 'packed' | 'plain';
  openMs: number;
  queryMs: number;
  totalMs: number;
  phases: Record<string, number>;
  stages: Record<string, number>;
}

async function round(shard: Round['shard']): Promise<Round> {
  const { page, close } = await openBrowser({ settle: true });
  try {
    const params = new URLSearchParams({
      shard: `shards-${shard}/vqa-rad/`,
      task: TASK,
      'search-model': MODEL,
      device: 'wasm',
    });
    const open = await searchApp(page, { url: `${site.url}?${params}#/search` });
    // The import's phases (read, parse, store…): measured before the query adds its own.
    const openPhases = await pageMeasures(page, 'loupe:phase:');
    await page.setInputFiles('[data-testid="search-image-input"]', IMAGE);
    const q = await searchApp(page, { search: { text: QUESTION } });
    const all = await pageMeasures(page, 'loupe:phase:');
    const phases: Record<string, number> = {};
    for (const [k, v] of Object.entries(all))
      if (v - (openPhases[k] ?? 0) > 0.5) phases[k] = v - (openPhases[k] ?? 0);
    for (const [k, v] of Object.entries(openPhases)) phases[`open:${k}`] = v;
    const stages = await pageMeasures(page, 'loupe:');
    for (const k of Object.keys(stages)) if (k.startsWith('phase:')) delete stages[k];
    const [openMs, queryMs] = [open.ready - open.opened, q.answered - q.submitted];
    return { shard, openMs, queryMs, totalMs: openMs + queryMs, phases, stages };
  } finally {
    await close();
  }
}

const run = runInfo();
const rounds: Round[] = [];
let probes: number[];
try {
  probes = await alternate(ROUNDS, ['packed', 'plain'] as const, async (shard, i) => {
    const r = await round(shard);
    rounds.push(r);
    console.log(
      `round ${i + 1} ${shard}: total ${sec(r.totalMs)} s (open ${sec(r.openMs)} s, query ${sec(r.queryMs)} s) · ` +
        Object.entries(r.phases)
          .map(([k, v]) => `${k} ${sec(v)}`)
          .join(' · '),
    );
  });
} finally {
  await site.close();
}

const lines: string[] = [];
for (const shard of ['packed', 'plain'] as const) {
  const rs = rounds.filter((r) => r.shard === shard);
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
const header =
  `${run.header(`npm run bench:first-query -- --rounds ${ROUNDS}`, { probes })}. ` +
  `${MODEL} (generated, **random weights**: real compute for its shape, meaningless rankings), WASM.`;
publish('first-query', `${header}\n\n${lines.join('\n')}`, {
  write: argv['write-benchmarks'],
  json: { file: '.test-results/first-query.json', data: { started: run.started, probes, rounds } },
});
