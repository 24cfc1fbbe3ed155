// `npm run bench:bm25`: the BM25 build at scale in Node, the compact batched build (bm25-build.ts)
// against the one it replaced (scripts/lib/bm25-legacy.ts), each round in a fresh process so peak
// memory is its own.
//
//   npm run bench:bm25 -- --shard DIR [--shard DIR…] [--impl both|new] [--rounds N] [--queries N] [--write]
//   npm run bench:bm25 -- --verify DIR [DIR…]
//
// A round reads the shard's corpus.jsonl: the legacy build gets every document in one array (what
// the retrieval worker did: store.load, then build), the new one reads them in batches of 10,000
// (what the worker does now, from IndexedDB) and never holds them all. Reported per round: wall
// time from the first byte read to the finished index, peak RSS (getrusage) and peak V8 heap +
// array buffers (sampled every 50 ms; the builds yield that often), memory the index keeps after a
// full GC, its typed arrays, and the mean time of the first --queries queries (top 100). Rounds
// alternate old/new (old, new, new, old…) so load drifts hit both. Both implementations' rankings of
// the first 200 queries are hashed (ids and float64 score bits) and must agree.
//
// --verify reads each demo shard through the real shard reader and checks that the two give
// identical rankings (ids and scores to the bit, top 1000, every query, with its exclude ids and
// language), then exits non-zero on any difference.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Bm25Builder, bm25Doc, searchBm25, type Bm25Doc } from '../src/lib/core/retrieval/bm25';
import { serializeBm25 } from '../src/lib/core/retrieval/bm25-store';
import { median } from '../src/lib/core/eval/stats';
import { readShard } from '../src/lib/core/shard/read-shard';
import type { ScoredDoc } from '../src/lib/core/types';
import { FsSource } from './lib/fs-source';
import * as legacy from './lib/bm25-legacy';
import { writeBenchmarksSection } from './lib/benchmarks-md';

const BATCH = 10_000;
const DIGEST_QUERIES = 200;

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
function args(name: string): string[] {
  const out: string[] = [];
  process.argv.forEach((a, i) => a === name && process.argv[i + 1] && out.push(process.argv[i + 1]));
  return out;
}

/** A corpus.jsonl line as BM25 reads it (the scale shards' records: _id, title, text, metadata). */
function lineDoc(line: string): Bm25Doc {
  const o = JSON.parse(line) as Record<string, unknown>;
  const language = o.language ?? (o.metadata as Record<string, unknown> | undefined)?.language;
  return {
    id: String(o._id),
    title: typeof o.title === 'string' ? o.title : '',
    text: typeof o.text === 'string' ? o.text : '',
    ...(typeof language === 'string' && language ? { language } : {}),
  };
}

async function* corpusBatches(dir: string, size: number): AsyncGenerator<Bm25Doc[]> {
  const rl = createInterface({ input: createReadStream(join(dir, 'corpus.jsonl')), crlfDelay: Infinity });
  let batch: Bm25Doc[] = [];
  for await (const line of rl) {
    if (!line.trim()) continue;
    batch.push(lineDoc(line));
    if (batch.length >= size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

function queryTexts(dir: string, n: number): string[] {
  return readFileSync(join(dir, 'queries.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .slice(0, n)
    .map((l) => String((JSON.parse(l) as { text?: unknown }).text ?? ''));
}

function digestOf(runs: ScoredDoc[][]): string {
  const h = createHash('sha256');
  const f = new Float64Array(1);
  for (const run of runs)
    for (const r of run) {
      f[0] = r.score;
      h.update(r.docId).update(new Uint8Array(f.buffer));
    }
  return h.digest('hex').slice(0, 16);
}

interface RoundResult {
  impl: 'old' | 'new';
  docs: number;
  terms: number;
  postings: number;
  buildMs: number;
  /** CPU seconds (user + system) of the process from the first byte read to the finished index. */
  cpuS: number;
  peakRssMiB: number;
  peakHeapMiB: number;
  retainedMiB: number;
  arraysMiB: number;
  queryMs: number;
  digest: string;
}

const MiB = 1024 * 1024;
const heapNow = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const gc = () => (globalThis as { gc?: () => void }).gc?.();

/** One round in this (child) process; prints its RoundResult as JSON. */
async function child(impl: 'old' | 'new', dir: string, nQueries: number): Promise<void> {
  if (!(globalThis as { gc?: unknown }).gc) throw new Error('run with node --expose-gc');
  gc();
  const base = heapNow();
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, heapNow())), 50);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  let search: (q: string) => ScoredDoc[];
  let stats: { docs: number; terms: number; postings: number; arrays: number };
  if (impl === 'old') {
    let docs: Bm25Doc[] | null = [];
    for await (const b of corpusBatches(dir, BATCH)) for (const d of b) docs.push(d);
    const index = await legacy.buildBm25Index(docs);
    docs = null;
    const arrays = [
      index.postingOffsets,
      index.postingDocs,
      index.postingTfs,
      index.docLengths,
      index.norms,
      index.idRank,
      index.docAnalyzer,
      index.lengthFactors,
    ].reduce((s, a) => s + a.byteLength, 0);
    stats = { docs: index.docCount, terms: index.terms.size, postings: index.postingDocs.length, arrays };
    search = (q) => legacy.searchBm25(index, q, 100);
  } else {
    const builder = new Bm25Builder();
    for await (const b of corpusBatches(dir, BATCH)) await builder.add(b);
    const index = builder.finish();
    const arrays =
      serializeBm25(index).buffers.reduce((s, b) => s + b.byteLength, 0) +
      index.norms.byteLength +
      index.idRank.byteLength +
      index.byRank.byteLength +
      index.lengthFactors.byteLength;
    stats = { docs: index.docCount, terms: index.termCount, postings: index.postingCount, arrays };
    search = (q) => searchBm25(index, q, 100);
  }
  const buildMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  clearInterval(timer);
  peak = Math.max(peak, heapNow());
  // Array buffers the GC frees are released a moment later: collect, let that happen, collect again.
  gc();
  await new Promise((r) => setTimeout(r, 200));
  gc();
  const retained = heapNow() - base;
  const queries = queryTexts(dir, Math.max(nQueries, DIGEST_QUERIES));
  const runs = queries.slice(0, DIGEST_QUERIES).map(search);
  const timed = queries.slice(0, nQueries);
  gc();
  const t1 = performance.now();
  for (const q of timed) search(q);
  const queryMs = timed.length ? (performance.now() - t1) / timed.length : 0;
  const result: RoundResult = {
    impl,
    ...stats,
    buildMs,
    cpuS: (cpu.user + cpu.system) / 1e6,
    peakRssMiB: (process.resourceUsage().maxRSS * 1024) / MiB,
    peakHeapMiB: peak / MiB,
    retainedMiB: retained / MiB,
    arraysMiB: stats.arrays / MiB,
    queryMs,
    digest: digestOf(runs),
  };
  console.log(`RESULT ${JSON.stringify(result)}`);
}

function runChild(impl: 'old' | 'new', dir: string, nQueries: number): RoundResult {
  const r = spawnSync(
    process.execPath,
    [
      '--expose-gc',
      '--import',
      'tsx',
      import.meta.filename,
      '--child',
      impl,
      dir,
      '--queries',
      String(nQueries),
    ],
    { encoding: 'utf8', maxBuffer: 64 * MiB },
  );
  const line = r.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (r.status !== 0 || !line) throw new Error(`${impl} round on ${dir} failed:\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(line.slice(7)) as RoundResult;
}

async function verify(dirs: string[]): Promise<void> {
  let bad = 0;
  for (const dir of dirs) {
    const shard = await readShard(new FsSource(resolve(dir)));
    const docs = shard.docs.map(bm25Doc);
    const language = shard.manifest.language;
    const old = await legacy.buildBm25Index(docs, {}, { language });
    const builder = new Bm25Builder({}, { language });
    for (let i = 0; i < docs.length; i += 1000) await builder.add(docs.slice(i, i + 1000));
    const index = builder.finish();
    let differ = 0;
    for (const q of shard.queries) {
      const opts = {
        exclude: q.excludeIds,
        queryLanguage: typeof q.meta.language === 'string' ? q.meta.language : undefined,
      };
      const a = legacy.searchBm25(old, q.text, 1000, opts);
      const b = searchBm25(index, q.text, 1000, opts);
      const same =
        a.length === b.length && a.every((h, i) => h.docId === b[i].docId && Object.is(h.score, b[i].score));
      if (!same) differ++;
    }
    console.log(
      `${shard.manifest.name}: ${docs.length} documents, ${shard.queries.length} queries, analyzers ` +
        `${index.analyzers.join('+')}: ${differ === 0 ? 'identical rankings and scores' : `${differ} queries DIFFER`}`,
    );
    bad += differ;
  }
  if (bad) process.exit(1);
}

async function main(): Promise<void> {
  if (process.argv.includes('--child')) {
    const i = process.argv.indexOf('--child');
    return child(process.argv[i + 1] as 'old' | 'new', process.argv[i + 2], Number(arg('--queries') ?? 1000));
  }
  if (process.argv.includes('--verify')) {
    const i = process.argv.indexOf('--verify');
    return verify(process.argv.slice(i + 1).filter((a) => !a.startsWith('--')));
  }
  const shards = args('--shard');
  if (!shards.length)
    throw new Error('usage: bench:bm25 -- --shard DIR [--impl both|new] [--rounds N] [--write]');
  const impl = arg('--impl') ?? 'both';
  const rounds = Number(arg('--rounds') ?? 2);
  const nQueries = Number(arg('--queries') ?? 1000);
  const started = new Date();
  const load0 = loadavg()[0];
  const rows: string[] = [];
  for (const dir of shards) {
    const results: RoundResult[] = [];
    for (let r = 0; r < rounds; r++) {
      const order: ('old' | 'new')[] = impl === 'new' ? ['new'] : r % 2 ? ['new', 'old'] : ['old', 'new'];
      for (const which of order) {
        const res = runChild(which, resolve(dir), nQueries);
        console.log(
          `${dir} round ${r + 1} ${which}: ${res.docs} docs, build ${(res.buildMs / 1000).toFixed(1)} s (CPU ${res.cpuS.toFixed(1)} s), ` +
            `peak RSS ${res.peakRssMiB.toFixed(0)} MiB, peak heap ${res.peakHeapMiB.toFixed(0)} MiB, ` +
            `retained ${res.retainedMiB.toFixed(0)} MiB, arrays ${res.arraysMiB.toFixed(0)} MiB, ` +
            `${res.queryMs.toFixed(2)} ms/query, digest ${res.digest}`,
        );
        results.push(res);
      }
    }
    const digests = new Set(results.map((r) => r.digest));
    const same = digests.size === 1 ? 'identical' : 'DIFFER';
    for (const which of ['old', 'new'] as const) {
      const rs = results.filter((r) => r.impl === which);
      if (!rs.length) continue;
      const med = (f: (r: RoundResult) => number) => median(rs.map(f));
      const max = (f: (r: RoundResult) => number) => Math.max(...rs.map(f));
      rows.push(
        `| ${rs[0].docs.toLocaleString('en-US')} | ${which === 'old' ? 'before (all docs, triples, Maps)' : 'compact, batches of 10,000'} | ` +
          `${rs.length} | ${(med((r) => r.buildMs) / 1000).toFixed(1)} s | ${med((r) => r.cpuS).toFixed(1)} s | ${max((r) => r.peakRssMiB).toFixed(0)} | ` +
          `${max((r) => r.peakHeapMiB).toFixed(0)} | ${med((r) => r.retainedMiB).toFixed(0)} | ${med((r) => r.arraysMiB).toFixed(0)} | ` +
          `${rs[0].terms.toLocaleString('en-US')} / ${rs[0].postings.toLocaleString('en-US')} | ${med((r) => r.queryMs).toFixed(2)} | ${same} |`,
      );
    }
  }
  const load1 = loadavg()[0];
  const body = [
    `## BM25 at a million documents: compact index built in batches (issue 18 item 3, ${started.toISOString().slice(0, 10)})`,
    '',
    `${started.toISOString().slice(0, 16).replace('T', ' ')} UTC · ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'} · ` +
      `${(totalmem() / 1024 ** 3).toFixed(0)} GB RAM · Node ${process.version} · load average ${load0.toFixed(1)} → ${load1.toFixed(1)} ` +
      '(the machine is shared with other agents) · `npm run bench:bm25 -- ' +
      process.argv.slice(2).join(' ') +
      '`',
    '',
    'Each round is a fresh Node process reading the shard’s corpus.jsonl (synthetic scale shards, `make-scale-shard`). ' +
      '“before” is the build this replaced (scripts/lib/bm25-legacy.ts: every document in memory, then (term, doc, tf) ' +
      'triples for the whole corpus, a Map of terms and of doc ids); “compact” reads batches of 10,000 documents into a ' +
      'Bm25Builder (what the retrieval worker now does from IndexedDB). Time: first byte read → finished index (median), wall and CPU (user + system, all threads: ' +
      'what the build costs without other load). ' +
      'Peak RSS: getrusage; peak heap: V8 heap + array buffers sampled every 50 ms (max over rounds); retained: what the ' +
      `index keeps after a full GC; arrays: its typed arrays. Query: mean of the first ${nQueries.toLocaleString('en-US')} queries, top 100. ` +
      'Rankings: the first 200 queries’ ids and score bits hashed, equal across all rounds of both builds.',
    '',
    '| documents | build | rounds | index time | CPU time | peak RSS, MiB | peak heap + buffers, MiB | retained, MiB | typed arrays, MiB | terms / postings | query, ms | rankings |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
  console.log(`\n${body}`);
  if (process.argv.includes('--write')) writeBenchmarksSection('bm25', body);
}

await main();
