// Chromium's processes as /proc shows them (the tree launched on a profile, their memory and CPU
// time), the renderers' memory sampler and the wait for a fresh browser's own start-up work
// (bench-harness.ts re-exports them).
import { readFileSync, readdirSync } from 'node:fs';

export const MiB = 1024 * 1024;

export interface ChromiumProc {
  pid: number;
  /** `browser`, `renderer`, `gpu-process`, `utility`, `zygote`… */
  type: string;
  rssBytes: number;
  /** Peak RSS of the process so far (VmHWM). */
  hwmBytes: number;
  /** User + system CPU time in seconds. */
  cpuSeconds: number;
  /** What of the RSS is file-backed (code, fonts) and shared memory. */
  fileBytes: number;
  shmemBytes: number;
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
    // stat fields (0-based after the name): 11 utime, 12 stime.
    return {
      pid,
      type,
      rssBytes: kb(p.status, 'VmRSS'),
      hwmBytes: kb(p.status, 'VmHWM'),
      cpuSeconds: (Number(p.stat[11]) + Number(p.stat[12])) / CLK_TCK,
      fileBytes: kb(p.status, 'RssFile'),
      shmemBytes: kb(p.status, 'RssShmem'),
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
 * Waits until the browser on `profileDir` has done its own start-up work (its address bar's WebUI
 * popup, about 0.7 CPU-s, would share a 2-core CPU with the first page timed; a real visit happens in
 * a running browser): its tree used under `idleShare` of a core over the last `windowMs`, at most
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
 * Samples the renderers' resident set every `everyMs` until `stop()`: the peak of their sum and of
 * the largest one (the tab: page, workers and service worker live in one), overall and by the
 * `phase()` current at each sample, and the most renderers seen. `onSample` sees each reading.
 */
export function sampleMemory(
  profileDir: string,
  opts: {
    everyMs?: number;
    phase?: () => string;
    onSample?: (sum: number, procs: ChromiumProc[]) => void;
  } = {},
) {
  const m = {
    peak: 0,
    largest: 0,
    renderers: 0,
    byPhase: {} as Record<string, { peak: number; largest: number }>,
    /** The renderers' summed RSS now. */
    now: () => renderers(chromiumProcs(profileDir)).reduce((s, p) => s + p.rssBytes, 0),
    stop: async () => {
      sampling = false;
      await loop;
    },
  };
  let sampling = true;
  const loop = (async () => {
    while (sampling) {
      const procs = renderers(chromiumProcs(profileDir));
      const sum = procs.reduce((s, p) => s + p.rssBytes, 0);
      const largest = Math.max(0, ...procs.map((p) => p.rssBytes));
      m.peak = Math.max(m.peak, sum);
      m.largest = Math.max(m.largest, largest);
      m.renderers = Math.max(m.renderers, procs.length);
      if (opts.phase) {
        const b = (m.byPhase[opts.phase()] ??= { peak: 0, largest: 0 });
        b.peak = Math.max(b.peak, sum);
        b.largest = Math.max(b.largest, largest);
      }
      opts.onSample?.(sum, procs);
      await new Promise((r) => setTimeout(r, opts.everyMs ?? 200));
    }
  })();
  return m;
}
