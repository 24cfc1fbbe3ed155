// Dense vectors at 100k and 1M documents within the tab's 1 GB (issue 18 item 4), in headless
// Chromium on the Vite dev server's tests/browser/vectors-harness.html, one fresh profile per rung:
//
//   float32 exact   the matrix in the retrieval worker, as a dense run does today (kept rungs only)
//   int8 + rescore  the compact store: int8 codes in memory, float32 rows in OPFS, top R rescored;
//                   its two-pass scan (4-bit first pass, int8 of the best candidates), and with
//                   --baseline also the full int8 scan of the first version, alternated round by
//                   round in one store holding both layouts (so that phase's memory counts both)
//   HNSW            hnswlib (wasm) in the index worker, M 16, efConstruction 200 (kept rungs only)
//   IVF-int8        src/lib/core/retrieval/ivf.ts built and searched in the page (kept rungs only)
//
// Corpora: `clustered-<n>` is clusteredVectors (seeded, generated in the page: the fair case for
// HNSW and IVF); `<path to a float16 .npy>` streams a make-scale-shard set (random unit vectors:
// every method's hardest case) in pieces, so a 1M rung never holds its rows in the page. Queries are
// seeded unit vectors (clustered ones for the clustered corpus); recall@10 is against the exact
// top 10 computed in the page piece by piece (core exactSearch's arithmetic). Each query is one
// call (latency as the page sees it: p50/p95); methods alternate round by round. Memory: the
// renderer processes' RSS from /proc, sampled every 200 ms, peak per phase.
//
//   npm run bench:vectors -- --rung clustered-100000 [--rung /path/text.npy[:rows]] [--queries 200]
//     [--rounds 3] [--rerank 100] [--keep-max 100000] [--baseline] [--write-benchmarks]
//   npm run bench:vectors -- --from-json saved-output.log   (the section from a saved run's last line)
//   [--section NAME]: write BENCHMARKS.md's <!-- bench:NAME --> section (default: vectors)
import { closeSync, createReadStream, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import type { VectorsHarness } from '../tests/browser/vectors-harness';
import { harnessCaller } from '../tests/e2e/browser';
import {
  MiB,
  benchArgs,
  median,
  openBrowser,
  publish,
  runInfo,
  sampleMemory,
  startDevServer,
} from './lib/bench-harness';

const argv = benchArgs({
  rung: { type: 'string', multiple: true, default: ['clustered-100000'] },
  queries: { type: 'string', default: '200' },
  rounds: { type: 'string', default: '3' },
  k: { type: 'string', default: '10' },
  rerank: { type: 'string', default: '100' },
  'keep-max': { type: 'string', default: '100000' },
  piece: { type: 'string', default: '16384' },
  /** The BENCHMARKS.md section written (`<!-- bench:NAME -->`). */
  section: { type: 'string', default: 'vectors' },
  /** Hold both code layouts and alternate the two-pass scan with the full int8 scan. */
  baseline: { type: 'boolean', default: false },
  /** Write the BENCHMARKS.md section from a saved report (the JSON line a run prints last). */
  'from-json': { type: 'string', multiple: true },
});
const NQ = Number(argv.queries);
const ROUNDS = Number(argv.rounds);
const K = Number(argv.k);
const RERANK = Number(argv.rerank);
const KEEP_MAX = Number(argv['keep-max']);
const PIECE = Number(argv.piece);
const BASELINE = argv.baseline;
const COMPACT = BASELINE ? { scan: 'both' as const } : {};
const log = (...a: unknown[]) => console.log(`[${new Date().toISOString().slice(11, 19)}]`, ...a);
const call = harnessCaller<VectorsHarness>('vectorsHarness');

/** Shape and data offset of a float16 .npy, from its header. */
function npyInfo(path: string): { n: number; dim: number; offset: number } {
  const fd = openSync(path, 'r');
  const head = Buffer.alloc(4096);
  readSync(fd, head, 0, 4096, 0);
  closeSync(fd);
  const hl = head.readUInt16LE(8);
  const text = head.subarray(10, 10 + hl).toString('latin1');
  if (!/'descr':\s*'<f2'/.test(text)) throw new Error(`${path}: not a little-endian float16 .npy (${text})`);
  const m = /'shape':\s*\((\d+),\s*(\d+)\)/.exec(text);
  if (!m) throw new Error(`${path}: no 2-d shape in the header`);
  return { n: Number(m[1]), dim: Number(m[2]), offset: 10 + hl };
}

interface Phase {
  name: string;
  ms: number;
  peakRss: number;
  endRss: number;
}

async function main() {
  const run = runInfo();
  const files = new Map<string, { path: string; offset: number; dim: number }>();
  const { server, base } = await startDevServer([
    {
      name: 'bench-vectors-data',
      configureServer(s) {
        // /vec/<file id>/<first row>/<count>: `count` float16 rows from that row on.
        s.middlewares.use((req, res, next) => {
          const m = /^\/vec\/(\w+)\/(\d+)\/(\d+)$/.exec(req.url ?? '');
          const f = m && files.get(m[1]);
          if (!m || !f) return next();
          const rowBytes = f.dim * 2;
          const start = f.offset + Number(m[2]) * rowBytes;
          const end = Math.min(statSync(f.path).size, start + Number(m[3]) * rowBytes);
          res.setHeader('Content-Type', 'application/octet-stream');
          res.setHeader('Content-Length', String(end - start));
          createReadStream(f.path, { start, end: end - 1 }).pipe(res);
        });
      },
    },
  ]);
  const results: Record<string, unknown>[] = [];
  try {
    for (const [ri, rung] of argv.rung.entries()) {
      const { page, profileDir, procs, close } = await openBrowser({
        log: (m) => log(m),
        harness: { base, path: 'tests/browser/vectors-harness.html' },
      });
      let current = '';
      const mem = sampleMemory(profileDir, { phase: () => current });
      const phases: Phase[] = [];
      const phase = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
        current = name;
        const t0 = performance.now();
        const r = await fn();
        const peak = Math.max(mem.byPhase[name]?.peak ?? 0, mem.now());
        phases.push({ name, ms: performance.now() - t0, peakRss: peak, endRss: mem.now() });
        log(
          `  ${name}: ${((performance.now() - t0) / 1000).toFixed(1)} s, peak renderer RSS ${(peak / MiB).toFixed(0)} MiB`,
        );
        return r;
      };
      const out: Record<string, unknown> = { rung, phases, load: loadavg()[0] };
      results.push(out);
      try {
        out.baselineRss = mem.now();
        let n: number;
        let dim: number;
        let keep: boolean;
        const clustered = /^clustered-(\d+)(?:x(\d+))?$/.exec(rung);
        if (clustered) {
          n = Number(clustered[1]);
          dim = Number(clustered[2] ?? 384);
          keep = true;
          log(`rung ${rung}: ${n} × ${dim} clustered, ${NQ} queries`);
          out.data = await phase('generate + exact reference', () =>
            call(page, 'generate', n, NQ, dim, K, 7),
          );
          out.compactBuild = await phase('int8 + rescore: build', () => call(page, 'compactBuild', COMPACT));
        } else {
          const [path, rows] = rung.split(':');
          const info = npyInfo(path);
          n = rows ? Math.min(info.n, Number(rows)) : info.n;
          dim = info.dim;
          keep = n <= KEEP_MAX;
          files.set(`f${ri}`, { path, offset: info.offset, dim });
          log(`rung ${path}: ${n} × ${dim} float16 rows streamed, ${NQ} random queries, kept: ${keep}`);
          out.data = await phase('stream + exact reference + int8 store', () =>
            call(page, 'stream', `${base}/vec/f${ri}`, n, dim, {
              piece: PIECE,
              nq: NQ,
              k: K,
              compact: COMPACT,
              keep,
            }),
          );
        }
        out.n = n;
        out.dim = dim;
        out.compactInfo = (await call(page, 'compactQueries', K, RERANK, 1)).info;
        if (BASELINE) await call(page, 'compactQueries', K, RERANK, 1, 'int8');
        const hnswEf = [64, 128, 256];
        const nprobes = [16, 64];
        const nlist = Math.round(2 * Math.sqrt(n));
        if (keep) {
          out.floatLoad = await phase('float32 exact: load', () => call(page, 'floatExact', K, 1));
          out.hnswBuild = await phase('HNSW: build', () => call(page, 'hnswBuild'));
          out.ivfBuild = await phase(`IVF: build (nlist ${nlist})`, () => call(page, 'ivfBuild', nlist));
        }
        const rounds: Record<string, unknown>[] = [];
        out.rounds = rounds;
        for (let r = 0; r < ROUNDS; r++) {
          const round: Record<string, unknown> = { load: loadavg()[0] };
          rounds.push(round);
          log(` round ${r + 1}, load ${loadavg()[0].toFixed(2)}`);
          // The two scans in turn, the first of them alternating round by round.
          const scans = !BASELINE ? ['two-pass'] : r % 2 ? ['int8', 'two-pass'] : ['two-pass', 'int8'];
          for (const scan of scans) {
            const c = await phase(`round ${r + 1}: int8 + rescore (${scan})`, () =>
              call(page, 'compactQueries', K, RERANK, undefined, scan as 'two-pass' | 'int8'),
            );
            round[scan === 'int8' ? 'compactInt8' : 'compact'] = {
              p50: c.p50,
              p95: c.p95,
              workerP50: c.workerP50,
              scanP50: c.scanP50,
              rescoreP50: c.rescoreP50,
              recall: c.recall,
              rowsRead: c.rowsRead,
              kernel: c.kernel,
              store: c.store,
              scan: c.scan,
              candidates: c.candidates,
            };
          }
          if (keep) {
            round.float = await phase(`round ${r + 1}: float32 exact`, () => call(page, 'floatExact', K));
            round.hnsw = await phase(`round ${r + 1}: HNSW`, () => call(page, 'hnswQueries', K, hnswEf));
            round.ivf = [];
            for (const np of nprobes)
              (round.ivf as unknown[]).push(
                await phase(`round ${r + 1}: IVF nprobe ${np}`, () => call(page, 'ivfQueries', K, np, 4 * K)),
              );
          }
          log(`  ${JSON.stringify(round)}`);
        }
        out.peakRss = Math.max(...phases.map((p) => p.peakRss));
        out.hwm = procs()
          .filter((p) => p.type === 'renderer')
          .reduce((s, p) => s + p.hwmBytes, 0);
      } catch (e) {
        out.error = (e as Error)?.message ?? String(e);
        log('rung failed:', out.error);
      } finally {
        await mem.stop();
        await close();
      }
    }
  } finally {
    await server.close();
  }
  const report = {
    baseline: BASELINE,
    header: run.header(`npm run bench:vectors -- ${process.argv.slice(2).join(' ')}`),
    queries: NQ,
    rounds: ROUNDS,
    k: K,
    rerank: RERANK,
    results,
  };
  console.log(JSON.stringify(report));
  publish(argv.section, markdown(report), { write: argv['write-benchmarks'] });
}

const med = (xs: number[]) => median(xs.filter(Number.isFinite));
const range = (xs: number[], d = 1) =>
  `${med(xs).toFixed(d)} [${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)}]`;

/** A rung's name in the table: the shard folder of a streamed set, or the generated corpus. */
const shortName = (rung: string) => /\/([^/]+)\/embeddings\//.exec(rung)?.[1] ?? rung;

/** The measured table (the prose around it is written by hand in BENCHMARKS.md). */
function markdown(rep: {
  baseline?: boolean;
  queries?: number;
  header: string;
  results: Record<string, unknown>[];
}): string {
  const md: string[] = [];
  const compactSplit: string[] = [];
  md.push(
    rep.header,
    '',
    '| corpus | method | build / load | query p50 [min–max over rounds] | query p95 | recall@10 vs exact | renderers’ peak RSS in the phase |',
    '| --- | --- | --: | --: | --: | --: | --: |',
  );
  for (const r of rep.results) {
    const name = `${shortName(String(r.rung))} (${Number(r.n).toLocaleString('en')} × ${r.dim})`;
    if (r.error) {
      md.push(`| ${name} | — | failed: ${String(r.error).slice(0, 200)} | | | | |`);
      continue;
    }
    const phases = r.phases as Phase[];
    const ph = (re: RegExp) => phases.filter((p) => re.test(p.name));
    const peakOf = (re: RegExp) => `${(Math.max(...ph(re).map((p) => p.peakRss)) / MiB).toFixed(0)} MiB`;
    const rounds = r.rounds as Record<string, any>[]; // eslint-disable-line @typescript-eslint/no-explicit-any
    const build = (re: RegExp) => `${(ph(re).reduce((s, p) => s + p.ms, 0) / 1000).toFixed(1)} s`;
    const d = r.data as { addMs?: number; finishMs?: number };
    // Streamed: the worker's time to take the rows (OPFS writes) and encode them, not the fetch,
    // decoding and reference work of the page around it; generated: the whole handover.
    const compactBuild =
      d.addMs !== undefined
        ? `${(((d.addMs ?? 0) + (d.finishMs ?? 0)) / 1000).toFixed(1)} s (add ${((d.addMs ?? 0) / 1000).toFixed(1)} + encode ${((d.finishMs ?? 0) / 1000).toFixed(1)})`
        : build(/int8 \+ rescore: build/);
    for (const key of ['compact', 'compactInt8']) {
      const c = rounds.map((x) => x[key]).filter(Boolean);
      if (!c.length) continue;
      // Older reports have no scan field: their compact store scanned every int8 code.
      const method =
        (c[0].scan ?? 'int8') === 'int8'
          ? `int8 full scan + exact rescoring of top ${RERANK}`
          : `4-bit first pass, int8 of best ${c[0].candidates}, exact rescoring of top ${RERANK}`;
      const held = (r.baseline ?? rep.baseline) ? '; store holds both layouts' : '';
      compactSplit.push(
        `| ${name} | ${method} | ${range(c.map((x) => x.workerP50))} ms | ${c[0]?.scanP50 !== undefined ? range(c.map((x) => x.scanP50)) + ' ms' : '—'} | ${
          c[0]?.rescoreP50 !== undefined
            ? range(
                c.map((x) => x.rescoreP50),
                2,
              ) + ' ms'
            : '—'
        } | ${c[0]?.rowsRead / Number(rep.queries ?? 200)} |`,
      );
      md.push(
        `| ${name} | ${method} (${c[0]?.kernel}, rows in ${c[0]?.store}${held}) | ${key === 'compact' ? compactBuild : ''} | ${range(c.map((x) => x.p50))} ms | ${med(c.map((x) => x.p95)).toFixed(1)} ms | ${med(c.map((x) => x.recall)).toFixed(4)} | ${peakOf(/int8|stream/)} |`,
      );
    }
    if (rounds[0]?.float) {
      const f = rounds.map((x) => x.float);
      md.push(
        `| ${name} | float32 exact (retrieval worker, as today) | ${build(/float32 exact: load/)} | ${range(f.map((x) => x.p50))} ms | ${med(f.map((x) => x.p95)).toFixed(1)} ms | ${med(f.map((x) => x.recall)).toFixed(4)} | ${peakOf(/float32/)} |`,
      );
      for (const [i, ef] of (rounds[0].hnsw as { efSearch: number }[]).map((p) => p.efSearch).entries()) {
        const h = rounds.map((x) => x.hnsw[i]);
        md.push(
          `| ${name} | HNSW M 16 efC 200, ef ${ef} (wasm) | ${i === 0 ? `${build(/HNSW: build/)}, heap ${((r.hnswBuild as { heapBytes: number }).heapBytes / MiB) | 0} MiB` : ''} | ${range(
            h.map((x) => x.p50),
            2,
          )} ms | ${med(h.map((x) => x.p95)).toFixed(2)} ms | ${med(h.map((x) => x.recall)).toFixed(4)} | ${peakOf(/HNSW/)} |`,
        );
      }
      for (const [i, v] of (rounds[0].ivf as { nprobe: number }[]).entries()) {
        const h = rounds.map((x) => x.ivf[i]);
        md.push(
          `| ${name} | IVF-int8 (ivf.ts, in the page), nlist ${Math.round(2 * Math.sqrt(Number(r.n)))}, nprobe ${v.nprobe}, rerank ${4 * K} | ${i === 0 ? build(/IVF: build/) : ''} | ${range(
            h.map((x) => x.p50),
            2,
          )} ms | ${med(h.map((x) => x.p95)).toFixed(2)} ms | ${med(h.map((x) => x.recall)).toFixed(4)} | ${peakOf(/IVF/)} |`,
        );
      }
    }
  }
  md.push(
    '',
    'The int8 + rescore queries inside the index worker (median per query, [min–max] over rounds): all of it, the int8 scan with candidate selection, and reading + rescoring the candidates from OPFS:',
    '',
    '| corpus | method | in the worker | scan + selection | read + rescore | rows read per query |',
    '| --- | --- | --: | --: | --: | --: |',
    ...compactSplit,
  );
  md.push('', 'Peak renderer RSS per rung (all phases; the harness page alone: baseline):', '');
  for (const r of rep.results)
    if (!r.error)
      md.push(
        `- ${shortName(String(r.rung))}: baseline ${(Number(r.baselineRss) / MiB).toFixed(0)} MiB, peak ${(Number(r.peakRss) / MiB).toFixed(0)} MiB; compact store ${JSON.stringify(r.compactInfo)}`,
      );
  return md.join('\n');
}

if (argv['from-json']) {
  // One table from several saved runs (e.g. the 100k rung and the 1M rung, run apart).
  const reps = argv['from-json'].map((f) => {
    const lines = readFileSync(f, 'utf8').trim().split('\n');
    const rep = JSON.parse(lines.filter((l) => /^\{"baseline"/.test(l)).at(-1)!);
    for (const r of rep.results) r.baseline ??= rep.baseline;
    return rep;
  });
  const merged = {
    ...reps[0],
    header: reps.map((r) => r.header).join('\n\n'),
    results: reps.flatMap((r) => r.results),
  };
  publish(argv.section, markdown(merged), { write: true });
} else await main();
