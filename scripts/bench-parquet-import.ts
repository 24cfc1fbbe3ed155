// Import of a shard folder picked in the app (issue 18 item 2: a Parquet dataset of 1M documents
// imports streamed within 1 GB), on the production build (vite build + preview) in a fresh headless
// Chromium profile: the folder goes to the app's folder input, a Parquet dataset's detected column
// mapping is confirmed as a user would, and the import runs until every record is committed to
// IndexedDB; then the app opens the shard. Timed from the click to the last record committed (and to
// the shard open); memory is Chromium's renderer processes' resident set read from /proc every 200 ms
// (the page and its workers live there), its peak per stage: checking (the first pass), storing (the
// second pass writing batches), opening. A JSONL shard folder works too (no mapping to confirm), for
// the same measurement of the same content.
//
//   npm run bench:parquet-import -- --shard /work/gen-shards/scale-1m-parquet [--no-build] [--write-benchmarks]
//     (--shard may be given several times: one fresh profile each, in order)
//
// Make a Parquet scale shard with `npm run make-scale-parquet -- --from <make-scale-shard dir> --out DIR`.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { asyncBufferFromFile, parquetMetadataAsync } from 'hyparquet';
import { basename, join, resolve } from 'node:path';
import {
  MiB,
  benchArgs,
  openBrowser,
  publish,
  runInfo,
  sampleMemory,
  sitePreview,
  usage,
  watchJob,
} from './lib/bench-harness';

const argv = benchArgs({ shard: { type: 'string', multiple: true } });
const SHARDS = (argv.shard ?? []).map((s) => resolve(s));
if (SHARDS.length === 0 || SHARDS.some((s) => !existsSync(s)))
  usage('--shard DIR (a shard folder: a Parquet dataset or a JSONL shard) is required, and must exist');

/** Bytes of the files under a folder (what the folder pick hands to the page). */
function bytesOf(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true }))
    if (e.isFile()) n += statSync(join(e.parentPath, e.name)).size;
  return n;
}

/** Documents of a shard folder: shard.json's count, or the rows of a Parquet dataset's corpus files. */
async function docsOf(dir: string, kind: 'parquet' | 'jsonl'): Promise<number | undefined> {
  if (kind === 'jsonl')
    return (JSON.parse(readFileSync(join(dir, 'shard.json'), 'utf8')) as { counts?: { corpus?: number } })
      .counts?.corpus;
  let n = 0;
  for (const f of readdirSync(join(dir, 'corpus')).filter((f) => f.endsWith('.parquet')))
    n += Number((await parquetMetadataAsync(await asyncBufferFromFile(join(dir, 'corpus', f)))).num_rows);
  return n;
}

type Stage = 'before' | 'check' | 'store' | 'open';
interface Result {
  shard: string;
  kind: 'parquet' | 'jsonl';
  bytes: number;
  docs?: number;
  /** Seconds from the import's start (the confirm click, or the pick) to the last record committed. */
  importSeconds?: number;
  /** Seconds of the first pass (until the first store tick). */
  checkSeconds?: number;
  /** Seconds from the start to the shard open in the app. */
  openSeconds?: number;
  peak: Partial<Record<Stage, number>>;
  peakLargest: number;
  renderers: number;
  /** Main-thread tasks over 50 ms by the stage they began in: how many, the longest. */
  longTasks?: Partial<Record<Stage, { count: number; maxMs: number }>>;
  error?: string;
}

const server = await sitePreview({ noBuild: argv['no-build'] });
const base = server.base;
const run = runInfo();
const results: Result[] = [];

try {
  for (const dir of SHARDS) {
    const kind = existsSync(join(dir, 'corpus.jsonl')) ? 'jsonl' : 'parquet';
    const r: Result = {
      shard: dir,
      kind,
      bytes: bytesOf(dir),
      docs: await docsOf(dir, kind),
      peak: {},
      peakLargest: 0,
      renderers: 0,
    };
    results.push(r);
    const { page, profileDir, close } = await openBrowser();
    let stage: Stage = 'before';
    const mem = sampleMemory(profileDir, { phase: () => stage });
    try {
      let t0 = 0;
      // The stages from the progress line: checking, then caching, then every record committed.
      const stageOf = (text: string) => {
        const m = /Caching in IndexedDB: ([\d,]+) \/ ([\d,]+) records/.exec(text);
        return m ? (m[1] === m[2] ? 'open' : 'store') : text ? 'check' : null;
      };
      const job = await watchJob(page, (_, text, wall) => {
        const now = stageOf(text);
        if ((now === 'store' || now === 'open') && stage === 'check') {
          stage = 'store';
          r.checkSeconds = (wall - t0) / 1000;
        }
        if (now === 'open' && stage === 'store') {
          r.importSeconds = (wall - t0) / 1000;
          stage = 'open';
        }
      });
      await page.goto(`${base}/#/shards`);
      await page.waitForSelector('[data-testid="app"][data-phase="idle"]', { timeout: 120_000 });
      console.log(`${basename(dir)}: picking the folder (${Math.round(r.bytes / MiB)} MiB)`);
      await page.setInputFiles('[data-testid="folder-input"]', dir);
      if (kind === 'parquet') {
        const confirm = page
          .getByTestId('parquet-mapping')
          .getByRole('button', { name: 'Import with these columns' });
        await confirm.waitFor({ timeout: 300_000 });
        t0 = Date.now();
        stage = 'check';
        await confirm.click();
      } else {
        t0 = Date.now();
        stage = 'check';
      }
      const failed = page
        .locator('[data-testid="shard-issues"], [data-testid="message"][data-kind="error"]')
        .first()
        .waitFor({ timeout: 60 * 60_000 })
        .then(async () => {
          throw new Error(
            (await page.locator('[data-testid="shard-issues"], [data-testid="message"]').allInnerTexts())
              .join(' ')
              .slice(0, 500),
          );
        });
      failed.catch(() => undefined);
      // The shard open in the app (its name shown); the job watcher has noted when the last record committed.
      const done = page.waitForFunction(
        () => (document.querySelector('[data-testid="shard-name"]')?.textContent ?? '') !== '',
        null,
        { timeout: 60 * 60_000, polling: 100 },
      );
      await Promise.race([done, failed]);
      r.openSeconds = (Date.now() - t0) / 1000;
      // Main-thread tasks over 50 ms by the stage they began in (a stage never goes back: once the
      // import ran, the job going away is the open's end).
      const { jobs, long } = await job.log();
      const order = ['check', 'store', 'open'];
      const stages: { stage: string; at: number }[] = [];
      for (const j of jobs) {
        const st = stageOf(j.text);
        const now = stages.at(-1)?.stage;
        if (st && (!now || order.indexOf(st) > order.indexOf(now)))
          stages.push({ stage: st, at: j.at - 100 });
      }
      r.longTasks = {};
      for (const t of long) {
        const at = stages.filter((x) => x.at <= t.start).at(-1)?.stage as Stage | undefined;
        if (!at) continue; // before the import started
        const c = (r.longTasks[at] ??= { count: 0, maxMs: 0 });
        c.count++;
        c.maxMs = Math.max(c.maxMs, Math.round(t.ms));
      }
    } catch (e) {
      r.error = (e as Error).message.split('\n')[0];
    } finally {
      await mem.stop();
      await close();
    }
    r.peak = Object.fromEntries(Object.entries(mem.byPhase).map(([k, v]) => [k, v.peak]));
    [r.peakLargest, r.renderers] = [mem.largest, mem.renderers];
    console.log(JSON.stringify(r));
  }
} finally {
  await server.close();
}

const s = (x: number | undefined) => (x === undefined ? '–' : x.toFixed(1));
const mib = (b: number | undefined) => (b === undefined ? '–' : `${Math.round(b / MiB)}`);
const lines = [
  '| shard (folder pick) | on disk | documents | first pass (check) | import (all committed) | until open | renderer RSS, MiB, peak of the sum: check / store / open | largest renderer, MiB | main-thread tasks > 50 ms (longest): check / store / open |',
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
];
for (const r of results)
  lines.push(
    `| ${basename(r.shard)} (${r.kind})${r.error ? ` (error: ${r.error})` : ''} | ${mib(r.bytes)} MiB | ` +
      `${r.docs?.toLocaleString('en') ?? '–'} | ${s(r.checkSeconds)} s | ${s(r.importSeconds)} s | ${s(r.openSeconds)} s | ` +
      `${mib(r.peak.check)} / ${mib(r.peak.store)} / ${mib(r.peak.open)} | ${mib(r.peakLargest)} (of ${r.renderers}) | ` +
      `${(['check', 'store', 'open'] as const)
        .map((k) => {
          const t = r.longTasks?.[k];
          return t ? `${t.count} (${t.maxMs} ms)` : '0';
        })
        .join(' / ')} |`,
  );
const header = run.header(`npm run bench:parquet-import -- ${SHARDS.map((d) => `--shard ${d}`).join(' ')}`);
publish('parquet-import', `${header}\n\n${lines.join('\n')}`, { write: argv['write-benchmarks'] });
