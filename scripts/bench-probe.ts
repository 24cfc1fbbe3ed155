// The check of a shard's reference vectors at a first query (issue 37, item 3; target ≤ 300 ms on
// WASM for a text model): a medquad subset (real text) packed with `npm run pack-shard` for a text
// model is opened by URL in a fresh browser each round (the app on the Vite dev server, the shard on
// a plain static host that honours Range); the first Search with the model loads it, then checks the
// set: 16 of the shard's documents, chosen by a seed, embedded on WASM and compared with their
// stored rows. The app times the check itself (reading the stored rows and embedding the probe: the
// `ms` recorded with the check), shown with the whole first query for scale. The generated models
// have random weights: real compute for their shape, meaningless rankings.
//
//   npm run bench:probe -- [--model ID] [--docs 1000] [--rounds 3] [--write-benchmarks]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DATA_DIR } from '../tests/paths';
import { serveRanges } from '../tests/e2e/range-server';
import { packShard, writeSubset } from '../tests/e2e/shard-fixtures';
import {
  benchArgs,
  cell,
  median,
  openBrowser,
  publish,
  runInfo,
  startDevServer,
  whole,
} from './lib/bench-harness';

const TARGET_MS = 300;
const TASK = 'qa-answer-retrieval';
const QUERY = 'What are the symptoms of glaucoma ?';

const argv = benchArgs({
  model: { type: 'string', default: 'loupe-test/bert-tiny-random' },
  docs: { type: 'string', default: '1000' },
  rounds: { type: 'string', default: '3' },
});
const ROUNDS = whole('rounds', argv.rounds);
const DOCS = whole('docs', argv.docs);
const info = runInfo();

const dir = mkdtempSync(join(tmpdir(), 'loupe-bench-probe-'));
const shard = join(dir, 'medquad-probe');
console.log(`packing ${DOCS} medquad documents with ${argv.model}…`);
writeSubset(join(DATA_DIR, 'medquad'), shard, { docs: DOCS, queries: 8, name: 'medquad-probe' });
packShard(shard, ['--model', argv.model!]);
const host = await serveRanges(dir, '/data/');
const { server, base } = await startDevServer();

interface Round {
  probeMs: number;
  queryMs: number;
  min: number;
}
const rounds: Round[] = [];
try {
  for (let k = 0; k < ROUNDS; k++) {
    const { page, close } = await openBrowser({ settle: true });
    try {
      const params = new URLSearchParams({
        shard: `${host.url}medquad-probe/`,
        task: TASK,
        'search-model': argv.model!,
        device: 'wasm',
        dtype: 'fp32',
        q: QUERY,
      });
      await page.goto(`${base}/?${params}#/search`);
      await page.waitForSelector('[data-testid="app"][data-phase="ready"]', { timeout: 10 * 60_000 });
      const t0 = Date.now();
      await page.click('[data-testid="search-submit"]');
      const line = page.locator('[data-testid="search-reference"]');
      await line.waitFor({ timeout: 10 * 60_000 });
      const queryMs = Date.now() - t0;
      const r = {
        probeMs: Number(await line.getAttribute('data-ms')),
        queryMs,
        min: Number(await line.getAttribute('data-min')),
      };
      console.log(
        `round ${k + 1}: probe ${r.probeMs.toFixed(0)} ms, first query ${queryMs} ms, min cosine ${r.min.toFixed(5)}`,
      );
      rounds.push(r);
    } finally {
      await close();
    }
  }
} finally {
  await server.close();
  await host.close();
  rmSync(dir, { recursive: true, force: true });
}

const ms = (x: number) => `${x.toFixed(0)} ms`;
const probe = rounds.map((r) => r.probeMs);
const text = [
  `### The check of reference vectors at a first query`,
  '',
  info.header(`npm run bench:probe -- --model ${argv.model} --docs ${DOCS} --rounds ${ROUNDS}`),
  '',
  `| what | median (range) over ${ROUNDS} fresh browsers |`,
  '| --- | --- |',
  `| the check: 16 stored rows read, 16 documents embedded on WASM (fp32), compared | ${cell(probe, ms)} |`,
  `| the whole first query (model load, check, corpus from the set, search) | ${cell(
    rounds.map((r) => r.queryMs),
    ms,
  )} |`,
  `| lowest cosine of the probe | ${Math.min(...rounds.map((r) => r.min)).toFixed(5)} |`,
  '',
  `Target ≤ ${TARGET_MS} ms for the check: ${median(probe) <= TARGET_MS ? 'met' : 'not met'}. ` +
    `${argv.model} is a generated model with random weights (real compute for its shape). A shard of ${DOCS} medquad answers, packed by pack-shard.`,
].join('\n');
publish('probe', text, { write: argv['write-benchmarks'] });
