// The product encoder worker (workers/encoder.worker.ts, unchanged) with its WASM thread count set
// by the worker's name: `…threads-1` makes navigator.hardwareConcurrency 1 before the worker reads
// it, so wasmThreads() gives 1 thread even on a cross-origin isolated page. Benchmarks only.
const m = /threads-(\d+)/.exec(self.name);
if (m)
  Object.defineProperty(self.navigator, 'hardwareConcurrency', { value: Number(m[1]), configurable: true });
await import('../../workers/encoder.worker');
// Comlink.expose has run: tell the page it may start calling.
self.postMessage({ loupeBenchReady: true });
export {};
