// The scale ladder in the real browser (issue 18): for each rung, a synthetic shard made by
// make-scale-shard (random clustered unit vectors as its precomputed corpus embeddings, labelled with
// the generated bert-tiny model: random weights, the dense numbers measure the path, not quality) is
// opened by one link on the production build (vite build + preview) in a fresh headless Chromium
// profile, which imports it, runs BM25 and a dense run from the precomputed vectors (the queries
// embedded, exact search), shows the metrics and compares the two runs. Timed from the app's own
// phase measures (loupe:phase:*); memory is the tab's renderer processes' resident set read from
// /proc every 200 ms (Chromium's, not the app's estimate), its peak kept per phase.
//
//   npm run bench:scale [-- --rungs 10000,100000] [--queries 1000] [--no-build] [--write-benchmarks]
//   npm run bench:scale -- --import-only --shard DIR   (one shard made before, import phase only)
//   npm run bench:scale -- --shard DIR --model loupe-test/minilm-l6-random [--compact-from N] [--max-rss-mib M]
//     (the dense run with another model, e.g. the 384-dimensional vectors of a shard made with it;
//     compact-from=N in the link; the rung stopped when the renderers' summed RSS passes M MiB)
//
// Shards are kept under generated-shards/bench-scale-<docs>-<queries>/ (gitignored) and reused.
import { execFileSync, execSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  MiB,
  ROOT,
  attachHeaps,
  benchArgs,
  chromiumProcs,
  heapLine,
  openBrowser,
  pageMeasures,
  publish,
  renderers,
  runInfo,
  sampleMemory,
  sitePreview,
  usage,
  watchJob,
  type TargetHeap,
} from './lib/bench-harness';
const argv = benchArgs({
  // The dense model (and of the vectors of shards made here).
  model: { type: 'string', default: 'loupe-test/bert-tiny-random' },
  // Documents from which the dense run takes the compact store (the link's compact-from).
  'compact-from': { type: 'string' },
  // Stop a rung whose renderers' summed RSS passes this many MiB (the machine's memory rule).
  'max-rss-mib': { type: 'string' },
  rungs: { type: 'string', default: '10000,100000' },
  queries: { type: 'string', default: '1000' },
  // Only the import (the link names the shard and nothing else): its time and the tab's memory.
  'import-only': { type: 'boolean', default: false },
  // A shard made before (e.g. /work/gen-shards/…): linked into generated-shards/ and used as the rung.
  shard: { type: 'string' },
  // With --import-only: stop once the progress line says every record is committed (before the page
  // opens the shard, which loads it whole: the import's own memory, at rungs the open cannot hold).
  'stop-after-store': { type: 'boolean', default: false },
  // Samples the page's main thread (CDP Profiler) and prints the functions with the most self time.
  profile: { type: 'boolean', default: false },
  // Prints each new high of the largest renderer (per 256 MiB) with the phase and progress line,
  // and the JS heaps of the page and each worker (CDP, sampled every second) at each high and at
  // each phase's peak.
  trace: { type: 'boolean', default: false },
});
const MODEL = argv.model;
const COMPACT_FROM = argv['compact-from'];
const MAX_RSS = argv['max-rss-mib'] ? Number(argv['max-rss-mib']) * 1024 * 1024 : Infinity;
const SHARD = argv.shard ? resolve(argv.shard) : undefined;
const RUNGS = SHARD
  ? [Number(JSON.parse(readFileSync(join(SHARD, 'shard.json'), 'utf8')).counts?.corpus ?? 0)]
  : argv.rungs.split(',').map(Number);
const QUERIES = Number(argv.queries);
if (RUNGS.some((n) => !Number.isInteger(n) || n < 100) || !Number.isInteger(QUERIES) || QUERIES < 1)
  usage('--rungs: document counts ≥ 100, comma-separated; --queries: a positive integer');
const GEN = join(ROOT, 'generated-shards');

interface Rung {
  docs: number;
  queries: number;
  makeSeconds: number;
  shardBytes: number;
  totalSeconds: number;
  /** Summed loupe:phase:* durations (ms) by phase. */
  phases: Record<string, number>;
  /** Peak renderer RSS (bytes) while each phase was on the progress line ('idle': none shown). */
  peakRss: Record<string, number>;
  peakRssAll: number;
  /** The largest single renderer's peak RSS (the sum counts pages shared between renderers twice). */
  peakLargest: number;
  /** The largest single renderer's peak RSS while each phase was on the progress line. */
  peakLargestByPhase: Record<string, number>;
  /** The page's main-thread tasks over 50 ms (PerformanceObserver 'longtask'): how many, the longest. */
  longTasks?: {
    count: number;
    maxMs: number;
    byPhase: Record<string, { count: number; maxMs: number }>;
    /** The longest few, each with the progress line shown when it began. */
    top: { ms: number; phase: string; line: string }[];
  };
  /**
   * The progress lines of the import as they changed: per phase (in order of first appearance), how
   * many distinct lines, the first and the last, and whether any said a time left.
   */
  lines?: { phase: string; count: number; first: string; last: string; timeLeft: boolean }[];
  /** With --trace: per phase, the heap sample taken when the largest renderer was at its highest. */
  heapsByPhase?: Record<string, { rss: number; heaps: TargetHeap[]; line: string }>;
  renderers: number;
  error?: string;
}

function du(dir: string): number {
  return Number(
    execSync(`du -sbL ${JSON.stringify(dir)}`)
      .toString()
      .split('\t')[0],
  );
}

// The preview server serves generated-shards/ at /generated-shards/ (vite.config.ts).
const server = await sitePreview({ noBuild: argv['no-build'] });
const base = server.base;
const run = runInfo();
const results: Rung[] = [];

try {
  for (const docs of RUNGS) {
    const queries = SHARD
      ? Number(JSON.parse(readFileSync(join(SHARD, 'shard.json'), 'utf8')).counts?.queries ?? 0)
      : Math.min(QUERIES, docs);
    const name = SHARD ? `linked-${SHARD.split('/').pop()}` : `bench-scale-${docs}-${queries}`;
    const dir = join(GEN, name);
    let makeSeconds = 0;
    if (SHARD && !existsSync(dir)) {
      mkdirSync(GEN, { recursive: true });
      symlinkSync(SHARD, dir);
    }
    if (!existsSync(join(dir, 'shard.json'))) {
      mkdirSync(GEN, { recursive: true });
      console.log(`${name}: make-scale-shard…`);
      const t = performance.now();
      execFileSync(
        'npx',
        [
          'tsx',
          'scripts/make-scale-shard.ts',
          ...['--docs', String(docs), '--queries', String(queries)],
          ...['--vectors', 'random', '--model', MODEL, '--out', dir],
        ],
        { cwd: ROOT, stdio: 'inherit' },
      );
      makeSeconds = (performance.now() - t) / 1000;
    }
    const rung: Rung = {
      docs,
      queries,
      makeSeconds,
      shardBytes: du(`${dir}/`),
      totalSeconds: 0,
      phases: {},
      peakRss: {},
      peakRssAll: 0,
      peakLargest: 0,
      peakLargestByPhase: {},
      renderers: 0,
    };
    results.push(rung);
    const { context, page, profileDir: profile, close } = await openBrowser();
    let phase = 'idle';
    /** The progress line's text (with --trace: printed with each new high of the largest renderer). */
    let jobText = '';
    const traceFrom = Date.now();
    let traced = 0;
    let sampling = true;
    /** With --trace: a new high to break down (the heap sampler prints it with its next sample). */
    let breakDown = false;
    let heapSampler: Promise<void> = Promise.resolve();
    let overRss: (e: Error) => void = () => {};
    const stopped = new Promise<never>((_, reject) => (overRss = reject));
    stopped.catch(() => undefined);
    const mem = sampleMemory(profile, {
      phase: () => phase,
      onSample: (rss, procs) => {
        const largest = Math.max(0, ...procs.map((p) => p.rssBytes));
        if (rss > MAX_RSS)
          overRss(new Error(`stopped: the renderers' RSS reached ${Math.round(rss / MiB)} MiB (${phase})`));
        if (argv.trace && largest >= traced + 256 * MiB) {
          traced = largest;
          const t = ((Date.now() - traceFrom) / 1000).toFixed(0);
          console.log(`  ${t} s · largest renderer ${Math.round(largest / MiB)} MiB · ${phase} · ${jobText}`);
          breakDown = true;
        }
      },
    });
    try {
      const cdp = argv.profile ? await context.newCDPSession(page) : null;
      if (cdp) {
        await cdp.send('Profiler.enable');
        await cdp.send('Profiler.setSamplingInterval', { interval: 1000 });
        await cdp.send('Profiler.start');
      }
      if (argv.trace) {
        const attached = await attachHeaps(context, page);
        const byPhase: NonNullable<Rung['heapsByPhase']> = (rung.heapsByPhase = {});
        // Every sample, for plotting: bench-results/scale-heaps-<docs>.jsonl.
        mkdirSync(join(ROOT, 'bench-results'), { recursive: true });
        const series = join(ROOT, `bench-results/scale-heaps-${docs}.jsonl`);
        writeFileSync(series, '');
        heapSampler = (async () => {
          while (sampling) {
            const p = phase;
            const printIt = breakDown;
            breakDown = false;
            const sampled = await attached.sample();
            const top = renderers(chromiumProcs(profile)).sort((a, b) => b.rssBytes - a.rssBytes)[0];
            const rss = top?.rssBytes ?? 0;
            const parts = top ? { file: top.fileBytes, shmem: top.shmemBytes } : null;
            if (printIt) console.log(`      ${heapLine(sampled, rss, parts)}`);
            const t = Math.round((Date.now() - traceFrom) / 100) / 10;
            appendFileSync(
              series,
              JSON.stringify({ t, phase: p, rss, parts, text: jobText, heaps: sampled }) + '\n',
            );
            if (rss > (byPhase[p]?.rss ?? 0))
              byPhase[p] = { rss, heaps: sampled, line: heapLine(sampled, rss, parts) };
            await new Promise((r) => setTimeout(r, 1000));
          }
          await attached.detach();
        })();
      }
      // The phase on the progress line, for the memory samples.
      let stored = () => {};
      const allStored = new Promise<void>((r) => (stored = r));
      const job = await watchJob(page, (p, text) => {
        phase = p ?? 'idle';
        jobText = text.replace(/\s+/g, ' ').trim().slice(0, 120);
        const m = /Caching in IndexedDB: ([\d,]+) \/ ([\d,]+) records/.exec(text);
        if (m && m[1] === m[2]) stored();
      });
      const runs = ['bm25(k1=0.9,b=0.4)', `dense(model=${MODEL},dtype=fp32,device=wasm)`].join(';');
      const q = new URLSearchParams(
        argv['import-only']
          ? { shard: `/generated-shards/${name}/` }
          : {
              shard: `/generated-shards/${name}/`,
              task: 'scale-qa',
              runs,
              compare: '1',
              ...(COMPACT_FROM ? { 'compact-from': COMPACT_FROM } : {}),
            },
      );
      const t0 = Date.now();
      console.log(`${name}: opening ${base}/?${q}`);
      await page.goto(`${base}/?${q}`);
      const endPhases = argv['import-only'] ? ['idle', 'ready', 'done', 'error'] : ['done', 'error'];
      const ended = page.waitForSelector(
        endPhases.map((p) => `[data-testid="app"][data-phase="${p}"]`).join(', '),
        { timeout: 60 * 60_000 },
      );
      ended.catch(() => undefined); // the context may close first (--stop-after-store)
      if (argv['stop-after-store']) {
        await Promise.race([ended, allStored, stopped]);
        sampling = false; // the page now opens the shard: not the import's memory
        await mem.stop();
      } else await Promise.race([ended, stopped]);
      if ((await page.getAttribute('[data-testid="app"]', 'data-phase')) === 'error')
        throw new Error(
          (await page.locator('[data-testid="message"][data-kind="error"]').allInnerTexts()).join(' '),
        );
      if (!argv['import-only'])
        await Promise.race([
          page.waitForSelector('[data-testid="comparison-table"]', { timeout: 60 * 60_000 }),
          stopped,
        ]);
      rung.totalSeconds = (Date.now() - t0) / 1000;
      if (cdp) await printProfile((await cdp.send('Profiler.stop')).profile);
      // Main-thread tasks over 50 ms from the moment the first job shows (the app's own start excluded),
      // each with the progress line's phase when it began (the job it belongs to, roughly).
      const { jobs, long: tasks } = await job.log();
      const since = (jobs.find((j) => j.phase !== null)?.at ?? Infinity) - 100;
      const at = (t: number) => jobs.filter((j) => j.at <= t).at(-1);
      const long = tasks
        .filter((t) => t.start >= since)
        .map((t) => [t.ms, at(t.start)?.phase ?? 'idle', at(t.start)?.text ?? ''] as const);
      const byPhase: Record<string, { count: number; maxMs: number }> = {};
      for (const [ms, p] of long) {
        const b = (byPhase[p] ??= { count: 0, maxMs: 0 });
        b.count++;
        b.maxMs = Math.max(b.maxMs, Math.round(ms));
      }
      rung.longTasks = {
        count: long.length,
        maxMs: Math.round(Math.max(0, ...long.map(([ms]) => ms))),
        byPhase,
        top: [...long]
          .sort((a, b) => b[0] - a[0])
          .slice(0, 5)
          .map(([ms, p, line]) => ({ ms: Math.round(ms), phase: p, line: squash(line) })),
      };
      rung.lines = progressLines(jobs);
      rung.phases = await pageMeasures(page, 'loupe:phase:');
    } catch (e) {
      rung.error = (e as Error).message.split('\n')[0];
    } finally {
      sampling = false;
      await mem.stop();
      await heapSampler;
      await close();
    }
    rung.peakRss = Object.fromEntries(Object.entries(mem.byPhase).map(([k, v]) => [k, v.peak]));
    rung.peakLargestByPhase = Object.fromEntries(Object.entries(mem.byPhase).map(([k, v]) => [k, v.largest]));
    [rung.peakRssAll, rung.peakLargest, rung.renderers] = [mem.peak, mem.largest, mem.renderers];
    for (const [p, h] of Object.entries(rung.heapsByPhase ?? {}))
      console.log(`  heaps at ${p}'s peak (largest renderer ${Math.round(h.rss / MiB)} MiB): ${h.line}`);
    console.log(JSON.stringify({ ...rung, heapsByPhase: undefined, lines: undefined, longTasks: undefined }));
    if (rung.longTasks) {
      console.log(`  main-thread tasks > 50 ms: ${rung.longTasks.count}; the longest:`);
      for (const t of rung.longTasks.top) console.log(`    ${t.ms} ms · ${t.phase} · ${t.line}`);
    }
    if (rung.lines) {
      console.log('  progress lines by phase (distinct lines, first → last):');
      for (const l of rung.lines)
        console.log(
          `    ${l.phase} ×${l.count}${l.timeLeft ? ' (time left shown)' : ''}: ${l.first} → ${l.last}`,
        );
    }
  }
} finally {
  await server.close();
}

const s = (ms: number | undefined) => (ms === undefined ? '–' : (ms / 1000).toFixed(1));
const mib = (b: number | undefined) => (b === undefined ? '–' : `${Math.round(b / MiB)}`);
/**
 * The page's main thread from a CDP CPU profile: the 25 functions with the most self time, named
 * through the build's source maps (dist/assets/*.map) where they resolve.
 */
async function printProfile(profile: {
  nodes: {
    id: number;
    children?: number[];
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  }[];
  samples?: number[];
  timeDeltas?: number[];
}) {
  type Consumer = {
    originalPositionFor(p: { line: number; column: number }): {
      source: string | null;
      line: number | null;
      name: string | null;
    };
  };
  const maps = new Map<string, Consumer | null>();
  // source-map-js comes with Vite; without it the minified names are printed.
  const sm = (await import('source-map-js').catch(() => null)) as {
    SourceMapConsumer: new (raw: unknown) => Consumer;
  } | null;
  const where = (f: { functionName: string; url: string; lineNumber: number; columnNumber: number }) => {
    const file = f.url.split('/').pop() ?? '';
    const mapPath = join(ROOT, 'dist/assets', `${file}.map`);
    if (sm && file.endsWith('.js') && !maps.has(file))
      maps.set(
        file,
        existsSync(mapPath) ? new sm.SourceMapConsumer(JSON.parse(readFileSync(mapPath, 'utf8'))) : null,
      );
    const o = maps.get(file)?.originalPositionFor({ line: f.lineNumber + 1, column: f.columnNumber });
    return o?.source
      ? `${o.name ?? f.functionName ?? '(anonymous)'} ${o.source.replace(/^(\.\.\/)+/, '')}:${o.line}`
      : `${f.functionName || '(anonymous)'} ${file}:${f.lineNumber + 1}:${f.columnNumber}`;
  };
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const self = new Map<string, number>();
  (profile.samples ?? []).forEach((id, i) => {
    const f = byId.get(id)!;
    const key = /^\((idle|program|garbage collector|root)\)$/.test(f.functionName)
      ? f.functionName
      : where(f);
    self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas?.[i] ?? 0) / 1000);
  });
  const top = [...self].filter(([k]) => !/^\((idle|program|root)\)$/.test(k));
  top.sort((a, b) => b[1] - a[1]);
  console.log('main thread, self time (ms):');
  for (const [k, ms] of top.slice(0, 25)) console.log(`  ${ms.toFixed(0).padStart(7)}  ${k}`);
  // The longest stretch without an idle sample (about the longest task) and what ran in it, with the
  // call stack (innermost first) of its most frequent function.
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const samples = profile.samples ?? [];
  let best = { from: 0, to: 0, ms: 0 };
  let from = 0;
  let ms = 0;
  samples.forEach((id, i) => {
    const dt = (profile.timeDeltas?.[i] ?? 0) / 1000;
    if (byId.get(id)!.functionName === '(idle)') {
      from = i + 1;
      ms = 0;
      return;
    }
    ms += dt;
    if (ms > best.ms) best = { from, to: i + 1, ms };
  });
  // The five longest stretches over 50 ms, each with the functions of most self time in it.
  const stretches: { from: number; to: number; ms: number }[] = [];
  let start = 0;
  let busy = 0;
  samples.forEach((id, i) => {
    if (byId.get(id)!.functionName === '(idle)') {
      if (busy > 50) stretches.push({ from: start, to: i, ms: busy });
      start = i + 1;
      busy = 0;
    } else busy += (profile.timeDeltas?.[i] ?? 0) / 1000;
  });
  stretches.sort((a, b) => b.ms - a.ms);
  for (const st of stretches.slice(0, 5)) {
    const by = new Map<string, number>();
    for (let i = st.from; i < st.to; i++) {
      const f = byId.get(samples[i])!;
      const k = where(f);
      by.set(k, (by.get(k) ?? 0) + (profile.timeDeltas?.[i] ?? 0) / 1000);
    }
    const top = [...by].sort((a, b) => b[1] - a[1]).slice(0, 4);
    console.log(
      `busy stretch of ${st.ms.toFixed(0)} ms: ${top.map(([k, ms]) => `${k} ${ms.toFixed(0)}`).join(' · ')}`,
    );
  }
  const inStretch = new Map<number, number>();
  for (const id of samples.slice(best.from, best.to)) inStretch.set(id, (inStretch.get(id) ?? 0) + 1);
  const [leaf] = [...inStretch].sort((a, b) => b[1] - a[1])[0] ?? [];
  const stack: string[] = [];
  for (let id = leaf; id !== undefined && stack.length < 10; id = parent.get(id)!)
    stack.push(where(byId.get(id)!));
  console.log(`longest busy stretch: ${best.ms.toFixed(0)} ms; its most frequent stack:`);
  for (const f of stack) console.log(`    ${f}`);
}

/** The progress line's text on one line (its Cancel button's word dropped), cut to 140 characters. */
function squash(text: string): string {
  const t = text
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/ ?Cancel$/, '');
  return t.length > 140 ? `${t.slice(0, 139)}…` : t;
}

/** The job log's lines grouped by phase (null: the job's title, no tick yet), in order of first appearance. */
function progressLines(jobs: { phase: string | null; text: string }[]): NonNullable<Rung['lines']> {
  const out = new Map<string, NonNullable<Rung['lines']>[number]>();
  for (const j of jobs) {
    if (!j.text.trim()) continue;
    const phase = j.phase ?? '(no phase)';
    const line = squash(j.text);
    const b = out.get(phase);
    if (!b) out.set(phase, { phase, count: 1, first: line, last: line, timeLeft: / left\b/.test(line) });
    else {
      b.count++;
      b.last = line;
      b.timeLeft ||= / left\b/.test(line);
    }
  }
  return [...out.values()];
}

/** Under the table: each rung's longest main-thread tasks and the progress lines of its phases. */
function longTaskLines(): string {
  const out: string[] = [];
  for (const r of results) {
    if (r.longTasks?.top.length)
      out.push(
        `${r.docs.toLocaleString('en')} documents, the longest main-thread tasks (the progress line at their start):`,
        '',
        ...r.longTasks.top.map((t) => `- ${t.ms} ms · ${t.phase} · ${t.line}`),
        '',
      );
    if (r.lines?.length)
      out.push(
        `${r.docs.toLocaleString('en')} documents, the progress lines by phase (distinct lines seen; the first and the last):`,
        '',
        ...r.lines.map(
          (l) =>
            `- ${l.phase} ×${l.count}${l.timeLeft ? ', time left shown' : ''}: "${l.first}" → "${l.last}"`,
        ),
        '',
      );
  }
  return out.length ? `\n\n${out.join('\n').trimEnd()}` : '';
}

/** "5, 387 ms (index)": how many tasks, the longest and the phase it was in. */
function longTasksCell(t: Rung['longTasks']): string {
  if (!t) return '–';
  if (!t.count) return '0';
  const [phase] = Object.entries(t.byPhase).sort((a, b) => b[1].maxMs - a[1].maxMs)[0];
  return `${t.count}, ${t.maxMs} ms (${phase})`;
}
const lines = [
  '| documents × queries | shard on disk | link → comparison | read + parse | store (IndexedDB) | BM25 index | run queries (BM25 + dense) | dense: precomputed rows | renderer RSS, MiB, peak of the sum: import / index / runs / overall | largest renderer, MiB | main-thread tasks > 50 ms: count, longest (phase) |',
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
];
for (const r of results) {
  const p = r.phases;
  const sum = (...ks: string[]) => ks.reduce((a, k) => a + (p[k] ?? 0), 0);
  const peak = (...ks: string[]) => Math.max(0, ...ks.map((k) => r.peakRss[k] ?? 0)) || undefined;
  lines.push(
    `| ${r.docs.toLocaleString('en')} × ${r.queries.toLocaleString('en')}${r.error ? ` (error: ${r.error})` : ''} | ` +
      `${mib(r.shardBytes)} MiB | ${r.totalSeconds.toFixed(1)} s | ${s(sum('read', 'parse'))} s | ${s(p.store)} s | ` +
      `${s(p.index)} s | ${s(p.search)} s | ${s(p.precomputed)} s | ` +
      `${mib(peak('read', 'parse', 'store', 'other'))} / ${mib(peak('index'))} / ${mib(peak('search', 'precomputed', 'load', 'download', 'compile'))} / ${mib(r.peakRssAll)} | ` +
      `${mib(r.peakLargest)} (of ${r.renderers}) | ${longTasksCell(r.longTasks)} |`,
  );
}
const header =
  run.header(
    'npm run bench:scale -- ' +
      (SHARD
        ? `--shard ${SHARD}${argv['import-only'] ? ' --import-only' : ''}${argv['stop-after-store'] ? ' --stop-after-store' : ''}${argv.model !== 'loupe-test/bert-tiny-random' ? ` --model ${MODEL}` : ''}${COMPACT_FROM ? ` --compact-from ${COMPACT_FROM}` : ''}`
        : `--rungs ${RUNGS.join(',')} --queries ${QUERIES}${argv['import-only'] ? ' --import-only' : ''}`),
  ) +
  '. ' +
  `Dense: ${MODEL} (generated, random weights) on WASM, exact search over the shard's random vectors` +
  (COMPACT_FROM ? ` (through the compact store from ${COMPACT_FROM} documents).` : '.');
// An import-only run has its own section (the ladder's, link → comparison, is kept).
publish(
  argv['import-only'] ? 'scale-import' : 'scale',
  `${header}\n\n${lines.join('\n')}${longTaskLines()}`,
  {
    write: argv['write-benchmarks'],
    json: { file: 'bench-results/scale.json', data: { started: run.started, results } },
  },
);
