// The packed IVF-int8 index read with HTTP Range from a static host, measured: a shard of clustered
// random unit vectors (scripts/lib/ivf-fixture.ts), packed with pack-ivf, served by a plain static
// server that honours Range (tests/e2e/range-server.ts, which logs the bytes it sends), searched by
// the index worker in headless Chromium (a fresh profile) through tests/browser/ivf-harness.html.
//
//   npm run bench:ivf -- --docs 100000 [--dim 384] [--queries 100] [--nlist N] [--nprobe N[,M…]] (default: the app's, 1.2 % of the lists, at least 16) [--k 10]
//   (smallest: --docs 2000 --queries 5)
//
// Several --nprobe values are measured over one packed index, each in a fresh browser profile (an
// empty OPFS cache), so a row per nprobe costs one packing.
//
// Reports: packing time, the first query's time and bytes (header + lists + rows), bytes and time per
// later query (cold lists: first sight of each query; warm: the same queries again), recall@10 against
// brute-force exact search over the same float16 rows, and the browser's renderer memory (peak RSS).
// The vectors are synthetic (not a model's): figures for bytes, time and recall, not retrieval quality.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IvfHarness } from '../tests/browser/ivf-harness';
import { harnessCaller } from '../tests/e2e/browser';
import { serveRanges } from '../tests/e2e/range-server';
import { defaultNprobe } from '../src/lib/core/retrieval/ivf';
import { benchArgs, median, openBrowser, renderers, startDevServer, whole } from './lib/bench-harness';
import { exactTopRows, writeIvfFixture } from './lib/ivf-fixture';
import { defaultNlist, packIvf } from './lib/pack-ivf';

const args = benchArgs({
  docs: { type: 'string', default: '100000' },
  dim: { type: 'string', default: '384' },
  queries: { type: 'string', default: '100' },
  nlist: { type: 'string' },
  nprobe: { type: 'string' },
  k: { type: 'string', default: '10' },
});
const N = whole('docs', args.docs);
const DIM = whole('dim', args.dim);
const NQ = whole('queries', args.queries);
const K = whole('k', args.k);
const NLIST = args.nlist ? whole('nlist', args.nlist) : defaultNlist(N);
// The app's default (defaultNprobe) unless given.
const NPROBES = args.nprobe ? args.nprobe.split(',').map((v) => whole('nprobe', v)) : [defaultNprobe(NLIST)];

const call = harnessCaller<IvfHarness>('ivfHarness');
const mib = (b: number) => (b / 2 ** 20).toFixed(2);

const dir = mkdtempSync(join(tmpdir(), 'loupe-bench-ivf-'));
const shard = join(dir, 'shards/scale');
try {
  let t = performance.now();
  const fx = writeIvfFixture(shard, N, DIM, NQ);
  console.log(
    `fixture: ${N} × ${DIM}, .npy ${mib(fx.npyBytes)} MiB (${((performance.now() - t) / 1000).toFixed(1)} s)`,
  );
  t = performance.now();
  const packed = packIvf(join(shard, fx.setPath), 'text', { nlist: NLIST })!;
  const packS = (performance.now() - t) / 1000;
  console.log(
    `pack-ivf: ${NLIST} lists, ${mib(packed.bytes)} MiB, header ${mib(packed.headerBytes)} MiB, ${packS.toFixed(1)} s`,
  );
  t = performance.now();
  const truth = Array.from({ length: NQ }, (_, i) =>
    exactTopRows(fx.rows, DIM, fx.queries.subarray(i * DIM, (i + 1) * DIM), K),
  );
  console.log(`exact ground truth in Node: ${((performance.now() - t) / 1000).toFixed(1)} s`);

  const server = await serveRanges(dir, '/course/loupe/');
  const { server: vite, base } = await startDevServer();
  try {
    for (const NPROBE of NPROBES) await measure(NPROBE);
  } finally {
    await vite.close();
    await server.close();
  }

  /** One nprobe, from a fresh profile: a cold pass over the queries, then the same queries warm. */
  async function measure(NPROBE: number): Promise<void> {
    const { page, procs, close } = await openBrowser({
      harness: { base, path: 'tests/browser/ivf-harness.html' },
    });
    try {
      const set = `${server.url}shards/scale/${fx.setPath}`;
      const req = { url: `${set}ivf-text.bin`, vectorsUrl: `${set}text.npy`, k: K, nprobe: NPROBE };
      const pass = async () => {
        const out: { bytes: number; ms: number; rows: number[]; logBytes: number }[] = [];
        for (let i = 0; i < NQ; i++) {
          const from = server.log.length;
          const t0 = performance.now();
          const r = await call(page, 'search', req, Array.from(fx.queries.subarray(i * DIM, (i + 1) * DIM)));
          if (!r.ok) throw new Error(r.error);
          out.push({
            bytes: r.result.perQuery[0].bytes,
            ms: performance.now() - t0,
            rows: r.result.rows[0],
            logBytes: server.log.slice(from).reduce((s, e) => s + e.bytes, 0),
          });
        }
        return out;
      };
      const cold = await pass();
      const warm = await pass();
      const mismatched = [...cold, ...warm].filter((x) => x.bytes !== x.logBytes).length;
      let hits = 0;
      cold.forEach((x, i) => {
        const s = new Set(truth[i]);
        hits += x.rows.filter((r) => s.has(r)).length;
      });
      const later = cold.slice(1);
      const rss = renderers(procs()).reduce((s, p) => s + p.hwmBytes, 0);
      const row = {
        docs: N,
        dim: DIM,
        nlist: NLIST,
        nprobe: NPROBE,
        ivfMiB: Number(mib(packed.bytes)),
        headerMiB: Number(mib(packed.headerBytes)),
        packS: Number(packS.toFixed(1)),
        firstQueryMs: Math.round(cold[0].ms),
        firstQueryMiB: Number(mib(cold[0].bytes)),
        laterMedianMiB: Number(mib(median(later.map((x) => x.bytes)))),
        laterMaxMiB: Number(mib(Math.max(...later.map((x) => x.bytes)))),
        laterMedianMs: Math.round(median(later.map((x) => x.ms))),
        warmMaxBytes: Math.max(...warm.map((x) => x.bytes)),
        warmMedianMs: Math.round(median(warm.map((x) => x.ms))),
        recallAt10: Number((hits / (NQ * K)).toFixed(4)),
        rendererPeakRssMiB: Math.round(rss / 2 ** 20),
        bytesEqualServerLog: mismatched === 0,
      };
      console.log(JSON.stringify(row, null, 2));
      console.log(
        `| ${N.toLocaleString('en')} × ${DIM} | ${NLIST} / ${NPROBE} | ${row.ivfMiB} (header ${row.headerMiB}) | ${row.packS} s | ` +
          `${row.firstQueryMs} ms, ${row.firstQueryMiB} MiB | ${row.laterMedianMiB} (max ${row.laterMaxMiB}) MiB, ${row.laterMedianMs} ms | ` +
          `${row.warmMaxBytes} B, ${row.warmMedianMs} ms | ${row.recallAt10} | ${row.rendererPeakRssMiB} MiB |`,
      );
      if (mismatched) process.exitCode = 1;
    } finally {
      await close();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
