// The one harness every bench script runs on: its arguments, the servers (Vite dev server for the
// tests/browser/*-harness.html pages, the production build with preview or a plain static host), a
// fresh Chromium and its settle (/proc readings and the memory sampler: bench-procs.ts; JS heaps over
// CDP: bench-heaps.ts; both re-exported here), a query in the app's Search view, the CPU probe,
// medians and quantiles, alternating rounds (also against a git revision: `--against REV`), the
// run's header line and the call into the BENCHMARKS.md writer. Each bench keeps what it measures.
import { execFileSync, execSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { chromium, type Page } from 'playwright-core';
import { build, createServer, preview, type PluginOption, type ViteDevServer } from 'vite';
import type { BenchHarness } from '../../tests/browser/bench-harness';
import { median, samplePercentile } from '../../src/lib/core/eval/stats';
import { CHROMIUM, CHROMIUM_ARGS, harnessCaller } from '../../tests/e2e/browser';
import { buildSite, serveStatic, type StaticServer } from '../../tests/e2e/static-server';
import { writeBenchmarksSection } from './benchmarks-md';
import { chromiumProcs, settleBrowser } from './bench-procs';

export * from './bench-procs';
export * from './bench-heaps';

export { median };
export const ROOT = resolve(import.meta.dirname, '../..');

// ---- arguments -----------------------------------------------------------------------------------
type Options = NonNullable<ParseArgsConfig['options']>;
/** Flags every bench that builds the site and reports takes. */
const COMMON = {
  /** Reuse the site built last time (only right after a build: it may be stale otherwise). */
  'no-build': { type: 'boolean', default: false },
  /** Replace the bench's section of BENCHMARKS.md with this run's. */
  'write-benchmarks': { type: 'boolean', default: false },
} as const satisfies Options;

/** The bench's own options and the common ones, parsed strictly (an unknown flag is an error). */
export function benchArgs<const T extends Options>(options: T) {
  return parseArgs({ options: { ...COMMON, ...options }, strict: true }).values;
}

/** Says what is wrong with the arguments and exits 2 (invalid input, not a crash). */
export function usage(message: string): never {
  console.error(message);
  process.exit(2);
}

/**
 * Exits 2 naming the generated test models in `ids` that are not in models/generated, with the command
 * that makes them (setup generates the `ci` set; some benches need the `bench` set's larger shapes).
 */
export async function requireGenerated(ids: string[]): Promise<void> {
  // Imported here: native-encoder loads onnxruntime-node, which the other benches do not need.
  const { localName, registrySpec } = await import('./native-encoder');
  const missing = ids.filter((id) => !existsSync(join(localName(registrySpec(id)), 'onnx')));
  if (missing.length)
    usage(
      `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not generated: ` +
        'npx tsx scripts/generate-models.ts --set bench',
    );
}

/** `--name VALUE` as a whole number ≥ `min`, or exit 2 saying so. */
export function whole(name: string, value: string | undefined, min = 1): number {
  const n = Number(value);
  if (value === undefined || !Number.isInteger(n) || n < min)
    usage(`--${name} must be a whole number ≥ ${min}, got ${JSON.stringify(value)}`);
  return n;
}

// ---- numbers -------------------------------------------------------------------------------------
/** The q-quantile (0–1) of `xs`. */
export const quantile = (xs: number[], q: number): number => samplePercentile(xs, q * 100);
export const sec = (ms: number) => (ms / 1000).toFixed(2);
/** The median and the range of the finite values of `xs` (NaN for none). */
export function spread(xs: number[]): { median: number; min: number; max: number } {
  const s = xs.filter(Number.isFinite);
  return s.length
    ? { median: median(s), min: Math.min(...s), max: Math.max(...s) }
    : { median: NaN, min: NaN, max: NaN };
}
/** "1.23 (1.10–1.40)": the median and the range of `xs`, each written by `f`. */
export const cell = (xs: number[], f: (x: number) => string = sec) => {
  const s = spread(xs);
  return `${f(s.median)} (${f(s.min)}–${f(s.max)})`;
};

/** Wall and CPU (user + system) milliseconds of `f`. */
export async function timed<T>(
  f: () => T | Promise<T>,
): Promise<{ value: T; wallMs: number; cpuMs: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await f();
  const c = process.cpuUsage(c0);
  return { value, wallMs: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 };
}

// ---- servers -------------------------------------------------------------------------------------
/** The Vite dev server (the harness pages are not part of the build) on 127.0.0.1, with `plugins`. */
export async function startDevServer(
  plugins: PluginOption[] = [],
): Promise<{ server: ViteDevServer; base: string }> {
  const server = await createServer({
    configFile: join(ROOT, 'vite.config.ts'),
    root: ROOT,
    // No HMR and no file watching: other people editing the tree must not reload the page mid-run.
    server: { port: 0, host: '127.0.0.1', strictPort: false, hmr: false, watch: null },
    logLevel: 'warn',
    plugins,
  });
  await server.listen();
  return { server, base: baseOf(server.httpServer) };
}

const baseOf = (http: { address(): unknown } | null) => {
  const address = http?.address() as { port: number } | string | null;
  if (!address || typeof address === 'string') throw new Error('the server did not bind a TCP port');
  return `http://127.0.0.1:${address.port}`;
};

/**
 * The production build (`vite build` into dist/, skipped with `noBuild` when one is there) served by
 * `vite preview` (cross-origin isolated; generated-shards/ and LOUPE_DATA_DIR's shards beside it).
 * `port`: a fixed one (a kept profile finds its IndexedDB only on the same origin); `previewEnv`:
 * set after the build, for the preview server only.
 */
export async function sitePreview(
  opts: { noBuild?: boolean; port?: number; previewEnv?: Record<string, string> } = {},
) {
  if (!opts.noBuild || !existsSync(join(ROOT, 'dist/index.html'))) {
    console.log('building the site…');
    await build({ root: ROOT, logLevel: 'warn' });
  }
  Object.assign(process.env, opts.previewEnv);
  const server = await preview({
    root: ROOT,
    preview: { port: opts.port ?? 0, strictPort: !!opts.port, host: '127.0.0.1' },
    logLevel: 'warn',
  });
  return { base: baseOf(server.httpServer), close: () => server.close() };
}

/** Where the static benches build the site (a test build: the generated models in it). */
export const STATIC_DIST = join(ROOT, '.test-results/bench-dist');
/** The sub-path a static host serves the site under (no COOP/COEP: the service worker isolates). */
export const PREFIX = '/course/loupe/';

/** The test build in STATIC_DIST (unless `noBuild` finds one) on a plain static host under PREFIX. */
export async function staticSite(noBuild = false): Promise<StaticServer> {
  if (!noBuild || !existsSync(join(STATIC_DIST, 'index.html'))) {
    console.log('building the site…');
    buildSite(STATIC_DIST);
  }
  return serveStatic(STATIC_DIST, PREFIX);
}

// ---- the browser ---------------------------------------------------------------------------------
export type BrowserSession = Awaited<ReturnType<typeof openBrowser>>;

/**
 * Chromium on a fresh profile (or `profileDir`, kept), its first page reporting errors to `log`.
 * `settle`: waits for the browser's own start-up work first (settleBrowser). `harness`: opens
 * the harness page at `path` on `base` and waits for it to say ready.
 */
export async function openBrowser(
  opts: {
    args?: string[];
    profileDir?: string;
    acceptDownloads?: boolean;
    settle?: boolean;
    harness?: { base: string; path: string };
    log?: (s: string) => void;
  } = {},
) {
  const log = opts.log ?? ((s: string) => console.error(s));
  const profileDir = opts.profileDir ?? mkdtempSync(join(tmpdir(), 'loupe-bench-'));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    args: opts.args ?? CHROMIUM_ARGS,
    headless: true,
    viewport: { width: 1280, height: 900 },
    acceptDownloads: opts.acceptDownloads,
  });
  // The dev server compiles a harness page on its first load: slow on a busy 2-core machine.
  context.setDefaultNavigationTimeout(120_000);
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('pageerror', (e) => log(`page error: ${String(e)}`));
  page.on('crash', () => log('page crashed'));
  if (opts.log)
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning')
        log(`console ${m.type()}: ${m.text()} (${m.location().url || '?'})`);
    });
  // A visit happens in a browser that is already running: its start-up work is not the page's.
  const settled = opts.settle ? await settleBrowser(profileDir) : undefined;
  if (opts.harness) await openHarness(page, opts.harness.base, opts.harness.path);
  return {
    context,
    page,
    profileDir,
    settled,
    /** The browser process tree, read from /proc. */
    procs: () => chromiumProcs(profileDir),
    /** Closes the browser and deletes its profile (unless it was given). */
    close: async () => {
      await context.close().catch(() => undefined);
      if (!opts.profileDir) rmSync(profileDir, { recursive: true, force: true });
    },
  };
}

/** Opens a harness page (the encoder's by default) and waits until it says ready. */
export async function openHarness(page: Page, base: string, path = 'tests/browser/bench-harness.html') {
  await page.goto(`${base}/${path}`);
  await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
}

/** Chromium's flags with measureUserAgentSpecificMemory answering at once (not after a GC, up to 20 s). */
export const EAGER_MEMORY_ARGS = [...CHROMIUM_ARGS, '--enable-blink-features=ForceEagerMeasureMemory'];

/** A fresh browser on the encoder's harness page, measuring memory eagerly. */
export const launchHarness = (base: string, log: (s: string) => void) =>
  openBrowser({
    args: EAGER_MEMORY_ARGS,
    harness: { base, path: 'tests/browser/bench-harness.html' },
    log,
  });

/** Calls `window.benchHarness[fn](...args)` in the page. */
export const call = harnessCaller<BenchHarness>('benchHarness');

/** The page's performance measures whose names start with `prefix`, ms summed by the rest of the name. */
export function pageMeasures(page: Page, prefix: string): Promise<Record<string, number>> {
  return page.evaluate((pre) => {
    const out: Record<string, number> = {};
    for (const e of performance.getEntriesByType('measure'))
      if (e.name.startsWith(pre))
        out[e.name.slice(pre.length)] = (out[e.name.slice(pre.length)] ?? 0) + e.duration;
    return out;
  }, prefix);
}

/**
 * The app's Search view as a visitor uses it; times are Date.now(). `url`: opens it and waits until the
 * app is ready (or idle, with `idle`) and shows the search box (`opened` → `ready`). `search`: types
 * its `text`, waits `pauseMs`, presses Search (`submitted`; `enter`: Enter in the box) and waits until
 * the results are painted (`answered`): a new loupe:query measure, or `until` (a selector) is there.
 * An error the view shows instead is thrown.
 */
export async function searchApp(
  page: Page,
  opts: {
    url?: string;
    idle?: boolean;
    search?: { text?: string; pauseMs?: number; enter?: boolean; until?: string };
  },
) {
  const phases = opts.idle ? ['ready', 'idle'] : ['ready'];
  const app = phases.map((p) => `[data-testid="app"][data-phase="${p}"]`).join(', ');
  const at = { opened: Date.now(), ready: 0, submitted: 0, answered: 0 };
  if (opts.url) {
    await page.goto(opts.url);
    await page.waitForSelector(app, LONG);
    await page.waitForSelector('[data-testid="search-input"]', LONG);
  }
  at.ready = Date.now();
  const q = opts.search;
  if (!q) return at;
  if (q.text !== undefined) await page.fill('[data-testid="search-input"]', q.text);
  if (q.pauseMs) await page.waitForTimeout(q.pauseMs);
  if (!q.until) await page.evaluate(() => performance.clearMeasures('loupe:query'));
  at.submitted = Date.now();
  if (q.enter) await page.press('[data-testid="search-input"]', 'Enter');
  else await page.click('[data-testid="search-submit"]');
  await page.waitForFunction(
    ([s, m]) =>
      !!document.querySelector(s) || (m && performance.getEntriesByName('loupe:query', 'measure').length > 0),
    [`${q.until ? `${q.until}, ` : ''}[data-testid="search-error"]`, !q.until] as const,
    { ...LONG, polling: 'raf' },
  );
  const error = await page.locator('[data-testid="search-error"]').allInnerTexts();
  if (error.length) throw new Error(`search failed: ${error.join(' ')}`);
  at.answered = Date.now();
  return at;
}
const LONG = { timeout: 10 * 60_000 };

/**
 * Records the app's progress line ([data-testid="job"]) in the page from its start (checked every
 * 100 ms; an entry per change, with its page time and wall clock) and the main-thread tasks over 50 ms
 * (their start and length). Node reads the new entries twice a second and calls `onChange(phase, text,
 * wallMs)` for each (phase null: no job shown; wallMs: when the page saw it, Date.now()). The page
 * keeps the record itself: an exposed function per change (Playwright's binding) cost the main thread
 * 575–1,050 ms over a 100k import, more than the app's own progress handling (docs/benchmarks/scale.md).
 * `log()` reads what is left, stops the reading and returns the whole record.
 */
export async function watchJob(
  page: Page,
  onChange: (phase: string | null, text: string, wallMs: number) => void,
) {
  type Entry = { at: number; wall: number; phase: string | null; text: string };
  type Log = { id: number; jobs: Entry[]; long: { start: number; ms: number }[] };
  await page.addInitScript(() => {
    const w = window as unknown as { loupeJob: Log };
    const log: Log = (w.loupeJob = { id: Math.random(), jobs: [], long: [] });
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) log.long.push({ start: e.startTime, ms: e.duration });
    }).observe({ type: 'longtask', buffered: true });
    setInterval(() => {
      const el = document.querySelector('[data-testid="job"]');
      const [phase, text] = [el?.getAttribute('data-phase') ?? null, el?.textContent ?? ''];
      const last = log.jobs.at(-1);
      if (phase === (last?.phase ?? null) && text === (last?.text ?? '')) return;
      log.jobs.push({ at: performance.now(), wall: Date.now(), phase, text });
    }, 100);
  });
  // Entries already handed to onChange, per document (a navigation starts a new record).
  let seen = { id: 0, n: 0 };
  const read = async () => {
    const fresh = await page
      .evaluate((s) => {
        const log = (window as unknown as { loupeJob?: Log }).loupeJob;
        if (!log) return null;
        return { id: log.id, jobs: log.jobs.slice(log.id === s.id ? s.n : 0) };
      }, seen)
      .catch(() => null); // navigating, or closed
    if (!fresh) return;
    if (fresh.id !== seen.id) seen = { id: fresh.id, n: 0 };
    seen.n += fresh.jobs.length;
    for (const j of fresh.jobs) onChange(j.phase, j.text, j.wall);
  };
  let reading = true;
  const loop = (async () => {
    while (reading && !page.isClosed()) {
      await new Promise((r) => setTimeout(r, 500));
      await read();
    }
  })();
  return {
    log: async () => {
      reading = false;
      await loop;
      await read();
      return page.evaluate(() => (window as unknown as { loupeJob: Log }).loupeJob);
    },
  };
}

// ---- the CPU probe ------------------------------------------------------------------------------
/**
 * Milliseconds of a fixed single-threaded integer loop (xorshift) in this Node process: the machine's
 * speed now (a shared VM drifts 10–20 % over an hour), taken between rounds to tell hours apart.
 */
export function cpuProbe(iterations = 40_000_000): number {
  const t0 = performance.now();
  let x = 0x9e3779b9 | 0;
  for (let i = 0; i < iterations; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
  }
  probeSink ^= x; // kept, so that the loop cannot be dropped
  return performance.now() - t0;
}
let probeSink = 0;

/** The probes of a run as a benchmark header says them: median and range. */
export const probeSummary = (probes: number[]) =>
  `CPU probe (a fixed single-thread loop, before each round; lower is faster) ${cell(probes, (x) => x.toFixed(0))} ms`;

// ---- rounds --------------------------------------------------------------------------------------
/**
 * `rounds` rounds over `sides`, a cpuProbe before each measurement (returned): each round runs every
 * side once, in the same order (`flip`: reversed every other round), so that a drift of the machine's
 * load falls on all sides alike.
 */
export async function alternate<S>(
  rounds: number,
  sides: readonly S[],
  run: (side: S, round: number) => Promise<void>,
  opts: { flip?: boolean } = {},
): Promise<number[]> {
  const probes: number[] = [];
  for (let r = 0; r < rounds; r++)
    for (const side of opts.flip && r % 2 ? [...sides].reverse() : sides) {
      probes.push(cpuProbe());
      await run(side, r);
    }
  return probes;
}

/**
 * `--against REV`: builds the site of git revision `rev` into `out` from a temporary worktree beside
 * the repository (removed again), sharing the working tree's node_modules and, hard-linked, its
 * models/generated, so its package-lock.json must be the same.
 */
export function buildAgainst(rev: string, out: string): { rev: string; commit: string; out: string } {
  const git = (...a: string[]) => execFileSync('git', a, { cwd: ROOT, encoding: 'utf8' }).trim();
  const commit = git('rev-parse', '--verify', `${rev}^{commit}`);
  if (git('diff', commit, '--', 'package-lock.json') !== '') {
    console.error(`--against ${rev}: its package-lock.json is not the working tree's (one node_modules)`);
    process.exit(1);
  }
  const tree = resolve(ROOT, '..', `.loupe-against-${commit.slice(0, 12)}`);
  rmSync(tree, { recursive: true, force: true });
  git('worktree', 'prune');
  git('worktree', 'add', '--detach', tree, commit);
  try {
    symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'));
    mkdirSync(join(tree, 'models'), { recursive: true });
    // Hard links, not a symlink: the build copies the folders it finds under models/.
    if (existsSync(join(ROOT, 'models/generated')))
      execFileSync('cp', ['-al', join(ROOT, 'models/generated'), join(tree, 'models/generated')]);
    console.log(`building ${rev} (${commit.slice(0, 12)})…`);
    buildSite(out, tree);
  } finally {
    git('worktree', 'remove', '--force', tree);
  }
  return { rev, commit, out };
}

// ---- the report ----------------------------------------------------------------------------------
/** The machine and its load over a run: called at its start, `header()` at its end. */
export function runInfo() {
  const started = new Date();
  const load0 = loadavg()[0];
  return {
    started,
    /** "2026-12-02 08:00 UTC · 2 × CPU · Chromium … · load average a at start, b at the end · `command`" */
    header(command: string, opts: { chromium?: boolean; probes?: number[] } = {}): string {
      const cpu = cpus()[0]?.model ?? 'unknown CPU';
      return [
        `${started.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
        `${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB`,
        opts.chromium === false
          ? `Node ${process.version}`
          : execSync(`${CHROMIUM} --version`).toString().trim(),
        `load average ${load0.toFixed(2)} at start, ${loadavg()[0].toFixed(2)} at the end`,
        ...(opts.probes?.length ? [probeSummary(opts.probes)] : []),
        `\`${command}\``,
      ].join(' · ');
    },
  };
}

/** Prints the report, saves `json` under bench-results/ and, when asked, writes the BENCHMARKS.md section. */
export function publish(
  section: string,
  text: string,
  opts: { write?: boolean; json?: { file: string; data: unknown } } = {},
): void {
  console.log(`\n${text}`);
  if (opts.json) {
    const file = resolve(ROOT, opts.json.file);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(opts.json.data, null, 2));
  }
  if (opts.write) writeBenchmarksSection(section, text);
}
