// WebGPU in Node without a browser: Dawn (the `webgpu` npm package) over Vulkan, plus the two shims
// onnxruntime-web needs there (see ../shared/ENVIRONMENT.md, "On an NVIDIA GPU machine without a
// browser"):
//   1. `fetch` serves file: URLs (onnxruntime-web loads its .wasm, and its threads their script, by URL);
//   2. views on a SharedArrayBuffer (the threaded WASM heap) are copied before they reach
//      GPUQueue.writeBuffer / setBindGroup: Dawn for Node rejects them, browsers accept them.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

export { describeAdapter, type AdapterReport } from './gpu-measure';

const CONTENT_TYPES: Record<string, string> = {
  wasm: 'application/wasm',
  mjs: 'text/javascript',
  js: 'text/javascript',
};

function shimFetch(): void {
  const real = globalThis.fetch;
  const shim = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith('file:')) return real(input, init);
    const bytes = await readFile(fileURLToPath(url));
    const ext = url.slice(url.lastIndexOf('.') + 1);
    const type = CONTENT_TYPES[ext] ?? 'application/octet-stream';
    const response = new Response(bytes, { headers: { 'content-type': type } });
    // A blob of a file: URL gets that file: URL back from URL.createObjectURL (see below).
    response.blob = async () => {
      const blob = new Blob([bytes], { type });
      blobSources.set(blob, url);
      return blob;
    };
    return response;
  };
  globalThis.fetch = shim as typeof fetch;
  // onnxruntime-web with threads fetches its .mjs, wraps it in a blob: URL and imports that (so that a
  // cross-origin script can start workers); Node's ESM loader imports only file:, data: and node: URLs.
  // The blob of a file is the file, so its URL is the file: URL.
  const createObjectURL = URL.createObjectURL.bind(URL);
  const revokeObjectURL = URL.revokeObjectURL.bind(URL);
  URL.createObjectURL = (obj: Blob) => blobSources.get(obj) ?? createObjectURL(obj);
  URL.revokeObjectURL = (url: string) => {
    if (url.startsWith('blob:')) revokeObjectURL(url);
  };
}

const blobSources = new WeakMap<Blob, string>();

/** A copy on a plain ArrayBuffer when `v` lives on a SharedArrayBuffer; `v` itself otherwise. */
function unshared<T>(v: T): T {
  if (typeof SharedArrayBuffer === 'undefined') return v;
  if (v instanceof SharedArrayBuffer) return new Uint8Array(v).slice().buffer as T;
  if (ArrayBuffer.isView(v) && v.buffer instanceof SharedArrayBuffer) {
    if (v instanceof DataView)
      return new DataView(new Uint8Array(v.buffer, v.byteOffset, v.byteLength).slice().buffer) as T;
    // TypedArray.prototype.slice allocates a fresh, unshared buffer of the same element type.
    return (v as unknown as Uint8Array).slice() as T;
  }
  return v;
}

type Proto = Record<string, (...args: unknown[]) => unknown>;

function patch(proto: Proto | undefined, method: string, argIndex: number): void {
  const original = proto?.[method];
  if (!proto || typeof original !== 'function') return;
  proto[method] = function (this: unknown, ...args: unknown[]) {
    if (args.length > argIndex) args[argIndex] = unshared(args[argIndex]);
    return original.apply(this, args);
  };
}

let installed: Promise<void> | null = null;

/**
 * Puts Dawn's `navigator.gpu` and the WebGPU globals on globalThis and installs the shims. `flags` go
 * to Dawn's create() (e.g. `backend=vulkan`). Idempotent.
 */
export function installNodeWebGpu(flags: string[] = []): Promise<void> {
  installed ??= (async () => {
    const { create, globals } = (await import('webgpu')) as {
      create: (flags: string[]) => GPU;
      globals: Record<string, { prototype?: Proto }>;
    };
    Object.assign(globalThis, globals);
    const gpu = create(flags);
    const g = globalThis as { navigator?: object };
    if (!g.navigator)
      Object.defineProperty(g, 'navigator', { value: {}, configurable: true, writable: true });
    Object.defineProperty(g.navigator, 'gpu', { value: gpu, configurable: true, writable: true });
    patch(globals.GPUQueue?.prototype, 'writeBuffer', 2);
    for (const name of ['GPUComputePassEncoder', 'GPURenderPassEncoder', 'GPURenderBundleEncoder'])
      patch(globals[name]?.prototype, 'setBindGroup', 2);
    shimFetch();
  })();
  return installed;
}
