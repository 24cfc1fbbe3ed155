// `npm run bench:gpu -- --browser`: the bench's measurements in headless Chromium (its own WebGPU
// adapter, the app's onnxruntime-web build), through tests/browser/gpu-harness.html on the Vite dev
// server. On a machine with a GPU, Chromium runs with its GPU process (no --disable-gpu) and
// Vulkan; add flags with --chromium-flag. Here its adapter is SwiftShader: correctness only.
import { execSync } from 'node:child_process';
import { CHROMIUM, CHROMIUM_ARGS, harnessCaller } from '../../tests/e2e/browser';
import type { GpuHarness } from '../../tests/browser/gpu-harness';
import { openBrowser, openHarness, startDevServer } from './bench-harness';
import type { AdapterReport, EncoderRow, ExactRow, GpuDtype, MeasureOptions } from './gpu-measure';

const call = harnessCaller<GpuHarness>('gpuHarness');

/** Chromium's flags for a hardware adapter: the GPU process on, Vulkan, the blocklist ignored. */
export const GPU_CHROMIUM_ARGS = [
  ...CHROMIUM_ARGS.filter((a) => a !== '--disable-gpu'),
  '--ignore-gpu-blocklist',
  '--enable-features=Vulkan',
];

export interface BrowserRun {
  chromium: string;
  userAgent: string;
  isolated: boolean;
  adapter: AdapterReport | null;
  ortVersion: string | null;
  threads: number | null;
}

/**
 * Runs the encoder rows and the exact row in one headless Chromium page; `onAdapter` is told the
 * adapter first (to decide fp16, to say "software"), each row is handed to `onRow` as it is measured.
 */
export async function runInBrowser(args: {
  flags: string[];
  jobs: { model: string; part: 'text' | 'vision'; dtype: GpuDtype }[];
  exact: boolean;
  threads: number;
  opts: MeasureOptions;
  log: (line: string) => void;
  onAdapter: (run: BrowserRun) => void;
  onRow: (row: EncoderRow) => void;
  onExact: (row: ExactRow) => void;
}): Promise<BrowserRun> {
  const { server, base } = await startDevServer();
  const browser = await openBrowser({ args: [...GPU_CHROMIUM_ARGS, ...args.flags], log: args.log });
  const { page } = browser;
  try {
    page.setDefaultTimeout(30 * 60_000);
    await openHarness(page, base, 'tests/browser/gpu-harness.html');
    const a = await call(page, 'adapter');
    const run: BrowserRun = {
      chromium: execSync(`${CHROMIUM} --version`).toString().trim(),
      userAgent: a.userAgent,
      isolated: a.isolated,
      adapter: a.adapter,
      ortVersion: null,
      threads: null,
    };
    args.onAdapter(run);
    if (!a.adapter) return run;
    const shaderF16 = a.adapter.features.includes('shader-f16');
    for (const j of args.jobs) {
      const r = await call(page, 'encoder', j.model, j.part, j.dtype, shaderF16, args.threads, args.opts);
      run.ortVersion = r.ortVersion;
      run.threads = r.threads;
      for (const l of r.lines) args.log(`  ${l}`);
      args.onRow(r.row);
    }
    if (args.exact) {
      const r = await call(page, 'exact', args.opts);
      for (const l of r.lines) args.log(`  ${l}`);
      args.onExact(r.row);
    }
    return run;
  } finally {
    await browser.close();
    await server.close();
  }
}
