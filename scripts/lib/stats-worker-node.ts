// workers/stats.worker.ts in a Node worker thread, for benchmarks: the worker's global scope is
// given Comlink's Node endpoint (postMessage / addEventListener over parentPort), so the module runs
// unchanged and its arguments cross by structured clone as they do in the browser.
import { parentPort } from 'node:worker_threads';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';

Object.assign(globalThis, nodeEndpoint(parentPort!));
await import('../../workers/stats.worker');
