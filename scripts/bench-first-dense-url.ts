// A fresh visit's first dense result on a packed shard opened by URL (issue 19 item 2): a fresh browser
// profile, once the browser has finished its own start-up (settleBrowser), opens the static build
// (served under a sub-path, no COOP/COEP headers) with `?shard=<URL>` of a shard packed with
// `pack-shard --index ivf --offsets` on another plain static host that honours Range
// (tests/e2e/range-server.ts, which logs the bytes of every response), and runs a dense query in the
// Search view. The shard opens remote-first (nothing imported); it times, each round:
//   open    page.goto → the Search view ready (service worker, manifest, queries, qrels, offsets file)
//   query   Search pressed → the first result's document text painted (model load, query encoding,
//           the packed index's first search, the shown documents' lines by Range)
//   total   page.goto → the first result's text painted
// and the bytes the shard's host sent, by file.
//
//   npm run bench:first-dense-url -- --shard DIR[,DIR…] [--model ID] [--rounds 2] [--against REV]
//                                    [--no-build] [--write-benchmarks]
//
// Several shards (e.g. the same vectors with their set declared for fp32 and for q8 queries) are
// measured in alternating rounds, each `--rounds` times, and compared by the ratio of their totals.
// `--against REV` also builds the site of git revision REV (a temporary worktree beside the repo,
// sharing its node_modules and, hard-linked, its generated models) and runs it in the same rounds, alternating with the
// working tree's build (REV first), so that a change is measured against the code before it on the
// same machine at the same time; the report gives the ratio of the two, round by round.
// DIR is a shard packed with --index ivf --offsets (for 1M: `npm run pack-ivf` and
// `npm run pack-shard -- --shard DIR --offsets` over a make-scale-shard --vectors random shard). The
// generated models have random weights: real compute for their shape, meaningless rankings.
import { readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { serveRanges } from '../tests/e2e/range-server';
import {
  PREFIX,
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
  sampleMemory,
  searchApp,
  sec,
  staticSite,
  usage,
  whole,
} from './lib/bench-harness';
import { serveStatic } from '../tests/e2e/static-server';

const TARGET_MS = 3000;

const argv = benchArgs({
  shard: { type: 'string' },
  model: { type: 'string', default: 'loupe-test/minilm-l6-random' },
  rounds: { type: 'string', default: '2' },
  against: { type: 'string' },
});
if (!argv.shard)
  usage('usage: npm run bench:first-dense-url -- --shard DIR[,DIR…] [--model ID] [--rounds 2]');

interface Shard {
  dir: string;
  name: string;
  task: string;
  query: string;
  /** The query dtype its set declares (embeddings/index.json), for the report. */
  dtypes: string;
}

function readShard(dir: string): Shard {
  const manifest = JSON.parse(readFileSync(join(dir, 'shard.json'), 'utf8')) as {
    tasks: { id: string }[];
    doc_offsets?: string;
  };
  if (!manifest.doc_offsets) {
    console.error(`${dir}: shard.json names no doc_offsets: run npm run pack-shard -- --shard DIR --offsets`);
    process.exit(1);
  }
  const firstQuery = readFileSync(join(dir, 'queries.jsonl'), 'utf8').slice(0, 100_000).split('\n')[0];
  const sets = JSON.parse(readFileSync(join(dir, 'embeddings/index.json'), 'utf8')) as {
    sets: { model_id: string; dtype: string }[];
  };
  return {
    dir,
    name: basename(dir),
    task: manifest.tasks[0].id,
    query: (JSON.parse(firstQuery) as { text: string }).text,
    dtypes: [...new Set(sets.sets.filter((x) => x.model_id === argv.model).map((x) => x.dtype))].join(', '),
  };
}
const SHARDS = argv.shard.split(',').map((d) => readShard(resolve(d)));
const ROUNDS = whole('rounds', argv.rounds);

const site = await staticSite(argv['no-build']);
/** `--against`: the revision, its commit and its site. */
const against = argv.against ? buildAgainst(argv.against, `${STATIC_DIST}-against`) : null;
const againstSite = against ? await serveStatic(against.out, PREFIX) : null;
const hosts = await Promise.all(SHARDS.map((x) => serveRanges(dirname(x.dir), '/data/')));

interface Round {
  openMs: number;
  queryMs: number;
  totalMs: number;
  bytes: Record<string, number>;
  requests: number;
  rendererPeakMiB: number;
  largestRendererMiB: number;
  /** The app's own measures (loupe:phase:* and loupe:* stages), ms summed by name. */
  measures: Record<string, number>;
  /** The wait for the fresh browser's own start-up work before the visit (settleBrowser). */
  settle: { ms: number; cpuSeconds: number; settled: boolean };
}

async function round(k: number, at = site): Promise<Round> {
  const [shard, host] = [SHARDS[k], hosts[k]];
  const { page, profileDir, settled, close } = await openBrowser({ settle: true });
  const mem = sampleMemory(profileDir, { everyMs: 250 });
  try {
    const params = new URLSearchParams({
      shard: `${host.url}${encodeURIComponent(shard.name)}/`,
      task: shard.task,
      'search-model': argv.model!,
    });
    const from = host.log.length;
    // The query is typed, not put in the link: a link's q= is answered as the page opens, which would
    // time that answer racing the pressed one.
    const t = await searchApp(page, {
      url: `${at.url}?${params}#/search`,
      search: { text: shard.query, until: '[data-testid="results"] [data-doc] .text' },
    });
    const bytes: Record<string, number> = {};
    const log = host.log.slice(from);
    for (const e of log) {
      const name = e.path.split('/').pop()!;
      bytes[name] = (bytes[name] ?? 0) + e.bytes;
    }
    return {
      openMs: t.ready - t.opened,
      queryMs: t.answered - t.ready,
      totalMs: t.answered - t.opened,
      bytes,
      requests: log.length,
      rendererPeakMiB: mem.peak / 2 ** 20,
      largestRendererMiB: mem.largest / 2 ** 20,
      measures: await pageMeasures(page, 'loupe:'),
      settle: settled!,
    };
  } finally {
    await mem.stop();
    await close();
  }
}

const run = runInfo();
const all: Round[][] = SHARDS.map(() => []);
/** `--against`: the revision's rounds, by shard. */
const base: Round[][] = SHARDS.map(() => []);
let probes: number[];
try {
  // Alternating: each shard's rounds interleave with the others' (and the revision's, first, with the
  // working tree's), so that a change of load over the run falls on all of them alike.
  const sides = SHARDS.flatMap((_, k) => (againstSite ? [{ k, at: againstSite }, { k }] : [{ k }]));
  probes = await alternate(ROUNDS, sides, async ({ k, at }, i) => {
    const r = await round(k, at);
    (at ? base : all)[k].push(r);
    const mib = (b: number) => (b / 2 ** 20).toFixed(2);
    console.log(
      `${SHARDS[k].name}${at ? ` at ${against!.rev}` : ''}: round ${i + 1}: total ${sec(r.totalMs)} s (open ${sec(r.openMs)} s, query ${sec(r.queryMs)} s), ` +
        `after ${sec(r.settle.ms)} s of the browser's own start-up (${r.settle.cpuSeconds.toFixed(2)} CPU-s${r.settle.settled ? '' : ', not settled'}), ` +
        `${r.requests} requests: ` +
        Object.entries(r.bytes)
          .map(([k, v]) => `${k} ${mib(v)} MiB`)
          .join(', ') +
        `; renderers' peak ${r.rendererPeakMiB.toFixed(0)} MiB (largest ${r.largestRendererMiB.toFixed(0)}); ` +
        Object.entries(r.measures)
          .map(([k, v]) => `${k} ${sec(v)}`)
          .join(' · '),
    );
  });
} finally {
  await site.close();
  await againstSite?.close();
  for (const h of hosts) await h.close();
}

/** One shard's report: its steps, the app's own measures, the bytes by file, the tab's memory. */
function report(shard: Shard, rounds: Round[]): string[] {
  const total = median(rounds.map((r) => r.totalMs));
  const files = [...new Set(rounds.flatMap((r) => Object.keys(r.bytes)))].sort();
  return [
    `**${shard.name}** (its set declares ${shard.dtypes || 'no'} queries for ${argv.model}): first dense ` +
      `result **${sec(total)} s** median over ${rounds.length} fresh profiles ` +
      `(target ≤ ${sec(TARGET_MS)} s: ${total <= TARGET_MS ? 'met' : 'missed'} on this machine).`,
    '',
    '| step | median s (range) |',
    '| --- | ---: |',
    `| open: page load, service worker, manifest, queries, qrels, offsets header (nothing imported; the model loads meanwhile) | ${cell(rounds.map((r) => r.openMs))} |`,
    `| query: Search pressed → first result's text painted (the model's load if unfinished, encode, packed index, lines by Range) | ${cell(rounds.map((r) => r.queryMs))} |`,
    `| **total** | ${cell(rounds.map((r) => r.totalMs))} |`,
    ...[...new Set(rounds.flatMap((r) => Object.keys(r.measures)))]
      .sort()
      .map((k) => `| &nbsp;&nbsp;app measure ${k} | ${cell(rounds.map((r) => r.measures[k] ?? 0))} |`),
    '',
    '| file on the shard host | MiB sent (first round) |',
    '| --- | ---: |',
    ...files.map((f) => `| ${f} | ${((rounds[0].bytes[f] ?? 0) / 2 ** 20).toFixed(2)} |`),
    '',
    `Renderers' peak RSS: ${Math.max(...rounds.map((r) => r.rendererPeakMiB)).toFixed(0)} MiB summed ` +
      `(shared pages counted in each); the largest renderer, the tab: ` +
      `${Math.max(...rounds.map((r) => r.largestRendererMiB)).toFixed(0)} MiB.`,
  ];
}

/** `--against`: the revision's total against the working tree's, for one shard. */
function comparison(shard: Shard, k: number): string[] {
  if (!against) return [];
  const b = base[k].map((r) => r.totalMs);
  const n = all[k].map((r) => r.totalMs);
  return [
    `Against ${against.rev} (${against.commit.slice(0, 12)}), same rounds, alternating (${against.rev} first): ` +
      `${shard.name} total ${sec(median(b))} s (${sec(Math.min(...b))}–${sec(Math.max(...b))}) at ${against.rev}, ` +
      `${sec(median(n))} s (${sec(Math.min(...n))}–${sec(Math.max(...n))}) now; ratio of medians ` +
      `${(median(n) / median(b)).toFixed(2)}, round by round ${n.map((x, i) => (x / b[i]).toFixed(2)).join(', ')}.`,
    '',
  ];
}

const lines = SHARDS.flatMap((x, k) => [...report(x, all[k]), '', ...comparison(x, k)]);
if (SHARDS.length > 1) {
  // Each later shard against the first, round by round (the rounds alternated).
  for (let k = 1; k < SHARDS.length; k++) {
    const ratios = all[k].map((r, i) => r.totalMs / all[0][i].totalMs);
    lines.push(
      `${SHARDS[k].name} / ${SHARDS[0].name}, total time: ratio of medians ` +
        `${(median(all[k].map((r) => r.totalMs)) / median(all[0].map((r) => r.totalMs))).toFixed(2)}; ` +
        `round by round ${ratios.map((x) => x.toFixed(2)).join(', ')}.`,
    );
  }
}
const header =
  `${run.header(
    `npm run bench:first-dense-url -- --shard ${SHARDS.map((x) => x.name).join(',')} --rounds ${ROUNDS}` +
      `${against ? ` --against ${against.rev}` : ''}`,
    { probes },
  )} · ` +
  `${argv.model} (generated, **random weights**: real compute for its shape, meaningless rankings), default device.`;
publish('first-dense-url', `${header}\n\n${lines.join('\n')}`, {
  write: argv['write-benchmarks'],
  json: {
    file: '.test-results/first-dense-url.json',
    data: {
      started: run.started,
      cpuProbeMs: probes,
      ...(against ? { against: { rev: against.rev, commit: against.commit } } : {}),
      shards: SHARDS.map((x, k) => ({
        ...x,
        rounds: all[k],
        ...(against ? { againstRounds: base[k] } : {}),
      })),
    },
  },
});
