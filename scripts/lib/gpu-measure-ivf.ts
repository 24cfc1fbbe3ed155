// bench:gpu's IVF row: the int8 scores of a query's probed lists on the WGSL kernel
// (src/lib/platform/gpu/gpu-int8.ts, turned into candidates by int8Candidates) against the CPU loop
// (scoreList), over an IVF index packed in memory from the exact row's vectors. Same code in Node
// (Dawn) and in the browser page; no Node or DOM API.
import type { Matrix } from '../../src/lib/core/retrieval/exact';
import { median } from '../../src/lib/core/eval/stats';
import {
  Candidates,
  buildIvf,
  int8Candidates,
  parseIvfHeader,
  parseIvfList,
  probeLists,
  scaledQuery,
  scoreList,
  type IvfList,
} from '../../src/lib/core/retrieval/ivf';
import { createGpuInt8, int8ScoreBound } from '../../src/lib/platform/gpu/gpu-int8';

export interface IvfInt8Row {
  nlist: number;
  nprobe: number;
  /** Candidates per query (rescored exactly afterwards by the search; not here). */
  rerank: number;
  /** Median rows scored per query. */
  rowsPerQuery: number;
  /** Median per query: CPU loop, and WGSL kernel + upload + readback + the exact check. */
  cpuMs: number | null;
  gpuMs: number | null;
  /** Queries whose GPU candidates (rows and int8 scores) equal the CPU's. */
  same: number | null;
  /** Queries the GPU's float32 sums could not decide (the CPU scores them again). */
  undecided: number | null;
  queries: number;
  error?: string;
}

/** Packs `docs` (nlist = 2·√n) and scores each query's `nprobe` lists on both sides. */
export async function measureIvfInt8(
  docs: Matrix,
  queries: Matrix,
  log: (line: string) => void,
  nprobe = 16,
  rerank = 40,
): Promise<IvfInt8Row> {
  const nlist = Math.max(1, Math.min(docs.n, Math.round(2 * Math.sqrt(docs.n))));
  const row: IvfInt8Row = {
    nlist,
    nprobe,
    rerank,
    rowsPerQuery: 0,
    cpuMs: null,
    gpuMs: null,
    same: null,
    undecided: null,
    queries: queries.n,
  };
  try {
    let t0 = performance.now();
    const file = buildIvf(docs.data, docs.n, docs.dim, { nlist, npyDataOffset: 0, iterations: 4 });
    const h = parseIvfHeader(file, 'ivf', file.length);
    log(
      `ivf: packed ${docs.n} × ${docs.dim} into ${nlist} lists in ${(performance.now() - t0).toFixed(0)} ms`,
    );
    const lists: IvfList[] = Array.from({ length: nlist }, (_, l) =>
      parseIvfList(h, l, file.subarray(h.offsets[l], h.offsets[l + 1]), 'ivf'),
    );
    const gpu = await createGpuInt8();
    try {
      const cpuMs: number[] = [];
      const gpuMs: number[] = [];
      const rows: number[] = [];
      let same = 0;
      let undecided = 0;
      for (let qi = -1; qi < queries.n; qi++) {
        // Query -1 warms the pipeline up and is not counted.
        const q = queries.data.subarray(Math.max(0, qi) * docs.dim, (Math.max(0, qi) + 1) * docs.dim);
        const probed = probeLists(h, q, nprobe).map((l) => lists[l]);
        const m = probed.reduce((s, l) => s + l.rows.length, 0);
        t0 = performance.now();
        const cpu = new Candidates(rerank);
        for (const l of probed) scoreList(h, l, q, cpu);
        const tc = performance.now() - t0;
        t0 = performance.now();
        const codes = new Int8Array(m * docs.dim);
        let at = 0;
        for (const l of probed) {
          codes.set(l.codes, at);
          at += l.codes.length;
        }
        const qs = scaledQuery(h, q);
        const approx = await gpu.score(codes, m, qs);
        const got = int8Candidates(h, probed, q, approx, int8ScoreBound(qs), rerank);
        const tg = performance.now() - t0;
        if (qi < 0) continue;
        cpuMs.push(tc);
        gpuMs.push(tg);
        rows.push(m);
        if (!got) undecided++;
        else if (
          got.rows.length === cpu.rows.length &&
          got.rows.every((r, i) => r === cpu.rows[i] && got.scores[i] === cpu.scores[i])
        )
          same++;
      }
      Object.assign(row, {
        rowsPerQuery: median(rows),
        cpuMs: median(cpuMs),
        gpuMs: median(gpuMs),
        same,
        undecided,
      });
    } finally {
      gpu.destroy();
    }
    log(
      `ivf: int8 scoring of ${row.rowsPerQuery} rows per query (nprobe ${nprobe}): WGSL ${row.gpuMs?.toFixed(2)} ms, ` +
        `CPU ${row.cpuMs?.toFixed(2)} ms; same candidates ${row.same} of ${row.queries}, undecided ${row.undecided}`,
    );
  } catch (e) {
    row.error = e instanceof Error ? e.message : String(e);
    log(`ivf: ERROR ${row.error}`);
  }
  return row;
}
