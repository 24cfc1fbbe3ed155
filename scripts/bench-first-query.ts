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
// --write-benchmarks replaces the bench:first-query section of BENCHMARKS.md. `--against REV` also
// builds the site of git revision REV and alternates its rounds with the working tree's (REV first),
// each shard in turn, and reports the ratio of the totals round by round.
//
//   npm run bench:first-query [-- --rounds 5] [--no-build] [--against REV] [--write-benchmarks]   (smallest: --rounds 1)
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
  buildAgainst,
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
  PREFIX,
} from './lib/bench-harness';
import { serveStatic, type StaticServer } from '../tests/e2e/static-server';

const MODEL = 'loupe-test/clip-tiny-random';
const TASK = 'image-question-to-passage';
const IMAGE = join(DATA_DIR, 'vqa-rad/images/synpic100132.jpg');
const QUESTION = 'is there a pneumothorax?';
const TARGET_MS = 3000;

const argv = benchArgs({ rounds: { type: 'string', default: '5' }, against: { type: 'string' } });
const ROUNDS = whole('rounds', argv.rounds);

const site = await staticSite(argv['no-build']);
/** `--against`: the revision, its commit and its site (the same shards copied in). */
const against = argv.against ? buildAgainst(argv.against, `${STATIC_DIST}-against`) : null;
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
if (against)
  for (const s of ['shards-packed', 'shards-plain'])
    cpSync(join(STATIC_DIST, s), join(against.out, s), { recursive: true });
const againstSite: StaticServer | null = against ? await serveStatic(against.out, PREFIX) : null;

interface Round {
  shard: 'packed' | 'plain';
  /** Measured on the `--against` revision's site. */
  against: boolean;
  openMs: number;
  queryMs: number;
  totalMs: number;
  phases: Record<string, number>;
  stages: Record<string, number>;
}

async function round(shard: Round['shard'], at: StaticServer = site): Promise<Round> {
  const { page, close } = await openBrowser({ settle: true });
  try {
    const params = new URLSearchParams({
      shard: `shards-${shard}/vqa-rad/`,
      task: TASK,
      'search-model': MODEL,
      device: 'wasm',
    });
    const open = await searchApp(page, { url: `${at.url}?${params}#/search` });
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
    return { shard, against: at !== site, openMs, queryMs, totalMs: openMs + queryMs, phases, stages };
  } finally {
    await close();
  }
}

const run = runInfo();
const rounds: Round[] = [];
let probes: number[];
try {
  const sides = (['packed', 'plain'] as const).flatMap((shard) =>
    againstSite
      ? [
          { shard, at: againstSite },
          { shard, at: site },
        ]
      : [{ shard, at: site }],
  );
  probes = await alternate(ROUNDS, sides, async ({ shard, at }, i) => {
    const r = await round(shard, at);
    rounds.push(r);
    console.log(
      `round ${i + 1} ${shard}${r.against ? ` at ${against!.rev}` : ''}: total ${sec(r.totalMs)} s (open ${sec(r.openMs)} s, query ${sec(r.queryMs)} s) · ` +
        Object.entries(r.phases)
          .map(([k, v]) => `${k} ${sec(v)}`)
          .join(' · '),
    );
  });
} finally {
  await site.close();
  await againstSite?.close();
}

const lines: string[] = [];
for (const shard of ['packed', 'plain'] as const) {
  const rs = rounds.filter((r) => r.shard === shard && !r.against);
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
  if (against) {
    // The revision's rounds, in the same order: round i of one against round i of the other.
    const b = rounds.filter((r) => r.shard === shard && r.against).map((r) => r.totalMs);
    const n = rs.map((r) => r.totalMs);
    lines.push(
      `Against ${against.rev} (${against.commit.slice(0, 12)}), alternating rounds (${against.rev} first): ` +
        `total ${sec(median(b))} s (${sec(Math.min(...b))}–${sec(Math.max(...b))}) at ${against.rev}, ` +
        `${sec(median(n))} s (${sec(Math.min(...n))}–${sec(Math.max(...n))}) now; ratio of medians ` +
        `${(median(n) / median(b)).toFixed(2)}, round by round ${n.map((x, i) => (x / b[i]).toFixed(2)).join(', ')}.`,
      '',
    );
  }
}
const header =
  `${run.header(`npm run bench:first-query -- --rounds ${ROUNDS}${against ? ` --against ${against.rev}` : ''}`, { probes })}. ` +
  `${MODEL} (generated, **random weights**: real compute for its shape, meaningless rankings), WASM.`;
publish('first-query', `${header}\n\n${lines.join('\n')}`, {
  write: argv['write-benchmarks'],
  json: { file: '.test-results/first-query.json', data: { started: run.started, probes, rounds } },
});
