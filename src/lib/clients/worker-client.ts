import * as Comlink from 'comlink';
import type { Progress } from '../core/types';

/** Options every long call takes. Hard cancel: abort terminates the worker. */
export interface JobOptions {
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
}

export function abortError(): Error {
  return new DOMException('The operation was cancelled', 'AbortError');
}

export function isAbortError(e: unknown): boolean {
  return (e as { name?: string } | null)?.name === 'AbortError';
}

/**
 * Owns one lazily started worker. `run` calls into it; when the signal aborts, the worker is
 * terminated (the only way to stop synchronous work inside it), the call rejects with an
 * AbortError and the next call starts a fresh worker. A worker that errors is dropped the same way.
 */
export class WorkerClient<Api> {
  #make: () => Worker;
  #worker: Worker | null = null;
  #remote: Comlink.Remote<Api> | null = null;
  /** Rejecters of calls in flight: a worker that dies must not leave a promise hanging. */
  #pending = new Set<(e: unknown) => void>();
  #generation = 0;

  constructor(make: () => Worker) {
    this.#make = make;
  }

  /**
   * Which worker this is: changes whenever a new worker starts (after a terminate, a cancel or a
   * crash), so state kept about the worker (a loaded model) can tell it is gone. 0: none yet.
   */
  get generation(): number {
    return this.#remote ? this.#generation : 0;
  }

  /** Whether a call is in flight (stopping the worker now would reject it). */
  get busy(): boolean {
    return this.#pending.size > 0;
  }

  get remote(): Comlink.Remote<Api> {
    if (!this.#remote) {
      const w = this.#make();
      w.addEventListener('error', (e) => {
        e.preventDefault();
        this.#fail(new Error(`worker failed: ${e.message || 'could not start'}`));
      });
      this.#worker = w;
      this.#remote = Comlink.wrap<Api>(w);
      this.#generation++;
    }
    return this.#remote;
  }

  terminate() {
    this.#fail(abortError());
  }

  #fail(reason: unknown) {
    this.#remote?.[Comlink.releaseProxy]();
    this.#worker?.terminate();
    this.#worker = null;
    this.#remote = null;
    for (const reject of [...this.#pending]) reject(reason);
    this.#pending.clear();
  }

  /** Runs `call` against the worker, terminating it if `signal` aborts first. */
  async run<T>(call: (remote: Comlink.Remote<Api>) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw abortError();
    const remote = this.remote;
    let reject!: (e: unknown) => void;
    const stopped = new Promise<never>((_, r) => (reject = r));
    const onAbort = () => this.terminate();
    this.#pending.add(reject);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await Promise.race([call(remote), stopped]);
    } finally {
      this.#pending.delete(reject);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** Wraps a progress callback for comlink (functions cannot be structured-cloned). */
export function proxyProgress(fn?: (p: Progress) => void) {
  return fn ? Comlink.proxy(fn) : undefined;
}
