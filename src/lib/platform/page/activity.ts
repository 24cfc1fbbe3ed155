// What the page is doing in the foreground (jobs, model loads), so that background work (the
// offline cache's download of the app shell and ONNX Runtime) waits until the page is quiet rather
// than competing with a fresh visit's first query for the same two cores and connections: on a
// 100k packed shard here, filling the cache during the visit made its first dense result 0.35 s
// later (BENCHMARKS.md, first dense result).

let inFlight = 0;
let lastEnd = 0;

/** Counts `work` as foreground activity until it settles; returns it unchanged. */
export function foreground<T>(work: Promise<T>): Promise<T> {
  inFlight++;
  return work.finally(() => {
    inFlight--;
    lastEnd = performance.now();
  });
}

/** Whether foreground work is under way. */
export function foregroundBusy(): boolean {
  return inFlight > 0;
}

/**
 * Resolves once no foreground work has run for `quietMs` (counted from the call at the earliest),
 * or after `maxMs` whatever the page is doing, so that a long import does not put it off forever.
 */
export function whenQuiet(quietMs = 2000, maxMs = 60_000, pollMs = 250): Promise<void> {
  const start = performance.now();
  return new Promise((resolve) => {
    const check = () => {
      const now = performance.now();
      const quietSince = Math.max(start, lastEnd);
      if ((inFlight === 0 && now - quietSince >= quietMs) || now - start >= maxMs) resolve();
      else setTimeout(check, pollMs);
    };
    setTimeout(check, pollMs);
  });
}
