// Benchmarks the vector index against native anchors, in one run:
//   (a) native hnswlib (Debian python3-hnswlib, /usr/bin/python3, 1 thread): build time, QPS and
//       recall@k at each efSearch;
//   (b) faiss IndexFlatIP (python3-faiss, 1 thread, OpenBLAS): exact search time, and the ground truth;
//   (c) Loupe's HNSW engine (the same hnswlib release compiled to wasm with SIMD by
//       scripts/build-wasm.sh) in headless Chromium through our index worker: the same measurements;
//   (d) our exact search in Chromium: JS, and WebGPU (SwiftShader here: a CPU emulation, so its time
//       says nothing about GPUs; it is reported for completeness and checked for equal answers);
//   plus memory (browser measurement, wasm heap, Chromium RSS, python max RSS), a 1M × dim int8
//   exact-search attempt, and an inspection of the engine's wasm binary (SIMD, assertions).
// Installs the native anchors (Debian python3-hnswlib, python3-faiss) when they are missing.
// Writes bench-results/index-<n>x<dim>.{md,svg,json}.
//
//   npx tsx scripts/bench-index.ts [--n 100000] [--dim 384] [--queries 1000] [--k 10]
//     [--gpu-queries 100] [--million 1000000] [--repeats 2] [--seed 1]
import { spawnSync } from 'node:child_process';
import {
  createReadStream,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium, type Page } from 'playwright-core';
import { createServer } from 'vite';
import { clusteredVectors } from '../src/lib/core/exact';
import { writeNpy } from '../src/lib/core/vector-files';
import type { IndexHarness } from '../tests/browser/index-harness';
import { CHROMIUM, CHROMIUM_ARGS, harnessCaller } from '../tests/e2e/browser';

const ROOT = resolve(import.meta.dirname, '..');
const PYTHON = '/usr/bin/python3';
const EFS = [16, 32, 64, 128, 256, 512];
const M = 16;
const EF_CONSTRUCTION = 200;
const HNSW_SEED = 100;

const { values: argv } = parseArgs({
  options: {
    n: { type: 'string', default: '100000' },
    dim: { type: 'string', default: '384' },
    queries: { type: 'string', default: '1000' },
    k: { type: 'string', default: '10' },
    'gpu-queries': { type: 'string', default: '100' },
    million: { type: 'string', default: '1000000' },
    repeats: { type: 'string', default: '2' },
    seed: { type: 'string', default: '1' },
    out: { type: 'string', default: join(ROOT, 'bench-results') },
  },
});
const N = Number(argv.n);
const DIM = Number(argv.dim);
const NQ = Number(argv.queries);
const K = Number(argv.k);
const GPU_NQ = Math.min(NQ, Number(argv['gpu-queries']));
const MILLION = Number(argv.million);
const REPEATS = Number(argv.repeats);
const SEED = Number(argv.seed);

const log = (...a: unknown[]) => console.log(`[${new Date().toISOString().slice(11, 19)}]`, ...a);

// ---------------------------------------------------------------------------------------------
// Native anchors (Python)

const PY = String.raw`
import json, resource, sys, time
import numpy as np, faiss, hnswlib
a = json.loads(sys.argv[1])
D = np.load(a['docs']); Q = np.load(a['queries'])
n, dim = D.shape; k = a['k']; reps = a['repeats']
faiss.omp_set_num_threads(1)

def timed(fn, reps):
    # Best wall-clock and best CPU time (process_time: immune to other processes' load) over reps.
    bw = bc = float('inf'); r = None
    for _ in range(reps):
        w = time.perf_counter(); c = time.process_time(); r = fn()
        bw = min(bw, time.perf_counter() - w); bc = min(bc, time.process_time() - c)
    return r, {'wall': bw, 'cpu': bc}

out = {'faiss_version': faiss.__version__, 'numpy': np.__version__}
flat = faiss.IndexFlatIP(dim); flat.add(D)
(S, I), out['faiss_flat'] = timed(lambda: flat.search(Q, k), reps)
gt = I
del flat
p = hnswlib.Index(space='ip', dim=dim)
p.init_index(max_elements=n, M=a['M'], ef_construction=a['efC'], random_seed=a['seed'])
p.set_num_threads(1)
_, out['hnsw_build'] = timed(lambda: p.add_items(D, np.arange(n), num_threads=1), 1)
pts = []
for ef in a['efs']:
    p.set_ef(ef)
    (L, _d), t = timed(lambda: p.knn_query(Q, k=k, num_threads=1), reps)
    rec = float(np.mean([len(set(L[i]) & set(gt[i])) / k for i in range(len(Q))]))
    pts.append({'ef': ef, 'recall': rec, **t})
out['hnsw'] = pts
out['max_rss_bytes'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
out['gt'] = gt.tolist()
print(json.dumps(out))
`;

/** Best wall-clock and CPU seconds of a measurement. */
interface Timing {
  wall: number;
  cpu: number;
}

interface Point extends Timing {
  ef: number;
  recall: number;
}

interface NativeResult {
  faiss_version: string;
  faiss_flat: Timing;
  hnsw_build: Timing;
  hnsw: Point[];
  max_rss_bytes: number;
  gt: number[][];
}

function runNative(dir: string, docsPath: string, queriesPath: string): NativeResult {
  const script = join(dir, 'native.py');
  writeFileSync(script, PY);
  const args = JSON.stringify({
    docs: docsPath,
    queries: queriesPath,
    k: K,
    repeats: REPEATS,
    M,
    efC: EF_CONSTRUCTION,
    seed: HNSW_SEED,
    efs: EFS,
  });
  const env = { ...process.env, OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1', MKL_NUM_THREADS: '1' };
  const r = spawnSync(PYTHON, [script, args], { env, encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`native benchmark failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as NativeResult;
}

// ---------------------------------------------------------------------------------------------
// Chromium RSS sampling

/** Sums VmRSS of every process whose command line mentions the profile dir (Chromium's tree). */
function chromiumRssBytes(profileDir: string): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmd.includes(profileDir)) continue;
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) total += Number(m[1]) * 1024;
    } catch {
      /* process gone */
    }
  }
  return total;
}

/**
 * CPU seconds used so far by Chromium's renderer processes of this profile (the index worker runs
 * in the page's renderer). With other jobs on the machine, CPU time is the fair single-thread
 * measure: wall-clock time also counts waiting for a core.
 */
function rendererCpuSeconds(profileDir: string): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmd.includes(profileDir) || !cmd.includes('--type=renderer')) continue;
      // Fields after the command name: utime and stime are the 12th and 13th, in clock ticks.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      /* process gone */
    }
  }
  return ticks / CLOCK_TICKS;
}

/** USER_HZ of /proc/<pid>/stat times. */
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

// ---------------------------------------------------------------------------------------------
// The engine's wasm binary, inspected

interface WasmInspection {
  wasmBytes: number;
  sections: (string | number)[];
  functions: number;
  instructions: number;
  simdInstructions: number;
  /** Functions with at least one SIMD instruction. */
  simdFunctions: number;
  assertFailImported: boolean;
  glueAssertCalls: number;
  glueAssertionsBuild: boolean;
  buildFlags: string;
}

/** Decodes every function body of a wasm module, counting instructions (SIMD separately). */
function inspectWasm(b: Uint8Array) {
  let p = 8;
  const u = () => {
    let r = 0;
    let s = 0;
    let x: number;
    do {
      x = b[p++];
      r += (x & 127) * 2 ** s;
      s += 7;
    } while (x & 128);
    return r;
  };
  const skipLeb = () => {
    while (b[p++] & 128);
  };
  const str = () => {
    const l = u();
    const s = new TextDecoder().decode(b.subarray(p, p + l));
    p += l;
    return s;
  };
  const sections: { id: number; name?: string; start: number; end: number }[] = [];
  while (p < b.length) {
    const id = b[p++];
    const size = u();
    const start = p;
    const name = id === 0 ? str() : undefined;
    sections.push({ id, name, start, end: start + size });
    p = start + size;
  }
  let importedFuncs = 0;
  const imports: string[] = [];
  const imp = sections.find((s) => s.id === 2);
  if (imp) {
    p = imp.start;
    const n = u();
    for (let i = 0; i < n; i++) {
      imports.push(`${str()}.${str()}`);
      const kind = b[p++];
      if (kind === 0) {
        u();
        importedFuncs++;
      } else if (kind === 1) {
        p++;
        const f = b[p++];
        u();
        if (f & 1) u();
      } else if (kind === 2) {
        const f = b[p++];
        u();
        if (f & 1) u();
      } else if (kind === 3) p += 2;
      else if (kind === 4) {
        p++;
        u();
      }
    }
  }
  const names = new Map<number, string>();
  const ns = sections.find((s) => s.name === 'name');
  if (ns) {
    p = ns.start;
    str();
    while (p < ns.end) {
      const sid = b[p++];
      const size = u();
      const e = p + size;
      if (sid === 1) {
        const n = u();
        for (let i = 0; i < n; i++) {
          const idx = u();
          names.set(idx, str());
        }
      }
      p = e;
    }
  }
  const code = sections.find((s) => s.id === 10)!;
  p = code.start;
  const nf = u();
  const perFn: { idx: number; total: number; simd: number; f32mul: number; f32add: number }[] = [];
  const memarg = () => {
    u();
    u();
  };
  const ONE_U32 = new Set([
    0x07, 0x08, 0x09, 0x18, 0x0c, 0x0d, 0x10, 0x12, 0xd2, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26,
  ]);
  for (let f = 0; f < nf; f++) {
    const size = u();
    const end = p + size;
    const nl = u();
    for (let i = 0; i < nl; i++) {
      u();
      p++;
    }
    const st = { idx: importedFuncs + f, total: 0, simd: 0, f32mul: 0, f32add: 0 };
    while (p < end) {
      const op = b[p++];
      st.total++;
      if (op === 0x02 || op === 0x03 || op === 0x04 || op === 0x06) {
        const t = b[p];
        if (t === 0x40 || (t >= 0x6f && t <= 0x7f)) p++;
        else skipLeb();
      } else if (ONE_U32.has(op)) u();
      else if (op === 0x0e) {
        const n = u();
        for (let i = 0; i <= n; i++) u();
      } else if (op === 0x11 || op === 0x13) {
        u();
        u();
      } else if (op === 0x1c) p += u();
      else if (op >= 0x28 && op <= 0x3e) memarg();
      else if (op === 0x3f || op === 0x40 || op === 0xd0) p++;
      else if (op === 0x41 || op === 0x42) skipLeb();
      else if (op === 0x43) p += 4;
      else if (op === 0x44) p += 8;
      else if (op === 0xfc) {
        const s = u();
        if (s === 8) {
          u();
          p++;
        } else if (s === 10) p += 2;
        else if (s === 11) p++;
        else if (s === 12 || s === 14) {
          u();
          u();
        } else if (s >= 9) u();
      } else if (op === 0xfd) {
        st.simd++;
        const s = u();
        if (s <= 11 || s === 92 || s === 93) memarg();
        else if (s === 12 || s === 13) p += 16;
        else if (s >= 21 && s <= 34) p++;
        else if (s >= 84 && s <= 91) {
          memarg();
          p++;
        }
      } else if (op === 0xfe) {
        if (u() === 3) p++;
        else memarg();
      } else if (op === 0x94) st.f32mul++;
      else if (op === 0x92) st.f32add++;
    }
    if (p !== end) throw new Error(`wasm decode lost sync in function ${f}`);
    perFn.push(st);
  }
  return { sections, imports, names, perFn, functions: nf };
}

function inspectEngineWasm(): WasmInspection {
  const dir = join(ROOT, 'src/lib/wasm/generated');
  const bytes = new Uint8Array(readFileSync(join(dir, 'hnsw.wasm')));
  const glue = readFileSync(join(dir, 'hnsw.mjs'), 'utf8');
  const w = inspectWasm(bytes);
  const script = readFileSync(join(ROOT, 'scripts/build-wasm.sh'), 'utf8');
  const flags = /^emcc (-std[^\n]*?)(?: -I| \\)/m.exec(script)?.[1] ?? '';
  return {
    wasmBytes: bytes.length,
    sections: w.sections.map((s) => s.name ?? s.id),
    functions: w.functions,
    instructions: w.perFn.reduce((s, f) => s + f.total, 0),
    simdInstructions: w.perFn.reduce((s, f) => s + f.simd, 0),
    simdFunctions: w.perFn.filter((f) => f.simd > 0).length,
    assertFailImported: w.imports.some((i) => i.endsWith('__assert_fail')),
    glueAssertCalls: (glue.match(/\bassert\(/g) ?? []).length,
    glueAssertionsBuild: glue.includes('unexportedRuntimeSymbol') || glue.includes('missingLibrarySymbol'),
    buildFlags: flags,
  };
}

/** Installs Debian's python3-hnswlib and python3-faiss when /usr/bin/python3 cannot import them. */
function ensureNativeAnchors(): void {
  const probe = () =>
    spawnSync(PYTHON, ['-c', 'import numpy, hnswlib, faiss'], { encoding: 'utf8' }).status === 0;
  if (probe()) return;
  log('installing the native anchors: apt-get install python3-hnswlib python3-faiss');
  const sudo = process.getuid?.() === 0 ? [] : ['sudo'];
  const run = (args: string[]) => {
    const r = spawnSync(sudo[0] ?? args[0], sudo.length ? args : args.slice(1), {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (r.status !== 0) throw new Error(`${args.join(' ')} failed (${r.status})`);
  };
  run(['apt-get', 'update', '-qq']);
  run(['apt-get', 'install', '-y', '-qq', 'python3-hnswlib', 'python3-faiss', 'python3-numpy']);
  if (!probe()) throw new Error(`${PYTHON} still cannot import numpy, hnswlib and faiss`);
}

// ---------------------------------------------------------------------------------------------
// Browser side

/** Calls `window.indexHarness[fn](...args)` in the page. */
const call = harnessCaller<IndexHarness>('indexHarness');

function recallVs(indices: number[], counts: number[], k: number, gt: number[][]): number {
  let sum = 0;
  for (let q = 0; q < gt.length && q < counts.length; q++) {
    const truth = new Set(gt[q].slice(0, k));
    let hit = 0;
    for (let i = 0; i < Math.min(k, counts[q]); i++) if (truth.has(indices[q * k + i])) hit++;
    sum += hit / k;
  }
  return sum / Math.min(gt.length, counts.length);
}

// ---------------------------------------------------------------------------------------------
// Output

const fmt = (x: number | undefined, d = 2) => (x === undefined || !Number.isFinite(x) ? '—' : x.toFixed(d));
const mb = (x: number | undefined) => (x === undefined ? '—' : `${(x / 2 ** 20).toFixed(0)} MiB`);

/** Recall (x) vs QPS (y, log) for the two HNSW implementations; ef labels on the points. */
function svgCurve(
  series: { name: string; color: string; points: { ef: number; recall: number; qps: number }[] }[],
) {
  const W = 720;
  const H = 440;
  const L = 70;
  const R = 60;
  const T = 40;
  const B = 60;
  const all = series.flatMap((s) => s.points);
  const xMin = Math.min(0.8, ...all.map((p) => p.recall));
  const xMax = 1;
  const yMin = 10 ** Math.floor(Math.log10(Math.min(...all.map((p) => p.qps))));
  const yMax = 10 ** Math.ceil(Math.log10(Math.max(...all.map((p) => p.qps))));
  const x = (r: number) => L + ((r - xMin) / (xMax - xMin)) * (W - L - R);
  const y = (q: number) =>
    T + (1 - (Math.log10(q) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin))) * (H - T - B);
  const parts: string[] = [];
  parts.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  parts.push(
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">HNSW recall@${K} vs QPS (1 thread), ${N.toLocaleString('en')} × ${DIM}, M=${M}, efC=${EF_CONSTRUCTION}</text>`,
  );
  for (let t = Math.ceil(xMin * 20) / 20; t <= 1.0001; t += 0.05) {
    parts.push(`<line x1="${x(t)}" y1="${T}" x2="${x(t)}" y2="${H - B}" stroke="#eee"/>`);
    parts.push(
      `<text x="${x(t)}" y="${H - B + 18}" text-anchor="middle" font-size="12">${t.toFixed(2)}</text>`,
    );
  }
  for (let e = Math.log10(yMin); e <= Math.log10(yMax) + 1e-9; e++) {
    const v = 10 ** e;
    parts.push(`<line x1="${L}" y1="${y(v)}" x2="${W - R}" y2="${y(v)}" stroke="#eee"/>`);
    parts.push(
      `<text x="${L - 8}" y="${y(v) + 4}" text-anchor="end" font-size="12">${v.toLocaleString('en')}</text>`,
    );
  }
  parts.push(
    `<text x="${(L + W - R) / 2}" y="${H - 18}" text-anchor="middle" font-size="13">recall@${K} vs exact</text>`,
  );
  parts.push(
    `<text x="18" y="${(T + H - B) / 2}" text-anchor="middle" font-size="13" transform="rotate(-90 18 ${(T + H - B) / 2})">queries per second (log)</text>`,
  );
  series.forEach((s, i) => {
    const pts = s.points.map((p) => `${x(p.recall).toFixed(1)},${y(p.qps).toFixed(1)}`).join(' ');
    parts.push(`<polyline points="${pts}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    for (const p of s.points) {
      parts.push(`<circle cx="${x(p.recall)}" cy="${y(p.qps)}" r="3.5" fill="${s.color}"/>`);
      parts.push(
        `<text x="${x(p.recall) + 5}" y="${y(p.qps) - 6}" font-size="10" fill="${s.color}">ef ${p.ef}</text>`,
      );
    }
    // Legend in the lower left, where the curves never are (low recall is fast).
    const ly = H - B - 16 - (series.length - 1 - i) * 20;
    parts.push(`<rect x="${L + 12}" y="${ly - 6}" width="14" height="4" fill="${s.color}"/>`);
    parts.push(`<text x="${L + 32}" y="${ly}" font-size="12">${s.name}</text>`);
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif">\n${parts.join('\n')}\n</svg>\n`;
}

/** QPS at the smallest ef whose recall reaches `target` (none: undefined). */
function qpsAt(points: { recall: number; qps: number; ef: number }[], target: number) {
  const p = points.find((x) => x.recall >= target);
  return p ? { qps: p.qps, ef: p.ef, recall: p.recall } : undefined;
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'loupe-bench-index-'));
  log(`work dir ${dir}`);
  const results: Record<string, unknown> = {
    date: new Date().toISOString(),
    n: N,
    dim: DIM,
    queries: NQ,
    k: K,
    M,
    efConstruction: EF_CONSTRUCTION,
    seed: SEED,
  };

  log(`generating ${N} × ${DIM} clustered vectors + ${NQ} queries (seed ${SEED})`);
  let t = performance.now();
  const gen = clusteredVectors(DIM, { seed: SEED });
  const docs = gen.generate(N);
  const queries = gen.generate(NQ);
  const docsPath = join(dir, 'docs.npy');
  const queriesPath = join(dir, 'queries.npy');
  writeFileSync(docsPath, writeNpy(docs.data, N, DIM));
  writeFileSync(queriesPath, writeNpy(queries.data, NQ, DIM));
  results.generateMs = performance.now() - t;

  log('wasm inspection');
  const wasm = inspectEngineWasm();
  results.wasm = wasm;
  ensureNativeAnchors();

  log('native: faiss flat + hnswlib (python, 1 thread)');
  t = performance.now();
  const native = runNative(dir, docsPath, queriesPath);
  log(
    `native done in ${((performance.now() - t) / 1000).toFixed(0)} s: build ${native.hnsw_build.cpu.toFixed(1)} s CPU, flat ${native.faiss_flat.cpu.toFixed(2)} s CPU`,
  );
  const gt = native.gt;
  results.native = { ...native, gt: undefined };

  log('starting Vite and Chromium');
  const server = await createServer({
    configFile: join(ROOT, 'vite.config.ts'),
    root: ROOT,
    server: { port: 0, host: '127.0.0.1', strictPort: false },
    logLevel: 'warn',
    // The vectors are streamed from the temp dir at /bench-data/ (a 150 MB body is too big for
    // Playwright's route.fulfill, which sends it through the DevTools protocol).
    plugins: [
      {
        name: 'bench-data',
        configureServer(s) {
          s.middlewares.use((req, res, next) => {
            const m = /^\/bench-data\/(docs|queries)\.npy$/.exec(req.url ?? '');
            if (!m) return next();
            const file = m[1] === 'docs' ? docsPath : queriesPath;
            res.setHeader('Content-Type', 'application/octet-stream');
            res.setHeader('Content-Length', String(statSync(file).size));
            createReadStream(file).pipe(res);
          });
        },
      },
    ],
  });
  await server.listen();
  const address = server.httpServer?.address();
  if (!address || typeof address === 'string') throw new Error('vite did not bind');
  const base = `http://127.0.0.1:${address.port}`;
  const profileDir = mkdtempSync(join(tmpdir(), 'loupe-bench-profile-'));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    // Eager memory measurement: otherwise measureUserAgentSpecificMemory waits for a GC (up to 20 s).
    args: [...CHROMIUM_ARGS, '--enable-blink-features=ForceEagerMeasureMemory'],
    headless: true,
  });
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, chromiumRssBytes(profileDir))), 250);
  const browser: Record<string, unknown> = {};
  results.browser = browser;
  try {
    browser.version =
      context.browser()?.version() ?? (await context.pages()[0]?.evaluate(() => navigator.userAgent));
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (e) => log('page error:', String(e)));
    page.on('crash', () => log('page crashed'));
    page.on('console', (m) => {
      if (m.type() === 'error') log('console error:', m.text());
    });
    await page.goto(`${base}/tests/browser/index-harness.html`);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    browser.loaded = await call(
      page,
      'loadNpy',
      `${base}/bench-data/docs.npy`,
      `${base}/bench-data/queries.npy`,
    );
    browser.memoryBefore = await call(page, 'memory');

    /** Runs a harness call, returning its result and the renderer CPU seconds it took. */
    const cpuOf = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
      const c0 = rendererCpuSeconds(profileDir);
      const r = await fn();
      return [r, rendererCpuSeconds(profileDir) - c0];
    };

    log('wasm engine: build in the index worker');
    results.loadBeforeBrowser = loadavg()[0];
    const [b, buildCpu] = await cpuOf(() =>
      call(page, 'build', {
        key: 'bench',
        space: 'ip',
        M,
        efConstruction: EF_CONSTRUCTION,
        seed: HNSW_SEED,
        force: true,
      }),
    );
    if (!b.ok) throw new Error(`build failed: ${b.message}`);
    browser.build = { wall: b.timings.addMs! / 1000, cpu: buildCpu } satisfies Timing;
    log(`wasm build ${(b.timings.addMs! / 1000).toFixed(1)} s wall, ${buildCpu.toFixed(1)} s CPU`);
    browser.wasmHeapBytes = await call(page, 'wasmHeapBytes');
    browser.memoryAfterBuild = await call(page, 'memory');

    const wasmPoints: Point[] = [];
    for (const ef of EFS) {
      const p: Point = { ef, recall: 0, wall: Infinity, cpu: Infinity };
      for (let r = 0; r < REPEATS; r++) {
        const [s, cpu] = await cpuOf(() => call(page, 'search', K, ef, { rescore: false }));
        p.wall = Math.min(p.wall, s.ms / 1000);
        p.cpu = Math.min(p.cpu, cpu);
        p.recall = recallVs(s.indices, s.counts, K, gt);
      }
      wasmPoints.push(p);
      log(
        `wasm ef=${ef}: recall ${p.recall.toFixed(4)}, ${(NQ / p.wall).toFixed(0)} QPS wall, ${(NQ / p.cpu).toFixed(0)} QPS CPU`,
      );
    }
    browser.hnsw = wasmPoints;

    log('exact search in Chromium: JS');
    const exactJs = { wall: Infinity, cpu: Infinity, agreementWithFaiss: 0 };
    let jsGpuIds: number[] = [];
    let jsIds: number[] = [];
    for (let r = 0; r < REPEATS; r++) {
      const [e, cpu] = await cpuOf(() => call(page, 'exact', K, { backend: 'js' }));
      if (!e.ok) throw new Error(e.message);
      exactJs.wall = Math.min(exactJs.wall, e.ms / 1000);
      exactJs.cpu = Math.min(exactJs.cpu, cpu);
      exactJs.agreementWithFaiss = recallVs(e.indices, e.counts, K, gt);
      jsIds = e.indices;
      jsGpuIds = e.indices.slice(0, GPU_NQ * K);
    }
    browser.exactJs = exactJs;
    log(
      `JS exact ${exactJs.wall.toFixed(2)} s wall, ${exactJs.cpu.toFixed(2)} s CPU (agreement with faiss ${exactJs.agreementWithFaiss.toFixed(4)})`,
    );

    log('exact search in Chromium: wasm (int16 SIMD candidates, rescored exactly)');
    const exactWasm = {
      wall: Infinity,
      cpu: Infinity,
      sameAsJs: false,
      float32Queries: 0,
      cpuFallbackQueries: 0,
      firstCallWall: 0,
    };
    for (let r = 0; r < REPEATS; r++) {
      const [e, cpu] = await cpuOf(() => call(page, 'exact', K, { backend: 'wasm' }));
      if (!e.ok) throw new Error(e.message);
      // The first call also quantizes the vectors into the wasm heap.
      if (r === 0) exactWasm.firstCallWall = e.ms / 1000;
      exactWasm.wall = Math.min(exactWasm.wall, e.ms / 1000);
      exactWasm.cpu = Math.min(exactWasm.cpu, cpu);
      exactWasm.sameAsJs = e.indices.length === jsIds.length && e.indices.every((x, i) => x === jsIds[i]);
      exactWasm.float32Queries = e.wasm?.float32Queries ?? -1;
      exactWasm.cpuFallbackQueries = e.wasm?.cpuFallbackQueries ?? -1;
    }
    browser.exactWasm = exactWasm;
    // The float32 kernel alone (normally only the retry pass): what 128-bit SIMD floats reach here.
    const exactWasmF32 = { wall: Infinity, cpu: Infinity, sameAsJs: false };
    for (let r = 0; r < REPEATS; r++) {
      const [e, cpu] = await cpuOf(() => call(page, 'exact', K, { backend: 'wasm', wasmKernel: 'float32' }));
      if (!e.ok) throw new Error(e.message);
      exactWasmF32.wall = Math.min(exactWasmF32.wall, e.ms / 1000);
      exactWasmF32.cpu = Math.min(exactWasmF32.cpu, cpu);
      exactWasmF32.sameAsJs = e.indices.length === jsIds.length && e.indices.every((x, i) => x === jsIds[i]);
    }
    browser.exactWasmF32 = exactWasmF32;
    log(
      `wasm exact, float32 kernel: ${exactWasmF32.wall.toFixed(2)} s wall, ${exactWasmF32.cpu.toFixed(2)} s CPU, same ids as JS: ${exactWasmF32.sameAsJs}`,
    );
    log(
      `wasm exact ${exactWasm.wall.toFixed(2)} s wall, ${exactWasm.cpu.toFixed(2)} s CPU (first call ${exactWasm.firstCallWall.toFixed(2)} s), same ids as JS: ${exactWasm.sameAsJs}`,
    );

    log(`exact search in Chromium: WebGPU (${GPU_NQ} queries)`);
    const probe = await call(page, 'gpuProbe');
    browser.gpuProbe = probe;
    if (probe.ok) {
      const g = await call(page, 'exact', K, { backend: 'webgpu', nq: GPU_NQ });
      if (g.ok) {
        const same = g.indices.every((x, i) => x === jsGpuIds[i]);
        browser.exactWebGpu = { ms: g.ms, queries: GPU_NQ, stats: g.gpu, sameIdsAsJs: same };
        log(`WebGPU exact ${(g.ms / 1000).toFixed(2)} s for ${GPU_NQ} queries, same ids as JS: ${same}`);
      } else browser.exactWebGpu = { error: g.message };
    }
    browser.memoryAfterExact = await call(page, 'memory');
    await call(page, 'stop');

    if (MILLION > 0) {
      log(`exact path at ${MILLION.toLocaleString('en')} × ${DIM} int8 (page main thread)`);
      try {
        browser.million = await call(page, 'int8Exact', MILLION, DIM, 100, K, SEED + 1);
      } catch (e) {
        browser.million = { error: String(e) };
      }
      log('million:', JSON.stringify(browser.million));
    }
  } catch (e) {
    log('browser phase failed:', e);
    throw e;
  } finally {
    clearInterval(sampler);
    browser.peakChromiumRssBytes = peakRss;
    await context.close().catch(() => undefined);
    await server.close().catch(() => undefined);
    rmSync(profileDir, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }
  results.totalSeconds = (Date.now() - started) / 1000;

  results.loadAtEnd = loadavg()[0];

  // ---- report
  // Ratios are computed on CPU time (see rendererCpuSeconds); wall-clock figures are shown beside.
  const nat = native.hnsw;
  const wsm = browser.hnsw as Point[];
  const bBuild = browser.build as Timing;
  const exactJs = browser.exactJs as Timing & { agreementWithFaiss: number };
  const qps = (p: Point, t: keyof Timing) => NQ / p[t];
  const buildRatio = bBuild.cpu / native.hnsw_build.cpu;
  const buildRatioWall = bBuild.wall / native.hnsw_build.wall;
  const ratioAt = (target: number) => {
    const a = wsm.find((p) => p.recall >= target);
    const n = nat.find((p) => p.recall >= target);
    return {
      wasm: a,
      native: n,
      ratio: a && n ? qps(a, 'cpu') / qps(n, 'cpu') : undefined,
      ratioWall: a && n ? qps(a, 'wall') / qps(n, 'wall') : undefined,
    };
  };
  const r95 = ratioAt(0.95);
  const r99 = ratioAt(0.99);
  const exactWasm = browser.exactWasm as Timing & {
    sameAsJs: boolean;
    float32Queries: number;
    cpuFallbackQueries: number;
    firstCallWall: number;
  };
  const exactRatio = exactWasm.cpu / native.faiss_flat.cpu;
  const exactRatioWall = exactWasm.wall / native.faiss_flat.wall;
  const exactJsRatio = exactJs.cpu / native.faiss_flat.cpu;
  const exactWasmF32 = browser.exactWasmF32 as Timing & { sameAsJs: boolean };
  /** Multiply-adds of the full query × corpus product, ×2 for flops, per CPU second. */
  const gflops = (cpuSeconds: number) => (2 * NQ * N * DIM) / cpuSeconds / 1e9;
  results.ratios = {
    buildRatio,
    buildRatioWall,
    qps95: r95,
    qps99: r99,
    exactRatio,
    exactRatioWall,
    exactJsRatio,
  };

  const verdict = (v: number | undefined, pass: (x: number) => boolean) =>
    v === undefined ? '—' : pass(v) ? 'met' : 'missed';
  const gpu = browser.exactWebGpu as
    { ms: number; queries: number; sameIdsAsJs: boolean; stats: { cpuFallbackQueries: number } } | undefined;
  const mil = browser.million as Record<string, unknown> | undefined;
  const mem = (browser.memoryAfterBuild ?? {}) as {
    uaBytes?: number;
    workerBytes?: number;
    jsHeapBytes?: number;
    error?: string;
  };
  const md: string[] = [];
  md.push(
    `## Vector index: ${N.toLocaleString('en')} × ${DIM}, ${NQ} queries, k=${K} (${results.date as string})`,
  );
  md.push('');
  md.push('```sh');
  md.push(`npx tsx scripts/bench-index.ts --n ${N} --dim ${DIM} --queries ${NQ}`);
  md.push('```');
  md.push('');
  md.push(
    `Seeded clustered vectors (50 clusters, rank-64 subspaces, noise 1, normalised; seed ${SEED}); inner product. ` +
      `HNSW M=${M}, efConstruction=${EF_CONSTRUCTION}, seed ${HNSW_SEED}, one thread everywhere. Ground truth: faiss IndexFlatIP. ` +
      `Native: Debian python3-hnswlib 0.6 (SSE build) and python3-faiss ${native.faiss_version} (OpenBLAS) under /usr/bin/python3. ` +
      `Browser: the same hnswlib release compiled to wasm with 128-bit SIMD (scripts/build-wasm.sh) in our index worker, headless Chromium ${String(browser.version ?? '')}. ` +
      `Times are the best of ${REPEATS} runs. **CPU** = CPU time of the measured process (python: process_time; ` +
      `browser: the renderer that hosts the worker, from /proc), which other jobs on the machine do not inflate; ` +
      `**wall** = elapsed time. Load average during the run: ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' / ')} (1/5/15 min) on ${cpus().length} cores. Ratios use CPU time.`,
  );
  md.push('');
  md.push(
    '| ef | native recall@10 | native QPS (CPU / wall) | wasm recall@10 | wasm QPS (CPU / wall) | wasm / native (CPU) |',
  );
  md.push('| --: | --: | --: | --: | --: | --: |');
  EFS.forEach((ef, i) =>
    md.push(
      `| ${ef} | ${fmt(nat[i].recall, 4)} | ${fmt(qps(nat[i], 'cpu'), 0)} / ${fmt(qps(nat[i], 'wall'), 0)} | ${fmt(wsm[i].recall, 4)} | ${fmt(qps(wsm[i], 'cpu'), 0)} / ${fmt(qps(wsm[i], 'wall'), 0)} | ${fmt(qps(wsm[i], 'cpu') / qps(nat[i], 'cpu'))} |`,
    ),
  );
  md.push('');
  md.push('| measure | native (CPU / wall) | browser (CPU / wall) | ratio CPU (wall) | target |');
  md.push('| --- | --: | --: | --: | --- |');
  md.push(
    `| HNSW build | ${fmt(native.hnsw_build.cpu, 1)} / ${fmt(native.hnsw_build.wall, 1)} s | ${fmt(bBuild.cpu, 1)} / ${fmt(bBuild.wall, 1)} s | ${fmt(buildRatio)}× (${fmt(buildRatioWall)}×) | ≤ 1.5× — ${verdict(buildRatio, (x) => x <= 1.5)} |`,
  );
  for (const [label, r] of [
    ['0.95', r95],
    ['0.99', r99],
  ] as const)
    md.push(
      `| QPS at recall@10 ≥ ${label} | ${r.native ? `${fmt(qps(r.native, 'cpu'), 0)} / ${fmt(qps(r.native, 'wall'), 0)} (ef ${r.native.ef})` : '—'} | ${r.wasm ? `${fmt(qps(r.wasm, 'cpu'), 0)} / ${fmt(qps(r.wasm, 'wall'), 0)} (ef ${r.wasm.ef})` : '—'} | ${fmt(r.ratio)}× (${fmt(r.ratioWall)}×) | ≥ 0.66× — ${verdict(r.ratio, (x) => x >= 0.66)} |`,
    );
  md.push(
    `| exact top-${K}, ${NQ} queries: faiss IndexFlatIP vs our wasm path (what 'auto' runs without a hardware GPU) | ${fmt(native.faiss_flat.cpu, 2)} / ${fmt(native.faiss_flat.wall, 2)} s | ${fmt(exactWasm.cpu, 2)} / ${fmt(exactWasm.wall, 2)} s | ${fmt(exactRatio, 2)}× (${fmt(exactRatioWall, 2)}×) | ≤ 2× — ${verdict(exactRatio, (x) => x <= 2)} |`,
  );
  md.push(
    `| exact, wasm with the float32 kernel only (no int16 pass) | ${fmt(native.faiss_flat.cpu, 2)} / ${fmt(native.faiss_flat.wall, 2)} s | ${fmt(exactWasmF32.cpu, 2)} / ${fmt(exactWasmF32.wall, 2)} s | ${fmt(exactWasmF32.cpu / native.faiss_flat.cpu, 2)}× | — |`,
  );
  md.push(
    `| exact, our JS reference path (float64 sums) | ${fmt(native.faiss_flat.cpu, 2)} / ${fmt(native.faiss_flat.wall, 2)} s | ${fmt(exactJs.cpu, 2)} / ${fmt(exactJs.wall, 2)} s | ${fmt(exactJsRatio, 1)}× | — |`,
  );
  if (gpu)
    md.push(
      `| exact, WebGPU on SwiftShader (a CPU emulation), ${gpu.queries} queries | — | — / ${fmt(gpu.ms / 1000, 2)} s | — | speed not meaningful here; same ids as JS: ${gpu.sameIdsAsJs ? 'yes' : 'NO'} |`,
    );
  md.push('');
  md.push(
    `Our JS exact top-${K} ids agree with faiss on ${fmt(exactJs.agreementWithFaiss * 100, 2)}% of (query, rank) slots; ` +
      `the wasm path returns the same ids as JS: ${exactWasm.sameAsJs ? 'yes' : 'NO'} (int16 candidates; ${exactWasm.float32Queries} queries needed the float32 pass after a too-close cut, ${exactWasm.cpuFallbackQueries} the JS path; the first call, which also quantizes the vectors into the wasm heap, took ${fmt(exactWasm.firstCallWall, 2)} s wall).`,
  );
  md.push('');
  md.push(
    `Throughput of the full ${NQ} × ${N.toLocaleString('en')} × ${DIM} product, CPU time, one thread: faiss (OpenBLAS sgemm) ${fmt(gflops(native.faiss_flat.cpu), 0)} GFlop/s; ` +
      `wasm float32 kernel ${fmt(gflops(exactWasmF32.cpu), 0)} GFlop/s (${fmt(native.faiss_flat.cpu / exactWasmF32.cpu, 2)}× faiss's rate; same ids as JS: ${exactWasmF32.sameAsJs ? 'yes' : 'NO'}); ` +
      `the int16 path (kernel plus exact rescoring of its candidates) the equivalent of ${fmt(gflops(exactWasm.cpu), 0)} GFlop/s.`,
  );
  md.push('');
  md.push('| memory | value |');
  md.push('| --- | --: |');
  md.push(`| python (faiss + hnswlib + data) max RSS | ${mb(native.max_rss_bytes)} |`);
  md.push(
    `| Chromium, all processes, peak RSS (sampled every 250 ms; includes the 1M run below) | ${mb(browser.peakChromiumRssBytes as number)} |`,
  );
  md.push(
    `| measureUserAgentSpecificMemory after the build (page + worker) | ${mem.uaBytes ? mb(mem.uaBytes) : (mem.error ?? '—')} |`,
  );
  md.push(`| … of which the index worker | ${mb(mem.workerBytes)} |`);
  md.push(
    `| engine wasm heap (wasm memory: graph + its copy of the vectors) | ${mb(browser.wasmHeapBytes as number)} |`,
  );
  md.push(`| vectors (float32) | ${mb(N * DIM * 4)} |`);
  md.push('');
  if (mil) {
    md.push(
      `Exact path at ${MILLION.toLocaleString('en')} × ${DIM} (page main thread, 100 queries, wall-clock ms):`,
    );
    md.push('');
    md.push('```json');
    md.push(JSON.stringify(mil, null, 1));
    md.push('```');
    md.push('');
  }
  md.push('The engine binary (decoded by this script):');
  md.push('');
  md.push(
    `- wasm ${wasm.wasmBytes.toLocaleString('en')} bytes, ${wasm.functions} functions, ${wasm.instructions.toLocaleString('en')} instructions, **${wasm.simdInstructions} SIMD (0xFD) instructions** in ${wasm.simdFunctions} functions; sections: ${wasm.sections.join(', ')}.`,
  );
  md.push(
    `- C \`assert\` compiled in (imports \`__assert_fail\`): ${wasm.assertFailImported ? 'yes' : 'no'}; JS glue built with ASSERTIONS: ${wasm.glueAssertionsBuild ? 'yes' : 'no'} (${wasm.glueAssertCalls} \`assert(\` calls).`,
  );
  md.push(`- emcc flags: \`${wasm.buildFlags}\`.`);
  md.push('');
  md.push(`Total run: ${fmt(results.totalSeconds as number, 0)} s.`);

  mkdirSync(argv.out!, { recursive: true });
  const stem = join(argv.out!, `index-${N}x${DIM}`);
  writeFileSync(`${stem}.md`, md.join('\n') + '\n');
  writeFileSync(
    `${stem}.svg`,
    svgCurve([
      {
        name: 'native hnswlib (python3-hnswlib, SSE), CPU time',
        color: '#1f77b4',
        points: nat.map((p) => ({ ...p, qps: qps(p, 'cpu') })),
      },
      {
        name: 'Loupe wasm SIMD build in Chromium (our worker), CPU time',
        color: '#d62728',
        points: wsm.map((p) => ({ ...p, qps: qps(p, 'cpu') })),
      },
    ]),
  );
  writeFileSync(`${stem}.json`, JSON.stringify(results, null, 1));
  console.log(md.join('\n'));
  log(`wrote ${stem}.{md,svg,json}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
