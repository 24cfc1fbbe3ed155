// Benchmarks the vector index against native anchors, in one run, native and browser alternating:
//   (a) native hnswlib (Debian python3-hnswlib, /usr/bin/python3): build time, QPS and recall@k at
//       each efSearch;
//   (b) faiss IndexFlatIP (python3-faiss on OpenBLAS): exact search time, and the ground truth;
//   (c) Loupe's HNSW engine (the same hnswlib release compiled to wasm with SIMD by
//       scripts/build-wasm.sh) in headless Chromium through our index worker: the same measurements;
//   (d) our exact search in Chromium: wasm int16 (the product path), wasm float32, JS, and WebGPU
//       (SwiftShader here: a CPU emulation, reported for equal answers only);
//   (e) exact search at 1M × dim in the index worker's chunked corpus, beside faiss at 1M;
//   plus memory (the tab's renderer RSS, browser measurement, wasm heap, python max RSS) and an
//   inspection of the engine's wasm binary (SIMD, assertions).
// Honest anchors: installs Debian's OpenBLAS with the native anchors when missing, checks which BLAS
// the Python process actually mapped and its sgemm rate, and refuses (exit 2) to report ratios
// against a reference BLAS. Both sides run one thread (--threads pins the native side). Rounds
// alternate native and browser measurements; ratios are given as median [min–max] over rounds.
// Writes bench-results/index-<n>x<dim>.{md,svg,json}.
//
//   npm run bench:index -- [--n 100000] [--dim 384] [--queries 1000] [--k 10] [--rounds 3]
//     [--threads 1] [--gpu-queries 100] [--million 1000000] [--seed 1]
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import {
  createReadStream,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { clusteredVectors } from '../src/lib/core/retrieval/exact';
import { writeNpy } from '../src/lib/core/shard/vector-files';
import type { IndexHarness } from '../tests/browser/index-harness';
import { harnessCaller } from '../tests/e2e/browser';
import {
  EAGER_MEMORY_ARGS,
  ROOT,
  benchArgs,
  chromiumProcs,
  openBrowser,
  openHarness,
  renderers,
  spread,
  startDevServer,
  type ChromiumProc,
} from './lib/bench-harness';

const PYTHON = '/usr/bin/python3';
const EFS = [16, 32, 64, 128, 256, 512];
const M = 16;
const EF_CONSTRUCTION = 200;
const HNSW_SEED = 100;

const argv = benchArgs({
  n: { type: 'string', default: '100000' },
  dim: { type: 'string', default: '384' },
  queries: { type: 'string', default: '1000' },
  k: { type: 'string', default: '10' },
  'gpu-queries': { type: 'string', default: '100' },
  million: { type: 'string', default: '1000000' },
  rounds: { type: 'string', default: '3' },
  threads: { type: 'string', default: '1' },
  'build-rounds': { type: 'string' },
  seed: { type: 'string', default: '1' },
  out: { type: 'string', default: join(ROOT, 'bench-results') },
});
const N = Number(argv.n);
const DIM = Number(argv.dim);
const NQ = Number(argv.queries);
const K = Number(argv.k);
const GPU_NQ = Math.min(NQ, Number(argv['gpu-queries']));
const MILLION = Number(argv.million);
/** ROUNDS: alternating (native, browser) rounds; ratios are reported as median [min–max] over them. */
const ROUNDS = Math.max(1, Number(argv.rounds));
/** BUILD_ROUNDS: rounds that also rebuild both HNSW graphs (the costly part; default: every round). */
const BUILD_ROUNDS = Math.min(ROUNDS, Number(argv['build-rounds'] ?? ROUNDS));
/** THREADS: the native side is pinned to this; the browser's index worker is one wasm thread. */
const THREADS = Number(argv.threads);
/** PIECE: rows per piece the page fetches and hands to the worker in the 1M phase (12 MiB at 384). */
const PIECE = 8192;
const SEED = Number(argv.seed);

const log = (...a: unknown[]) => console.log(`[${new Date().toISOString().slice(11, 19)}]`, ...a);

// ---------------------------------------------------------------------------------------------
// Native anchors (Python): one long-lived process answering JSON commands, one per line, so that
// native and browser measurements can alternate round by round without reloading anything.

const PY = String.raw`
import ctypes, json, os, re, resource, sys, time
import numpy as np, faiss, hnswlib
THREADS = int(os.environ.get('LOUPE_THREADS', '1'))
faiss.omp_set_num_threads(THREADS)
try:
    import threadpoolctl
    threadpoolctl.threadpool_limits(THREADS)
except ImportError:
    threadpoolctl = None

def send(x):
    sys.stdout.write(json.dumps(x) + '\n'); sys.stdout.flush()

def blas_info():
    # What this process actually mapped (numpy's and faiss's BLAS), not what is installed.
    libs = sorted({l.split()[-1] for l in open('/proc/self/maps') if re.search(r'/lib[^/]*(blas|lapack|mkl|blis)[^/]*\.so', l)})
    out = {'mapped': libs, 'numpy': np.__version__, 'faiss': faiss.__version__}
    if threadpoolctl:
        out['threadpoolctl'] = [{k: p.get(k) for k in ('internal_api', 'filepath', 'version', 'num_threads', 'threading_layer')} for p in threadpoolctl.threadpool_info()]
    threads = None
    for lib in libs:
        try:
            threads = ctypes.CDLL(lib).openblas_get_num_threads()
            out['openblas_threads'] = threads
            break
        except (OSError, AttributeError):
            pass
    # One float32 GEMM of the shape faiss uses (queries x dim times dim x documents), best of 3 by
    # CPU time; the kind of BLAS decides whether a ratio against faiss means anything.
    rng = np.random.default_rng(0)
    A = rng.standard_normal((1024, 384), dtype=np.float32); B = rng.standard_normal((384, 8192), dtype=np.float32)
    best = float('inf')
    for _ in range(3):
        c = time.process_time(); A @ B; best = min(best, time.process_time() - c)
    out['sgemm_gflops'] = 2 * 1024 * 384 * 8192 / best / 1e9
    out['sgemm_shape'] = '1024 x 384 x 8192'
    return out

def timed(fn):
    w = time.perf_counter(); c = time.process_time(); r = fn()
    return r, {'wall': time.perf_counter() - w, 'cpu': time.process_time() - c}

st = {}
send({'ready': True, 'blas': blas_info(), 'threads': THREADS})
for line in sys.stdin:
    a = json.loads(line); op = a['op']
    if op == 'load':
        st['D'] = np.load(a['docs']); st['Q'] = np.load(a['queries'])
        st['flat'] = faiss.IndexFlatIP(st['D'].shape[1]); st['flat'].add(st['D'])
        send({'n': int(st['D'].shape[0])})
    elif op == 'flat':
        (S, I), t = timed(lambda: st['flat'].search(st['Q'], a['k']))
        st['gt'] = I
        send({'timing': t, 'gt': I.tolist() if a.get('gt') else None})
    elif op == 'build':
        D = st['D']; n, dim = D.shape
        p = hnswlib.Index(space='ip', dim=dim)
        p.init_index(max_elements=n, M=a['M'], ef_construction=a['efC'], random_seed=a['seed'])
        p.set_num_threads(THREADS)
        _, t = timed(lambda: p.add_items(D, np.arange(n), num_threads=THREADS))
        st['hnsw'] = p
        send({'timing': t})
    elif op == 'hnsw':
        p = st['hnsw']; k = a['k']; gt = st['gt']; pts = []
        for ef in a['efs']:
            p.set_ef(ef)
            (L, _d), t = timed(lambda: p.knn_query(st['Q'], k=k, num_threads=THREADS))
            rec = float(np.mean([len(set(L[i]) & set(gt[i])) / k for i in range(len(st['Q']))]))
            pts.append({'ef': ef, 'recall': rec, **t})
        send({'points': pts})
    elif op == 'million_load':
        for key in ('D', 'Q', 'flat', 'hnsw', 'gt'): st.pop(key, None)
        n, dim = a['n'], a['dim']
        # The recipe of clusteredVectors (src/lib/core/retrieval/exact.ts: 50 clusters, rank-64 subspaces,
        # noise 1, normalised) with numpy's generator: the JS one takes minutes for 1M rows.
        rng = np.random.default_rng(a['seed']); C, R = 50, 64
        centres = rng.standard_normal((C, dim)); bases = rng.standard_normal((C, dim, R)) / np.sqrt(R)
        def gen(m):
            c = rng.integers(0, C, m); z = rng.standard_normal((m, R))
            x = centres[c] + rng.standard_normal((m, dim))
            for j in range(C):
                idx = np.nonzero(c == j)[0]
                if idx.size: x[idx] += z[idx] @ bases[j].T
            return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype('<f4')
        np.save(a['queries'], gen(a['nq']))
        with open(a['docs'], 'wb') as f:
            for s in range(0, n, 50000): f.write(gen(min(50000, n - s)).tobytes())
        D = np.memmap(a['docs'], dtype='<f4', mode='r', shape=(n, dim))
        f = faiss.IndexFlatIP(dim)
        for s in range(0, n, 100000): f.add(np.ascontiguousarray(D[s:s + 100000]))
        st['mflat'] = f; st['mQ'] = np.load(a['queries'])
        send({'n': int(f.ntotal)})
    elif op == 'million_search':
        (S, I), t = timed(lambda: st['mflat'].search(st['mQ'], a['k']))
        send({'timing': t, 'ids': I.tolist()})
    elif op == 'rss':
        send({'max_rss_bytes': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024})
    elif op == 'quit':
        break
`;

/** Wall-clock and CPU seconds of one measurement. */
interface Timing {
  wall: number;
  cpu: number;
}

interface Point extends Timing {
  ef: number;
  recall: number;
}

/** What the native process reports about the BLAS it loaded. */
interface BlasInfo {
  mapped: string[];
  numpy: string;
  faiss: string;
  threadpoolctl?: { internal_api: string; filepath: string; version: string; num_threads: number }[];
  openblas_threads?: number;
  sgemm_gflops: number;
  sgemm_shape: string;
}

/** SGEMM_MIN_GFLOPS: below this single-thread rate the BLAS is not a tuned one (reference: ~2–3). */
const SGEMM_MIN_GFLOPS = 20;

/** The long-lived Python process: `ask` sends one command and resolves with its one-line answer. */
class Native {
  private proc: ChildProcessWithoutNullStreams;
  private lines: string[] = [];
  private waiting: ((line: string) => void) | null = null;
  private stderr = '';
  private exited: string | null = null;

  constructor(dir: string, threads: number) {
    const script = join(dir, 'native.py');
    writeFileSync(script, PY);
    const t = String(threads);
    // Pinned: BLAS and OpenMP pools of numpy, faiss and hnswlib all get `threads`.
    const env = {
      ...process.env,
      LOUPE_THREADS: t,
      OMP_NUM_THREADS: t,
      OPENBLAS_NUM_THREADS: t,
      MKL_NUM_THREADS: t,
    };
    this.proc = spawn(PYTHON, [script], { env });
    let buf = '';
    this.proc.stdout.setEncoding('utf8');
    this.proc.stdout.on('data', (d: string) => {
      buf += d;
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (this.waiting) {
          const w = this.waiting;
          this.waiting = null;
          w(line);
        } else this.lines.push(line);
      }
    });
    this.proc.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.proc.on('exit', (code) => {
      this.exited = `native process exited (${code}): ${this.stderr.slice(-2000)}`;
      this.waiting?.('');
    });
  }

  private next(): Promise<string> {
    const l = this.lines.shift();
    if (l !== undefined) return Promise.resolve(l);
    if (this.exited) return Promise.reject(new Error(this.exited));
    return new Promise((res) => (this.waiting = res));
  }

  async hello(): Promise<{ blas: BlasInfo; threads: number }> {
    const line = await this.next();
    if (!line) throw new Error(this.exited ?? 'native process gave no answer');
    return JSON.parse(line) as { blas: BlasInfo; threads: number };
  }

  async ask<T>(cmd: Record<string, unknown>): Promise<T> {
    this.proc.stdin.write(JSON.stringify(cmd) + '\n');
    const line = await this.next();
    if (!line) throw new Error(this.exited ?? `native process gave no answer to ${String(cmd.op)}`);
    return JSON.parse(line) as T;
  }

  quit(): void {
    this.proc.stdin.end(JSON.stringify({ op: 'quit' }) + '\n');
  }
}

/**
 * Which BLAS the native side runs on, and whether a ratio against it means anything: an optimised
 * BLAS (OpenBLAS, MKL, BLIS) mapped into the process and a GEMM rate to match. Debian's reference
 * BLAS (the default without libopenblas) is ~50× slower and would flatter every browser ratio.
 */
function judgeBlas(b: BlasInfo): { name: string; ok: boolean; why: string } {
  // LAPACK may come from another alternative than BLAS: only the BLAS libraries decide.
  const blasLibs = b.mapped.filter((p) => /\/lib(c?blas|openblas|mkl|blis)[^/]*$/.test(p));
  const reference = blasLibs.filter((p) => /\/blas\/libc?blas\.so/.test(p));
  const tuned = blasLibs.find((p) => /openblas|mkl|blis/i.test(p));
  const tp = b.threadpoolctl?.find((x) => x.internal_api !== 'openmp');
  const name =
    tuned && !reference.length
      ? `${/openblas/i.test(tuned) ? 'OpenBLAS' : /mkl/i.test(tuned) ? 'MKL' : 'BLIS'}${tp?.version ? ` ${tp.version}` : ''} (${tuned})`
      : `reference BLAS (${reference.join(', ') || blasLibs.join(', ') || 'no BLAS library mapped'})`;
  if (!tuned || reference.length)
    return {
      name,
      ok: false,
      why: `numpy/faiss mapped ${blasLibs.join(', ') || 'no BLAS library'}: Debian's reference BLAS, not an optimised one; install libopenblas0-pthread and check \`update-alternatives --display libblas.so.3-x86_64-linux-gnu\``,
    };
  if (!(b.sgemm_gflops >= SGEMM_MIN_GFLOPS))
    return {
      name,
      ok: false,
      why: `sgemm runs at ${b.sgemm_gflops.toFixed(1)} GFlop/s on one thread (< ${SGEMM_MIN_GFLOPS}): not a tuned BLAS, or the machine is starved`,
    };
  return { name, ok: true, why: '' };
}

// ---------------------------------------------------------------------------------------------
// Chromium's memory and CPU

/** The sum of `f` over this profile's renderer processes (the index worker runs in the page's). */
const rendererSum = (profileDir: string, f: (p: ChromiumProc) => number) =>
  renderers(chromiumProcs(profileDir)).reduce((sum, p) => sum + f(p), 0);

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

/** NATIVE_PACKAGES: the native anchors and the BLAS they must run on (OpenBLAS, pthread build). */
const NATIVE_PACKAGES = [
  'python3-numpy',
  'python3-hnswlib',
  'python3-faiss',
  'libopenblas0-pthread',
  'python3-threadpoolctl',
];

/**
 * Installs the native anchors with apt when any is missing: Debian's python3-hnswlib and
 * python3-faiss, and OpenBLAS, without which numpy and faiss silently run on the reference BLAS.
 */
function ensureNativeAnchors(): void {
  const missing = NATIVE_PACKAGES.filter(
    (p) =>
      !/install ok installed/.test(
        spawnSync('dpkg-query', ['-W', '-f=${Status}', p], { encoding: 'utf8' }).stdout ?? '',
      ),
  );
  if (!missing.length) return;
  log(`installing the native anchors: apt-get install ${missing.join(' ')}`);
  const sudo = process.getuid?.() === 0 ? [] : ['sudo'];
  const run = (args: string[]) => {
    const r = spawnSync(sudo[0] ?? args[0], sudo.length ? args : args.slice(1), {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (r.status !== 0) throw new Error(`${args.join(' ')} failed (${r.status})`);
  };
  run(['apt-get', 'update', '-qq']);
  run(['apt-get', 'install', '-y', '-qq', ...missing]);
  const probe = spawnSync(PYTHON, ['-c', 'import numpy, hnswlib, faiss'], { encoding: 'utf8' });
  if (probe.status !== 0)
    throw new Error(`${PYTHON} still cannot import numpy, hnswlib and faiss: ${probe.stderr}`);
}

/** `update-alternatives --display` of the system's libblas.so.3 (what the dynamic linker picks). */
function blasAlternative(): string {
  const r = spawnSync('update-alternatives', ['--display', 'libblas.so.3-x86_64-linux-gnu'], {
    encoding: 'utf8',
  });
  return (r.stdout || r.stderr || '').trim();
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

// ---------------------------------------------------------------------------------------------

/** "1.23× [1.10–1.40]": median with the min–max range over rounds. */
const fmtSpread = (xs: number[], d = 2, unit = '') => {
  const s = spread(xs);
  return `${fmt(s.median, d)}${unit} [${fmt(s.min, d)}–${fmt(s.max, d)}]`;
};

interface Round {
  load: number;
  /** Builds are measured in the first BUILD_ROUNDS rounds only. */
  native: { build?: Timing; flat: Timing; hnsw: Point[] };
  browser: { build?: Timing; exact: Timing; hnsw: Point[]; exactSameAsJs?: boolean };
}

async function main() {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'loupe-bench-index-'));
  log(`work dir ${dir}`);
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const results: Record<string, unknown> = {
    date: new Date().toISOString(),
    machine: `${cpu}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB`,
    n: N,
    dim: DIM,
    queries: NQ,
    k: K,
    M,
    efConstruction: EF_CONSTRUCTION,
    seed: SEED,
    rounds: ROUNDS,
    threads: THREADS,
    loadAtStart: loadavg(),
  };

  log(`generating ${N} × ${DIM} clustered vectors + ${NQ} queries (seed ${SEED})`);
  const gen = clusteredVectors(DIM, { seed: SEED });
  const docs = gen.generate(N);
  const queries = gen.generate(NQ);
  const docsPath = join(dir, 'docs.npy');
  const queriesPath = join(dir, 'queries.npy');
  const mDocsPath = join(dir, 'million.f32');
  const mQueriesPath = join(dir, 'million-queries.npy');
  writeFileSync(docsPath, writeNpy(docs.data, N, DIM));
  writeFileSync(queriesPath, writeNpy(queries.data, NQ, DIM));

  const wasm = inspectEngineWasm();
  results.wasm = wasm;
  ensureNativeAnchors();
  const alternative = blasAlternative();
  results.blasAlternative = alternative;

  const native = new Native(dir, THREADS);
  try {
    const hello = await native.hello();
    const blas = judgeBlas(hello.blas);
    results.blas = { ...hello.blas, name: blas.name, ok: blas.ok, why: blas.why };
    log(
      `native BLAS: ${blas.name}; sgemm ${hello.blas.sgemm_gflops.toFixed(1)} GFlop/s (${hello.blas.sgemm_shape}, CPU time) on ${hello.blas.openblas_threads ?? THREADS} thread(s)`,
    );
    if (!blas.ok) {
      console.error(`\nbench:index: refusing to report ratios against faiss/numpy: ${blas.why}`);
      console.error(`libblas.so.3 alternative:\n${alternative}\n`);
      process.exitCode = 2;
      return;
    }
    await native.ask({ op: 'load', docs: docsPath, queries: queriesPath });
    // Ground truth (and a warm-up of faiss's code paths, not counted).
    const gt = (await native.ask<{ gt: number[][] }>({ op: 'flat', k: K, gt: true })).gt;

    log('starting Vite and Chromium');
    const { server, base } = await startDevServer(
      // The vectors are streamed from the temp dir at /bench-data/ (a 150 MB body is too big for
      // Playwright's route.fulfill, which sends it through the DevTools protocol).
      [
        {
          name: 'bench-data',
          configureServer(s) {
            s.middlewares.use((req, res, next) => {
              // The 1M phase: the piece of PIECE rows starting at row s of the raw float32 file.
              const piece = /^\/bench-data\/million\/(\d+)$/.exec(req.url ?? '');
              if (piece) {
                res.setHeader('Content-Type', 'application/octet-stream');
                const start = Number(piece[1]) * DIM * 4;
                const end = Math.min(statSync(mDocsPath).size, start + PIECE * DIM * 4);
                res.setHeader('Content-Length', String(end - start));
                createReadStream(mDocsPath, { start, end: end - 1 }).pipe(res);
                return;
              }
              const m = /^\/bench-data\/(docs|queries|million-queries)\.npy$/.exec(req.url ?? '');
              if (!m) return next();
              res.setHeader('Content-Type', 'application/octet-stream');
              const file = m[1] === 'docs' ? docsPath : m[1] === 'queries' ? queriesPath : mQueriesPath;
              res.setHeader('Content-Length', String(statSync(file).size));
              createReadStream(file).pipe(res);
            });
          },
        },
      ],
    );
    // A fresh browser (memory measured eagerly) on a page of its own per phase.
    const { context, profileDir, close } = await openBrowser({ args: EAGER_MEMORY_ARGS, log: (m) => log(m) });
    let peakRss = 0;
    let peakRenderer = 0;
    const sampler = setInterval(() => {
      peakRss = Math.max(
        peakRss,
        chromiumProcs(profileDir).reduce((sum, p) => sum + p.rssBytes, 0),
      );
      peakRenderer = Math.max(
        peakRenderer,
        rendererSum(profileDir, (p) => p.rssBytes),
      );
    }, 250);
    const browser: Record<string, unknown> = {};
    results.browser = browser;
    const rounds: Round[] = [];
    results.rounds = rounds;
    try {
      browser.version =
        context.browser()?.version() ?? (await context.pages()[0]?.evaluate(() => navigator.userAgent));
      const newHarness = async () => {
        const page = await context.newPage();
        page.on('pageerror', (e) => log('page error:', String(e)));
        await openHarness(page, base, 'tests/browser/index-harness.html');
        return page;
      };
      for (const p of context.pages()) await p.close();
      let page = await newHarness();
      browser.loaded = await call(
        page,
        'loadNpy',
        `${base}/bench-data/docs.npy`,
        `${base}/bench-data/queries.npy`,
      );

      /** Runs a harness call, returning its result and the renderer CPU seconds it took. */
      const cpuOf = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
        const c0 = rendererSum(profileDir, (p) => p.cpuSeconds);
        const r = await fn();
        return [r, rendererSum(profileDir, (p) => p.cpuSeconds) - c0];
      };

      // Warm-up, not counted: the first wasm exact call also quantizes the vectors into the heap,
      // and JIT tiers settle.
      const warm = await call(page, 'build', {
        key: 'bench',
        space: 'ip',
        M,
        efConstruction: 16,
        seed: HNSW_SEED,
        force: true,
      });
      if (!warm.ok) throw new Error(`build failed: ${warm.message}`);
      const jsRef = await call(page, 'exact', K, { backend: 'js' });
      if (!jsRef.ok) throw new Error(jsRef.message);
      browser.exactJs = {
        wall: jsRef.ms / 1000,
        agreementWithFaiss: recallVs(jsRef.indices, jsRef.counts, K, gt),
      };

      for (let r = 0; r < ROUNDS; r++) {
        const load = loadavg()[0];
        log(`round ${r + 1}/${ROUNDS} (load ${load.toFixed(2)}): native`);
        const building = r < BUILD_ROUNDS;
        const nBuild = building
          ? (await native.ask<{ timing: Timing }>({ op: 'build', M, efC: EF_CONSTRUCTION, seed: HNSW_SEED }))
              .timing
          : undefined;
        const nHnsw = (await native.ask<{ points: Point[] }>({ op: 'hnsw', k: K, efs: EFS })).points;
        const nFlat = (await native.ask<{ timing: Timing }>({ op: 'flat', k: K })).timing;
        log(`round ${r + 1}/${ROUNDS}: browser`);
        const [b, bCpu] = building
          ? await cpuOf(() =>
              call(page, 'build', {
                key: 'bench',
                space: 'ip',
                M,
                efConstruction: EF_CONSTRUCTION,
                seed: HNSW_SEED,
                force: true,
              }),
            )
          : [undefined, NaN];
        if (b && !b.ok) throw new Error(`build failed: ${b.message}`);
        const bHnsw: Point[] = [];
        for (const ef of EFS) {
          const [s, c] = await cpuOf(() => call(page, 'search', K, ef, { rescore: false }));
          bHnsw.push({ ef, recall: recallVs(s.indices, s.counts, K, gt), wall: s.ms / 1000, cpu: c });
        }
        // Uncounted: the first wasm exact call after a build quantizes the vectors into the heap.
        await call(page, 'exact', K, { backend: 'wasm', nq: 1 });
        const [e, eCpu] = await cpuOf(() => call(page, 'exact', K, { backend: 'wasm' }));
        if (!e.ok) throw new Error(e.message);
        const round: Round = {
          load,
          native: { build: nBuild, flat: nFlat, hnsw: nHnsw },
          browser: {
            build: b?.ok ? { wall: b.timings.addMs! / 1000, cpu: bCpu } : undefined,
            exact: { wall: e.ms / 1000, cpu: eCpu },
            hnsw: bHnsw,
            exactSameAsJs: e.indices.every((x, i) => x === jsRef.indices[i]),
          },
        };
        rounds.push(round);
        log(
          `round ${r + 1}: build ${fmt(nBuild?.cpu, 1)} vs ${fmt(bCpu, 1)} s CPU (${fmt(bCpu / (nBuild?.cpu ?? NaN))}×); exact ${nFlat.cpu.toFixed(2)} vs ${eCpu.toFixed(2)} s CPU (${(eCpu / nFlat.cpu).toFixed(2)}×)`,
        );
      }
      browser.wasmHeapBytes = await call(page, 'wasmHeapBytes');
      browser.memoryAfterBuild = await call(page, 'memory');

      log('wasm exact with the float32 kernel only');
      const [f, fCpu] = await cpuOf(() => call(page, 'exact', K, { backend: 'wasm', wasmKernel: 'float32' }));
      if (!f.ok) throw new Error(f.message);
      browser.exactWasmF32 = {
        wall: f.ms / 1000,
        cpu: fCpu,
        sameAsJs: f.indices.every((x, i) => x === jsRef.indices[i]),
      };

      log(`exact search in Chromium: WebGPU (${GPU_NQ} queries)`);
      const probe = await call(page, 'gpuProbe');
      browser.gpuProbe = probe;
      if (probe.ok && GPU_NQ > 0) {
        const g = await call(page, 'exact', K, { backend: 'webgpu', nq: GPU_NQ });
        if (g.ok) {
          const same = g.indices.every((x, i) => x === jsRef.indices[i]);
          browser.exactWebGpu = { ms: g.ms, queries: GPU_NQ, sameIdsAsJs: same };
        } else browser.exactWebGpu = { error: g.message };
      }
      await call(page, 'stop');
      await page.close();

      if (MILLION > 0) {
        const MQ = 100;
        log(`1M phase: ${MILLION.toLocaleString('en')} × ${DIM}, ${MQ} queries, seed ${SEED + 1}`);
        // Generated once, by the native process (numpy; the same recipe as clusteredVectors), to a
        // raw float32 file: faiss reads it, the page fetches it piece by piece.
        const tg = performance.now();
        await native.ask({
          op: 'million_load',
          docs: mDocsPath,
          queries: mQueriesPath,
          n: MILLION,
          dim: DIM,
          nq: MQ,
          seed: SEED + 1,
        });
        results.millionGenerateSeconds = (performance.now() - tg) / 1000;
        log(
          `1M generated and loaded into faiss in ${(results.millionGenerateSeconds as number).toFixed(0)} s`,
        );
        // A fresh page (and renderer): the tab's memory below is this phase's alone.
        await new Promise((r) => setTimeout(r, 2000));
        page = await newHarness();
        peakRenderer = 0;
        browser.millionRssBaseline = rendererSum(profileDir, (p) => p.rssBytes);
        const loaded = await call(page, 'millionLoad', `${base}/bench-data`, MILLION, DIM, K, {
          piece: PIECE,
          sample: 10,
        });
        browser.millionLoad = loaded;
        browser.millionRssAfterLoad = rendererSum(profileDir, (p) => p.rssBytes);
        log(
          `renderer RSS: ${mb(browser.millionRssBaseline as number)} before, ${mb(browser.millionRssAfterLoad as number)} after loading`,
        );
        log('1M loaded:', JSON.stringify(loaded.info));
        const mRounds: {
          load: number;
          faiss: Timing;
          worker: Timing;
          sameIdsAsJs: boolean;
          sameScoresAsJs: boolean;
          faissAgreement: number;
          stats: unknown;
          ticks: number;
        }[] = [];
        browser.million = mRounds;
        for (let r = 0; r < ROUNDS; r++) {
          const load = loadavg()[0];
          const fr = await native.ask<{ timing: Timing; ids: number[][] }>({ op: 'million_search', k: K });
          const [w, wCpu] = await cpuOf(() => call(page, 'millionSearch'));
          mRounds.push({
            load,
            faiss: fr.timing,
            worker: { wall: w.wallMs / 1000, cpu: wCpu },
            sameIdsAsJs: w.sameIdsAsJs,
            sameScoresAsJs: w.sameScoresAsJs,
            faissAgreement: recallVs(w.indices, Array(MQ).fill(K), K, fr.ids),
            stats: w.stats,
            ticks: w.progressTicks,
          });
          log(
            `1M round ${r + 1}: faiss ${fr.timing.cpu.toFixed(2)} s CPU; worker ${(w.wallMs / 1000).toFixed(2)} s wall, ${wCpu.toFixed(2)} s CPU; same as JS ${w.sameIdsAsJs}`,
          );
        }
        browser.millionMemory = await call(page, 'memory');
        browser.millionInfo = await call(page, 'exactCorpusInfo');
        browser.millionPeakRendererRss = peakRenderer;
        browser.millionRendererHwm = rendererSum(profileDir, (p) => p.hwmBytes);
      }
    } catch (e) {
      log('browser phase failed:', e);
      throw e;
    } finally {
      clearInterval(sampler);
      browser.peakChromiumRssBytes = peakRss;
      await close();
      await server.close().catch(() => undefined);
    }
    results.nativeRss = await native.ask<{ max_rss_bytes: number }>({ op: 'rss' });
  } finally {
    native.quit();
    rmSync(dir, { recursive: true, force: true });
  }
  results.totalSeconds = (Date.now() - started) / 1000;
  results.loadAtEnd = loadavg();
  report(results);
}

/** Writes bench-results/index-<n>x<dim>.{md,svg,json} and prints the markdown. */
function report(results: Record<string, unknown>) {
  const rounds = results.rounds as Round[];
  const browser = results.browser as Record<string, unknown>;
  const blas = results.blas as BlasInfo & { name: string };
  const qps = (p: Point, t: keyof Timing) => NQ / p[t];
  const medPoint = (pts: Point[][], i: number): Point => ({
    ef: pts[0][i].ef,
    recall: pts[0][i].recall,
    wall: spread(pts.map((p) => p[i].wall)).median,
    cpu: spread(pts.map((p) => p[i].cpu)).median,
  });
  const nat = EFS.map((_, i) =>
    medPoint(
      rounds.map((r) => r.native.hnsw),
      i,
    ),
  );
  const wsm = EFS.map((_, i) =>
    medPoint(
      rounds.map((r) => r.browser.hnsw),
      i,
    ),
  );
  const ratioAt = (target: number) => {
    const e = wsm.find((p) => p.recall >= target);
    const nn = nat.find((p) => p.recall >= target);
    const per = rounds.map((r) => {
      const a = r.browser.hnsw.find((p) => p.recall >= target);
      const b = r.native.hnsw.find((p) => p.recall >= target);
      return a && b ? qps(a, 'cpu') / qps(b, 'cpu') : NaN;
    });
    return { wasm: e, native: nn, per };
  };
  const built = rounds.filter((r) => r.browser.build && r.native.build);
  const buildR = built.map((r) => r.browser.build!.cpu / r.native.build!.cpu);
  const exactR = rounds.map((r) => r.browser.exact.cpu / r.native.flat.cpu);
  const r95 = ratioAt(0.95);
  const r99 = ratioAt(0.99);
  const gflops = (s: number) => (2 * NQ * N * DIM) / s / 1e9;
  const verdict = (xs: number[], pass: (x: number) => boolean) => {
    const s = spread(xs);
    if (!Number.isFinite(s.median)) return '—';
    const all = pass(s.min) && pass(s.max);
    const none = !pass(s.min) && !pass(s.max);
    return pass(s.median)
      ? all
        ? 'met'
        : 'met at the median, not in every round'
      : none
        ? 'missed'
        : 'missed at the median';
  };
  const la = (x: number[]) => x.map((v) => v.toFixed(1)).join(' / ');
  const md: string[] = [];
  md.push(
    `## Vector index: ${N.toLocaleString('en')} × ${DIM}, ${NQ} queries, k=${K} (${results.date as string})`,
  );
  md.push('');
  md.push('```sh');
  md.push(
    `npm run bench:index -- --n ${N} --dim ${DIM} --queries ${NQ} --rounds ${ROUNDS}${BUILD_ROUNDS < ROUNDS ? ` --build-rounds ${BUILD_ROUNDS}` : ''}`,
  );
  md.push('```');
  md.push('');
  md.push(
    `Machine: ${results.machine as string}. Load average (1/5/15 min): ${la(results.loadAtStart as number[])} at the start, ${la(results.loadAtEnd as number[])} at the end; per round below. ` +
      `Seeded clustered vectors (50 clusters, rank-64 subspaces, noise 1, normalised; seed ${SEED}); inner product. HNSW M=${M}, efConstruction=${EF_CONSTRUCTION}, seed ${HNSW_SEED}.`,
  );
  md.push('');
  md.push(
    `**Threads: ${THREADS} on both sides.** The browser's index worker is one wasm thread (no wasm threads in the engine); the native side is pinned to the same: ` +
      `OMP/OPENBLAS/MKL_NUM_THREADS=${THREADS}, faiss.omp_set_num_threads(${THREADS}), threadpoolctl limits, hnswlib num_threads=${THREADS}` +
      `${blas.openblas_threads !== undefined ? `; OpenBLAS reports ${blas.openblas_threads} thread(s)` : ''}.`,
  );
  md.push('');
  md.push(
    `**Native BLAS (checked, not assumed):** ${blas.name}; numpy ${blas.numpy}, faiss ${blas.faiss}; sgemm ${blas.sgemm_shape} at **${fmt(blas.sgemm_gflops, 1)} GFlop/s** (one thread, CPU time, best of 3). ` +
      `Libraries mapped into the Python process: ${blas.mapped.map((m) => `\`${m}\``).join(', ')}. ` +
      `\`update-alternatives --display libblas.so.3-x86_64-linux-gnu\`: "${((results.blasAlternative as string).split('\n').find((l) => /currently points/.test(l)) ?? '').trim()}". ` +
      `The script refuses (exit 2, no report) when the process maps no optimised BLAS or sgemm is under ${SGEMM_MIN_GFLOPS} GFlop/s.`,
  );
  md.push('');
  md.push(
    `**Alternating rounds:** ${ROUNDS} rounds of (native: hnswlib build, search sweep, faiss flat; then browser: the same in our index worker); the builds in the first ${BUILD_ROUNDS} round(s) (\`--build-rounds\`). ` +
      `Ratios are per round on CPU time (python: process_time; browser: the renderer that hosts the worker, from /proc), reported as **median [min–max]** over rounds: ` +
      `a disturbed round shows as spread.`,
  );
  md.push('');
  md.push(
    '| round | load (1 min) | native build CPU | wasm build CPU | build ratio | faiss flat CPU | wasm exact CPU | exact ratio | same ids as JS |',
  );
  md.push('| --: | --: | --: | --: | --: | --: | --: | --: | --- |');
  rounds.forEach((r, i) =>
    md.push(
      `| ${i + 1} | ${fmt(r.load)} | ${r.native.build ? `${fmt(r.native.build.cpu, 1)} s` : '—'} | ${r.browser.build ? `${fmt(r.browser.build.cpu, 1)} s` : '—'} | ${r.native.build && r.browser.build ? `${fmt(r.browser.build.cpu / r.native.build.cpu)}×` : '—'} | ${fmt(r.native.flat.cpu, 2)} s | ${fmt(r.browser.exact.cpu, 2)} s | ${fmt(exactR[i])}× | ${r.browser.exactSameAsJs ? 'yes' : 'NO'} |`,
    ),
  );
  md.push('');
  md.push(
    '| ef | native recall@10 | native QPS (CPU, median) | wasm recall@10 | wasm QPS (CPU, median) | wasm / native, median [min–max] |',
  );
  md.push('| --: | --: | --: | --: | --: | --: |');
  EFS.forEach((ef, i) =>
    md.push(
      `| ${ef} | ${fmt(nat[i].recall, 4)} | ${fmt(qps(nat[i], 'cpu'), 0)} | ${fmt(wsm[i].recall, 4)} | ${fmt(qps(wsm[i], 'cpu'), 0)} | ${fmtSpread(rounds.map((r) => qps(r.browser.hnsw[i], 'cpu') / qps(r.native.hnsw[i], 'cpu')))} |`,
    ),
  );
  md.push('');
  const fl = spread(rounds.map((r) => r.native.flat.cpu)).median;
  md.push(
    '| measure | native CPU, median [min–max] | browser CPU, median [min–max] | ratio, median [min–max] | target |',
  );
  md.push('| --- | --: | --: | --: | --- |');
  md.push(
    `| HNSW build (${built.length} round${built.length === 1 ? '' : 's'}) | ${fmtSpread(
      built.map((r) => r.native.build!.cpu),
      1,
      ' s',
    )} | ${fmtSpread(
      built.map((r) => r.browser.build!.cpu),
      1,
      ' s',
    )} | ${fmtSpread(buildR)} | ≤ 1.5× — ${verdict(buildR, (x) => x <= 1.5)} |`,
  );
  for (const [label, r] of [
    ['0.95', r95],
    ['0.99', r99],
  ] as const)
    md.push(
      `| QPS at recall@10 ≥ ${label} | ${r.native ? `${fmt(qps(r.native, 'cpu'), 0)} QPS (ef ${r.native.ef})` : '—'} | ${r.wasm ? `${fmt(qps(r.wasm, 'cpu'), 0)} QPS (ef ${r.wasm.ef})` : '—'} | ${fmtSpread(r.per)} | ≥ 0.66× — ${verdict(r.per, (x) => x >= 0.66)} |`,
    );
  md.push(
    `| exact top-${K}, ${NQ} queries: faiss IndexFlatIP (${blas.name.split(' (')[0]}) vs our wasm int16 path | ${fmtSpread(
      rounds.map((r) => r.native.flat.cpu),
      2,
      ' s',
    )} | ${fmtSpread(
      rounds.map((r) => r.browser.exact.cpu),
      2,
      ' s',
    )} | ${fmtSpread(exactR)} | ≤ 2× — ${verdict(exactR, (x) => x <= 2)} |`,
  );
  const f32 = browser.exactWasmF32 as Timing & { sameAsJs: boolean };
  const js = browser.exactJs as { wall: number; agreementWithFaiss: number };
  md.push(
    `| exact, wasm float32 kernel only (once) | ${fmt(fl, 2)} s | ${fmt(f32.cpu, 2)} s | ${fmt(f32.cpu / fl)}× | — |`,
  );
  md.push(
    `| exact, our JS reference path (once, wall) | ${fmt(fl, 2)} s | ${fmt(js.wall, 2)} s wall | ${fmt(js.wall / fl, 1)}× | — |`,
  );
  const gpu = browser.exactWebGpu as { ms: number; queries: number; sameIdsAsJs: boolean } | undefined;
  if (gpu?.ms)
    md.push(
      `| exact, WebGPU on SwiftShader (a CPU emulation), ${gpu.queries} queries | — | ${fmt(gpu.ms / 1000, 2)} s wall | — | speed not meaningful; same ids as JS: ${gpu.sameIdsAsJs ? 'yes' : 'NO'} |`,
    );
  md.push('');
  md.push(
    `Throughput of the ${NQ} × ${N.toLocaleString('en')} × ${DIM} product (CPU time, one thread, medians): faiss ${fmt(gflops(fl), 0)} GFlop/s (its sgemm probe: ${fmt(blas.sgemm_gflops, 0)}); ` +
      `wasm float32 kernel ${fmt(gflops(f32.cpu), 0)} GFlop/s; the int16 path (kernel + exact rescoring) the equivalent of ${fmt(gflops(spread(rounds.map((r) => r.browser.exact.cpu)).median), 0)} GFlop/s. ` +
      `JS exact ids agree with faiss on ${fmt(js.agreementWithFaiss * 100, 2)}% of (query, rank) slots.`,
  );
  md.push('');
  const mem = (browser.memoryAfterBuild ?? {}) as { uaBytes?: number; workerBytes?: number; error?: string };
  md.push('| memory (100k phase) | value |');
  md.push('| --- | --: |');
  md.push(
    `| python (faiss + hnswlib + data; max RSS of the whole run, 1M phase included) | ${mb((results.nativeRss as { max_rss_bytes: number }).max_rss_bytes)} |`,
  );
  md.push(
    `| measureUserAgentSpecificMemory after the builds (page + worker) | ${mem.uaBytes ? mb(mem.uaBytes) : (mem.error ?? '—')} |`,
  );
  md.push(
    `| engine wasm heap (graph + its copy of the vectors + int16 codes) | ${mb(browser.wasmHeapBytes as number)} |`,
  );
  md.push(
    `| Chromium, all processes, peak RSS over the whole run | ${mb(browser.peakChromiumRssBytes as number)} |`,
  );
  md.push('');
  const mr = browser.million as
    | {
        load: number;
        faiss: Timing;
        worker: Timing;
        sameIdsAsJs: boolean;
        sameScoresAsJs: boolean;
        faissAgreement: number;
        stats: { chunks: number; chunkRows: number; rescored: number; chunkRescans: number; store: string };
        ticks: number;
      }[]
    | undefined;
  if (mr?.length) {
    const ml = browser.millionLoad as {
      fetchMs: number;
      referenceMs: number;
      addMs: number;
      sample: number;
    };
    const mi = browser.millionInfo as {
      codeBytes: number;
      storeMemoryBytes: number;
      wasmHeapBytes: number;
      store: string;
      chunkRows: number;
    };
    const rss = browser.millionPeakRendererRss as number;
    const wall = mr.map((r) => r.worker.wall);
    md.push(
      `### Exact search at ${MILLION.toLocaleString('en')} × ${DIM}, 100 queries, k=${K}, in the index worker`,
    );
    md.push('');
    md.push(
      `The chunked exact corpus (workers/index/chunked-exact.ts): int16 codes in wasm chunks of ${mi.chunkRows.toLocaleString('en')} rows, float32 rows in ${mi.store === 'opfs' ? 'an OPFS file (read back only for candidates)' : 'worker memory'}; ` +
        `clustered vectors (clusteredVectors' recipe drawn with numpy, seed ${SEED + 1}) generated once by the native process, fetched by the page in pieces of ${PIECE.toLocaleString('en')} rows and handed to the worker (fetching ${fmt(ml.fetchMs / 1000, 1)} s, handing over + quantizing + writing the rows to OPFS ${fmt(ml.addMs / 1000, 1)} s). ` +
        `Rounds alternate faiss IndexFlatIP (${blas.name.split(' (')[0]}, ${THREADS} thread) and the worker.`,
    );
    md.push('');
    md.push(
      '| round | load (1 min) | faiss CPU | worker wall | worker CPU | ratio CPU | same ids + scores as JS (first 10 queries) | agreement with faiss |',
    );
    md.push('| --: | --: | --: | --: | --: | --: | --- | --: |');
    mr.forEach((r, i) =>
      md.push(
        `| ${i + 1} | ${fmt(r.load)} | ${fmt(r.faiss.cpu, 2)} s | ${fmt(r.worker.wall, 2)} s | ${fmt(r.worker.cpu, 2)} s | ${fmt(r.worker.cpu / r.faiss.cpu, 1)}× | ${r.sameIdsAsJs && r.sameScoresAsJs ? 'yes' : 'NO'} | ${fmt(r.faissAgreement * 100, 2)}% |`,
      ),
    );
    md.push('');
    md.push('| 1M measure | value | target |');
    md.push('| --- | --: | --- |');
    md.push(
      `| 100 queries, wall, median [min–max] | ${fmtSpread(wall, 2, ' s')} | ≤ 10 s — ${verdict(wall, (x) => x <= 10)} |`,
    );
    md.push(
      `| worker / faiss CPU, median [min–max] | ${fmtSpread(
        mr.map((r) => r.worker.cpu / r.faiss.cpu),
        1,
      )} | — |`,
    );
    md.push(
      `| tab memory: peak RSS of the page's renderer process (page + index worker), sampled every 250 ms | ${mb(rss)} | ≤ 1 GB — ${rss <= 2 ** 30 ? 'met' : 'missed'} |`,
    );
    md.push(
      `| … renderer VmHWM (the process's own peak) | ${mb(browser.millionRendererHwm as number)} | — |`,
    );
    md.push(
      `| wasm heap / of which int16 codes + scales | ${mb(mi.wasmHeapBytes)} / ${mb(mi.codeBytes)} | — |`,
    );
    md.push(`| float32 rows in worker memory | ${mb(mi.storeMemoryBytes)} (${mi.store}) | — |`);
    const st = mr.at(-1)!.stats;
    md.push('');
    md.push(
      `Per search: ${st.chunks} chunks, ${st.rescored.toLocaleString('en')} candidates rescored exactly, ${st.chunkRescans} chunk rescans, ${mr.at(-1)!.ticks} progress ticks. ` +
        `The JS reference for the first ${ml.sample} queries (core exactSearch piece by piece on the page, ${fmt(ml.referenceMs / 1000, 1)} s) equals the worker's ids and scores: ${mr.every((r) => r.sameIdsAsJs && r.sameScoresAsJs) ? 'yes' : 'NO'}.`,
    );
    md.push('');
  }
  md.push('The engine binary (decoded by this script):');
  md.push('');
  const wasm = results.wasm as WasmInspection;
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
        name: 'native hnswlib (python3-hnswlib, SSE), CPU time, median',
        color: '#1f77b4',
        points: nat.map((p) => ({ ...p, qps: qps(p, 'cpu') })),
      },
      {
        name: 'Loupe wasm SIMD build in Chromium (our worker), CPU time, median',
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
