// `npm run bench:bm25`: the BM25 build at scale in Node (Bm25Builder, batches of 10,000 documents: what
// the retrieval worker does from IndexedDB), each round in a fresh process so peak memory is its own.
//
//   npm run bench:bm25 -- --shard DIR [--shard DIR…] [--rounds N] [--queries N] [--write-benchmarks]
//
// A round reads the shard's corpus.jsonl in batches and never holds it all. Reported per round: wall
// and CPU time from the first byte read to the finished index, peak RSS (getrusage) and peak V8 heap
// + array buffers (sampled every 50 ms; the build yields that often), memory the index keeps after a
// full GC, its typed arrays, and the mean time of the first --queries queries (top 100). The
// rankings of the first 200 queries are hashed (ids and float64 score bits) and must agree across
// rounds.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Bm25Builder, searchBm25, type Bm25Doc } from '../src/lib/core/retrieval/bm25';
import { serializeBm25 } from '../src/lib/core/retrieval/bm25-store';
import { MiB, benchArgs, median, publish, runInfo, timed, usage, whole } from './lib/bench-harness';

const BATCH = 10_000;
const DIGEST_QUERIES = 200;

const argv = benchArgs({
  shard: { type: 'string', multiple: true, default: [] },
  rounds: { type: 'string', default: '2' },
  queries: { type: 'string', default: '1000' },
  /** One round in this process (the parent runs each round so). */
  child: { type: 'string' },
});
const ROUNDS = whole('rounds', argv.rounds);
const N_QUERIES = whole('queries', argv.queries, 0);

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

async function* corpusBatches(dir: string): AsyncGenerator<Bm25Doc[]> {
  const rl = createInterface({ input: createReadStream(join(dir, 'corpus.jsonl')), crlfDelay: Infinity });
  let batch: Bm25Doc[] = [];
  for await (const line of rl) {
    if (!line.trim()) continue;
    batch.push(lineDoc(line));
    if (batch.length >= BATCH) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

interface RoundResult {
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

const heapNow = () => process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
const gc = () => (globalThis as { gc?: () => void }).gc?.();

/** One round in this (child) process; prints its RoundResult as JSON. */
async function child(dir: string): Promise<void> {
  if (!(globalThis as { gc?: unknown }).gc) throw new Error('run with node --expose-gc');
  gc();
  const base = heapNow();
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, heapNow())), 50);
  const {
    value: index,
    wallMs,
    cpuMs,
  } = await timed(async () => {
    const builder = new Bm25Builder();
    for await (const b of corpusBatches(dir)) await builder.add(b);
    return builder.finish();
  });
  clearInterval(timer);
  peak = Math.max(peak, heapNow());
  const arrays =
    serializeBm25(index).buffers.reduce((s, b) => s + b.byteLength, 0) +
    index.norms.byteLength +
    index.idRank.byteLength +
    index.byRank.byteLength +
    index.lengthFactors.byteLength;
  // Array buffers the GC frees are released a moment later: collect, let that happen, collect again.
  gc();
  await new Promise((r) => setTimeout(r, 200));
  gc();
  const retained = heapNow() - base;
  const queries = readFileSync(join(dir, 'queries.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .slice(0, Math.max(N_QUERIES, DIGEST_QUERIES))
    .map((l) => String((JSON.parse(l) as { text?: unknown }).text ?? ''));
  const h = createHash('sha256');
  const f = new Float64Array(1);
  for (const q of queries.slice(0, DIGEST_QUERIES))
    for (const r of searchBm25(index, q, 100)) {
      f[0] = r.score;
      h.update(r.docId).update(new Uint8Array(f.buffer));
    }
  const timedQueries = queries.slice(0, N_QUERIES);
  gc();
  const t1 = performance.now();
  for (const q of timedQueries) searchBm25(index, q, 100);
  const result: RoundResult = {
    docs: index.docCount,
    terms: index.termCount,
    postings: index.postingCount,
    buildMs: wallMs,
    cpuS: cpuMs / 1000,
    peakRssMiB: (process.resourceUsage().maxRSS * 1024) / MiB,
    peakHeapMiB: peak / MiB,
    retainedMiB: retained / MiB,
    arraysMiB: arrays / MiB,
    queryMs: timedQueries.length ? (performance.now() - t1) / timedQueries.length : 0,
    digest: h.digest('hex').slice(0, 16),
  };
  console.log(`RESULT ${JSON.stringify(result)}`);
}

function runChild(dir: string): RoundResult {
  const r = spawnSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', import.meta.filename, '--child', dir, '--queries', String(N_QUERIES)],
    { encoding: 'utf8', maxBuffer: 64 * MiB },
  );
  const line = r.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (r.status !== 0 || !line) throw new Error(`round on ${dir} failed:\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(line.slice(7)) as RoundResult;
}

if (argv.child) await child(argv.child);
else {
  if (!argv.shard.length)
    usage('usage: npm run bench:bm25 -- --shard DIR [--rounds N] [--queries N] [--write-benchmarks]');
  const run = runInfo();
  const rows: string[] = [];
  for (const dir of argv.shard) {
    const rs: RoundResult[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const res = runChild(resolve(dir));
      console.log(
        `${dir} round ${r + 1}: ${res.docs} docs, build ${(res.buildMs / 1000).toFixed(1)} s (CPU ${res.cpuS.toFixed(1)} s), ` +
          `peak RSS ${res.peakRssMiB.toFixed(0)} MiB, peak heap ${res.peakHeapMiB.toFixed(0)} MiB, ` +
          `retained ${res.retainedMiB.toFixed(0)} MiB, arrays ${res.arraysMiB.toFixed(0)} MiB, ` +
          `${res.queryMs.toFixed(2)} ms/query, digest ${res.digest}`,
      );
      rs.push(res);
    }
    const med = (f: (r: RoundResult) => number) => median(rs.map(f));
    const max = (f: (r: RoundResult) => number) => Math.max(...rs.map(f));
    rows.push(
      `| ${rs[0].docs.toLocaleString('en-US')} | ${rs.length} | ${(med((r) => r.buildMs) / 1000).toFixed(1)} s | ` +
        `${med((r) => r.cpuS).toFixed(1)} s | ${max((r) => r.peakRssMiB).toFixed(0)} | ${max((r) => r.peakHeapMiB).toFixed(0)} | ` +
        `${med((r) => r.retainedMiB).toFixed(0)} | ${med((r) => r.arraysMiB).toFixed(0)} | ` +
        `${rs[0].terms.toLocaleString('en-US')} / ${rs[0].postings.toLocaleString('en-US')} | ${med((r) => r.queryMs).toFixed(2)} | ` +
        `${new Set(rs.map((r) => r.digest)).size === 1 ? 'identical' : 'DIFFER'} |`,
    );
  }
  const body = [
    `## BM25 at a million documents: compact index built in batches (issue 18 item 3, ${run.started.toISOString().slice(0, 10)})`,
    '',
    run.header(`npm run bench:bm25 -- ${process.argv.slice(2).join(' ')}`, { chromium: false }),
    '',
    'Each round is a fresh Node process reading the shard’s corpus.jsonl (synthetic scale shards, `make-scale-shard`) ' +
      'in batches of 10,000 documents into a Bm25Builder (what the retrieval worker does from IndexedDB). ' +
      'Time: first byte read → finished index (median), wall and CPU (user + system, all threads). ' +
      'Peak RSS: getrusage; peak heap: V8 heap + array buffers sampled every 50 ms (max over rounds); retained: what the ' +
      `index keeps after a full GC; arrays: its typed arrays. Query: mean of the first ${N_QUERIES.toLocaleString('en-US')} queries, top 100. ` +
      'Rankings: the first 200 queries’ ids and score bits hashed, equal across rounds.',
    '',
    '| documents | rounds | index time | CPU time | peak RSS, MiB | peak heap + buffers, MiB | retained, MiB | typed arrays, MiB | terms / postings | query, ms | rankings |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
  publish('bm25', body, { write: argv['write-benchmarks'] });
}
