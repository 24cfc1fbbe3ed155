// Vite dev server + headless Chromium around tests/browser/bench-harness.html, for scripts/parity.ts
// and scripts/bench-encode.ts: one fresh browser (profile, renderer, encoder worker) per
// configuration, and /proc readings of its processes (RSS, peak RSS, CPU time).
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { createServer, type ViteDevServer } from 'vite';
import type { BenchHarness } from '../../tests/browser/bench-harness';
import { median } from '../../src/lib/core/eval/stats';
import { CHROMIUM, CHROMIUM_ARGS, harnessCaller } from '../../tests/e2e/browser';

const ROOT = resolve(import.meta.dirname, '../..');

/** Starts the Vite dev server (the harness pages are not part of the build) on 127.0.0.1. */
export async function startDevServer(): Promise<{ server: ViteDevServer; base: string }> {
  const server = await createServer({
    configFile: join(ROOT, 'vite.config.ts'),
    root: ROOT,
    // No HMR and no file watching: other people editing the tree must not reload the page mid-run.
    server: { port: 0, host: '127.0.0.1', strictPort: false, hmr: false, watch: null },
    logLevel: 'warn',
  });
  await server.listen();
  const address = server.httpServer?.address();
  if (!address || typeof address === 'string') throw new Error('vite did not bind a TCP port');
  return { server, base: `http://127.0.0.1:${address.port}` };
}

/** Calls `window.benchHarness[fn](...args)` in the page. */
export const call = harnessCaller<BenchHarness>('benchHarness');

export async function openHarness(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/tests/browser/bench-harness.html`);
  await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
}

export interface BrowserSession {
  context: BrowserContext;
  page: Page;
  profileDir: string;
  /** The browser process tree, read from /proc. */
  procs(): ChromiumProc[];
  close(): Promise<void>;
}

/** A fresh Chromium (new profile) on the harness page. */
export async function launchHarness(base: string, log?: (s: string) => void): Promise<BrowserSession> {
  const profileDir = mkdtempSync(join(tmpdir(), 'loupe-encbench-'));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    // Eager memory measurement: otherwise measureUserAgentSpecificMemory waits for a GC (up to 20 s).
    args: [...CHROMIUM_ARGS, '--enable-blink-features=ForceEagerMeasureMemory'],
    headless: true,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('pageerror', (e) => log?.(`page error: ${String(e)}`));
  page.on('crash', () => log?.('page crashed'));
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning')
      log?.(`console ${m.type()}: ${m.text()} (${m.location().url || '?'})`);
  });
  await openHarness(page, base);
  return {
    context,
    page,
    profileDir,
    procs: () => chromiumProcs(profileDir),
    close: async () => {
      await context.close().catch(() => undefined);
      rmSync(profileDir, { recursive: true, force: true });
    },
  };
}

// ---- /proc ---------------------------------------------------------------------------------------

export interface ChromiumProc {
  pid: number;
  /** `browser`, `renderer`, `gpu-process`, `utility`, `zygote`… */
  type: string;
  rssBytes: number;
  /** Peak RSS of the process so far (VmHWM). */
  hwmBytes: number;
  /** User + system CPU time in seconds. */
  cpuSeconds: number;
  threads: number;
}

const CLK_TCK = 100;

function readProc(pid: number): { ppid: number; cmd: string; status: string; stat: string[] } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      ppid: Number(rest[1]),
      cmd: readFileSync(`/proc/${pid}/cmdline`, 'utf8'),
      status: readFileSync(`/proc/${pid}/status`, 'utf8'),
      stat: rest,
    };
  } catch {
    return null;
  }
}

const kb = (status: string, key: string): number => {
  const m = new RegExp(`${key}:\\s+(\\d+) kB`).exec(status);
  return m ? Number(m[1]) * 1024 : 0;
};

/** The browser process launched on `profileDir` and all its descendants. */
export function chromiumProcs(profileDir: string): ChromiumProc[] {
  const all = new Map<number, NonNullable<ReturnType<typeof readProc>>>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const p = readProc(Number(name));
    if (p) all.set(Number(name), p);
  }
  const roots = [...all]
    .filter(([, p]) => p.cmd.includes(`--user-data-dir=${profileDir}`))
    .map(([pid]) => pid);
  const inTree = new Set<number>(roots);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, p] of all)
      if (!inTree.has(pid) && inTree.has(p.ppid)) {
        inTree.add(pid);
        grew = true;
      }
  }
  return [...inTree].map((pid) => {
    const p = all.get(pid)!;
    const type = /--type=([a-z-]+)/.exec(p.cmd)?.[1] ?? 'browser';
    // stat fields (0-based after the name): 11 utime, 12 stime, 17 num_threads.
    return {
      pid,
      type,
      rssBytes: kb(p.status, 'VmRSS'),
      hwmBytes: kb(p.status, 'VmHWM'),
      cpuSeconds: (Number(p.stat[11]) + Number(p.stat[12])) / CLK_TCK,
      threads: Number(p.stat[17]),
    };
  });
}

/** The renderer processes of a session (the page and its workers live there). */
export function renderers(procs: ChromiumProc[]): ChromiumProc[] {
  return procs.filter((p) => p.type === 'renderer');
}

/** CPU seconds of the renderers + the GPU process (WebGPU work runs there). */
export function busySeconds(procs: ChromiumProc[]): number {
  return procs
    .filter((p) => p.type === 'renderer' || p.type === 'gpu-process')
    .reduce((s, p) => s + p.cpuSeconds, 0);
}

/**
 * Waits until the browser launched on `profileDir` has finished its own start-up work: Chromium
 * builds its address bar's WebUI popup in a renderer of its own just after launch, about 0.7
 * CPU-seconds here, which on a 2-core machine would otherwise share the CPU with the first page a
 * benchmark times (a real visit happens in a browser that is already running). Settled means the
 * whole process tree used under `idleShare` of one core over the last `windowMs`; gives up after
 * `maxMs`. Returns how long it waited and the CPU-seconds the browser used meanwhile.
 */
export async function settleBrowser(
  profileDir: string,
  opts: { windowMs?: number; idleShare?: number; maxMs?: number } = {},
): Promise<{ ms: number; cpuSeconds: number; settled: boolean }> {
  const { windowMs = 400, idleShare = 0.05, maxMs = 10_000 } = opts;
  const step = 100;
  const t0 = Date.now();
  // Per-process CPU, so that a process that exits does not count as negative time.
  const read = () => new Map(chromiumProcs(profileDir).map((p) => [p.pid, p.cpuSeconds]));
  const first = read();
  const samples: { at: number; cpu: Map<number, number> }[] = [{ at: t0, cpu: first }];
  const used = (from: Map<number, number>, to: Map<number, number>) => {
    let s = 0;
    for (const [pid, c] of to) s += Math.max(0, c - (from.get(pid) ?? 0));
    return s;
  };
  for (;;) {
    await new Promise((r) => setTimeout(r, step));
    const now = Date.now();
    const cpu = read();
    samples.push({ at: now, cpu });
    const base = samples.find((s) => s.at >= now - windowMs - step / 2) ?? samples[0];
    const spanMs = now - base.at;
    if (spanMs >= windowMs && used(base.cpu, cpu) <= (idleShare * spanMs) / 1000)
      return { ms: now - t0, cpuSeconds: used(first, cpu), settled: true };
    if (now - t0 >= maxMs) return { ms: now - t0, cpuSeconds: used(first, cpu), settled: false };
  }
}

/**
 * Milliseconds of a fixed single-threaded integer workload (a xorshift loop) in this Node process:
 * how fast the machine is at that moment. A shared VM's speed drifts by 10–20 % over an hour here,
 * so a benchmark that reports absolute times (against a target) takes this between its rounds, and
 * runs of different hours can be told apart by it.
 */
export function cpuProbe(iterations = 40_000_000): number {
  const t0 = performance.now();
  let x = 0x9e3779b9 | 0;
  for (let i = 0; i < iterations; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
  }
  // The result is kept, so the loop cannot be dropped.
  probeSink ^= x;
  return performance.now() - t0;
}
let probeSink = 0;

/** The probes of a run as a benchmark header says them: median and range. */
export function probeSummary(probes: number[]): string {
  return (
    `CPU probe (a fixed single-thread loop, before each round; lower is faster) ${median(probes).toFixed(0)} ms ` +
    `(${Math.min(...probes).toFixed(0)}–${Math.max(...probes).toFixed(0)})`
  );
}
