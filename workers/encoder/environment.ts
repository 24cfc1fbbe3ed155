// transformers.js environment, once per worker: self-hosted ORT files, the models/ folder, the
// fetch hook that records failed model downloads, and the errors built from them (a download that
// failed, a WebGPU failure).
/// <reference types="vite/client" />
import { env } from '@huggingface/transformers';
// transformers.js 4.3 imports `onnxruntime-web/webgpu` (ort.webgpu.bundle.min.mjs). Its WebGPU
// execution provider needs the asyncify WASM build; its WASM execution provider runs on that build
// or on the plain one, which is half the size and starts sooner. A worker loads one pair of files
// (see ortBuildFor); never the JSEP build, which gives wrong q8 vectors.
import asyncifyWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import asyncifyMjsUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs?url';
import plainWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.wasm?url';
import plainMjsUrl from 'onnxruntime-web/ort-wasm-simd-threaded.mjs?url';
import {
  MODEL_FETCH_FAILED,
  ORT_BUILD_RESTART,
  WEBGPU_FAILED,
  type ModelSpec,
} from '../../src/lib/core/retrieval/models';
import { wasmThreads, type OrtBuild } from '../../src/lib/platform/gpu/backend';
import { forgetModelFiles, modelCache } from './model-cache';
import { PREPARING } from './progress';
import type { OnProgress } from './types';

const ORT_FILES: Record<OrtBuild, { wasm: string; mjs: string }> = {
  plain: { wasm: plainWasmUrl, mjs: plainMjsUrl },
  asyncify: { wasm: asyncifyWasmUrl, mjs: asyncifyMjsUrl },
};

/** The build this worker's ONNX Runtime runs; null until its first session is about to be created. */
let ortBuild: OrtBuild | null = null;

/** Points transformers.js's ONNX Runtime at this build's self-hosted files (read at its first session). */
export function setOrtFiles(build: OrtBuild): void {
  const wasm = env.backends.onnx.wasm!;
  // Mutate the object ORT reads; replacing env.backends.onnx.wasm would detach it from ORT.
  wasm.wasmPaths = {
    wasm: new URL(ORT_FILES[build].wasm, self.location.href).href,
    mjs: new URL(ORT_FILES[build].mjs, self.location.href).href,
  };
}

/**
 * Settles the ORT build before a session is created: the first call picks `want`; later calls keep
 * it. The asyncify build runs WASM sessions too, so only a plain worker asked for asyncify (a WebGPU
 * load) cannot go on: that throws ORT_BUILD_RESTART, and the client loads again in a fresh worker.
 */
export function claimOrtBuild(want: OrtBuild, modelId: string): OrtBuild {
  if (ortBuild === null) {
    ortBuild = want;
    setOrtFiles(want);
  } else if (ortBuild === 'plain' && want === 'asyncify') {
    const e = new Error(
      `${modelId}: this encoder worker runs ONNX Runtime's plain WASM build, which has no WebGPU; ` +
        'loading in a fresh worker on the asyncify build',
    );
    e.name = ORT_BUILD_RESTART;
    throw e;
  }
  return ortBuild;
}

// Any WebGPU failure leaves this worker unusable: transformers.js chains every session creation and
// every run of a realm on one promise, and a rejected link rejects all later ones, WASM included.
// So it is reported as WEBGPU_FAILED and the client continues on WASM in a fresh worker.
export function webGpuFailed(reason: string): Error {
  const e = new Error(reason);
  e.name = WEBGPU_FAILED;
  return e;
}

let configured = false;
/**
 * The app's models/ folder as a URL path. The worker script sits one folder below the app root in
 * both layouts (dev: /workers/x.ts, build: assets/x.js), so `../models/` works at the origin root and
 * under a sub-path alike; a path, not a URL (see configureEnv).
 */
export let modelsBase = new URL('../models/', self.location.href).pathname;

/** Network failures of model files during the current load (offline, host unreachable). */
export let fetchFailures: { url: string; message: string }[] = [];

/**
 * Where the downloads of weight files (`.onnx`, `.onnx_data`) are reported while a model's sessions are
 * loaded (load.ts sets it around them). transformers.js is given no progress callback for the model
 * itself: with one, it first asks for every weight file to learn its size, and for a file under
 * models/ that is a whole GET it never reads (on the 1M shard's fresh visit, 60 of a 90 MB file's MB
 * came over for nothing, beside the real download). The bytes are counted here instead, as they are read.
 */
let weightReport: OnProgress | null = null;

/** Reports weight-file downloads to `report` until called again (null: not at all). */
export function reportWeightDownloads(report: OnProgress | null): void {
  weightReport = report;
}

const WEIGHT_FILE = /\.onnx(_data(_\d+)?)?$/;

/** A weight file's name as transformers.js gives it: its path below the model folder (`onnx/…`). */
function weightName(url: string): string {
  const parts = new URL(url, self.location.href).pathname.split('/');
  const at = parts.lastIndexOf('onnx');
  return decodeURIComponent(at >= 0 ? parts.slice(at).join('/') : parts.at(-1)!);
}

/** The response with its body counted as it is read: "Loading", download ticks, then "Preparing". */
function counted(res: Response, url: string, report: OnProgress): Response {
  const file = weightName(url);
  const total = Number(res.headers.get('content-length')) || undefined;
  let loaded = 0;
  report({ kind: 'status', message: `Loading ${file}` });
  const body = res.body!.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        loaded += chunk.byteLength;
        report({ kind: 'download', file, loaded, total });
        out.enqueue(chunk);
      },
      flush() {
        report({ kind: 'status', message: PREPARING });
      },
    }),
  );
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/** Forgets the download failures of an earlier load (called as a load starts). */
export function resetFetchFailures(): void {
  fetchFailures = [];
}

/**
 * Sets up transformers.js for this worker on the first call (ORT's self-hosted files, threads, the
 * fetch hook); every call sets the models/ folder and whether the hub may be asked.
 */
export function configureEnv(allowRemoteModels: boolean, base?: string, allowLocalModels = true): void {
  if (base) modelsBase = base;
  if (!configured) {
    const wasm = env.backends.onnx.wasm;
    if (!wasm) throw new Error('onnxruntime-web has no WASM backend in this build');
    // Self-hosted files from the start (transformers.js's default is a CDN); claimOrtBuild may still
    // switch to the plain build before the first session.
    setOrtFiles('asyncify');
    // Only read before the first session is created.
    wasm.numThreads = wasmThreads();
    // Otherwise transformers.js copies ORT's .mjs into the Cache API and imports it from a blob: URL,
    // which the site's Content-Security-Policy (script-src 'self') refuses; the files are self-hosted.
    env.useWasmCache = false;
    // Model files go to the same Cache Storage (env.cacheKey) through model-cache.ts, which writes
    // them once the load is over instead of before the session is built.
    env.useCustomCache = true;
    env.customCache = modelCache;
    // A path, not a URL: with a full URL the tokenizer files silently fail to load. Hub ids
    // (`owner/name`) are looked up here first, so a hub model can also be self-hosted under /models/.
    env.localModelPath = modelsBase;
    // Every model file request goes through here, so that a network failure can be reported with
    // the model, the file and the host instead of a bare "Failed to fetch".
    const plainFetch = globalThis.fetch.bind(globalThis);
    env.fetch = async (input: string | URL, init?: RequestInit) => {
      try {
        const res = await plainFetch(input, init);
        const url = String(input);
        const report = weightReport;
        const ranged = init?.headers !== undefined && new Headers(init.headers).has('Range');
        return report &&
          res.status === 200 &&
          res.body &&
          !ranged &&
          WEIGHT_FILE.test(new URL(url, self.location.href).pathname)
          ? counted(res, url, report)
          : res;
      } catch (e) {
        fetchFailures.push({ url: String(input), message: errorText(e) });
        throw e;
      }
    };
    configured = true;
  }
  env.localModelPath = modelsBase;
  // Global to transformers.js: the last load's settings apply to loads running at the same time.
  env.allowRemoteModels = allowRemoteModels;
  env.allowLocalModels = allowLocalModels || !allowRemoteModels;
}

/** A thrown value's message. */
export function errorText(e: unknown): string {
  return (e as Error)?.message ?? String(e);
}

/** Deletes a model's files from the browser cache and its write queue (best effort). */
export async function evictCachedModelFiles(modelId: string): Promise<void> {
  try {
    await forgetModelFiles(`/${modelId}/`);
  } catch (e) {
    console.warn(`loupe: could not clear cached files of ${modelId}`, e);
  }
}

/**
 * The error for a model file that could not be downloaded: the model, the file, the host and the
 * offline alternatives (the page adds the models available offline in this browser).
 */
export function modelFetchError(spec: ModelSpec, cause: unknown): Error {
  const own = self.location.origin;
  const remote = fetchFailures.filter((f) => new URL(f.url, self.location.href).origin !== own);
  const f = (remote.length ? remote : fetchFailures).at(-1)!;
  const u = new URL(f.url, self.location.href);
  // Hub URLs are <host>/<owner>/<name>/resolve/<revision>/<file>; local ones end in the file.
  const file = decodeURIComponent(
    /\/resolve\/[^/]+\/(.+)$/.exec(u.pathname)?.[1] ?? u.pathname.split('/').pop() ?? '',
  );
  const e = new Error(
    `Could not download ${file} of model ${spec.id} from ${u.host} (${f.message}; ${errorText(cause)}). ` +
      `The network is off or ${u.host} cannot be reached. Offline choices: a model already cached in ` +
      `this browser, the same files self-hosted under ${modelsBase}${spec.local ? (spec.localPath ?? spec.hubId) : spec.hubId}/, ` +
      `or a generated test model (loupe-test/…, random weights).`,
  );
  e.name = MODEL_FETCH_FAILED;
  return e;
}
