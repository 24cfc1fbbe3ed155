// Performance marks of one ad-hoc Search query, by stage, for `npm run bench:latency` and the
// browser's performance panel: `loupe:tokenize`, `loupe:preprocess` (image decode and resize),
// `loupe:encode`, `loupe:search`, `loupe:fuse`, `loupe:render`, and `loupe:query` end to end (from the
// Search action to the results painted). Worker-side stages are timed in the worker and placed on the
// page's timeline by their duration. Each query clears the previous one's entries, so the buffer
// never grows.

/** The stages of a query, in order. */
export const QUERY_STAGES = ['tokenize', 'preprocess', 'encode', 'search', 'fuse', 'render'] as const;
export type QueryStage = (typeof QUERY_STAGES)[number];

const PREFIX = 'loupe:';
const START = `${PREFIX}query-start`;
const RESULTS = `${PREFIX}results-set`;

function names(): string[] {
  return [...QUERY_STAGES, 'query'].map((s) => PREFIX + s);
}

/** Starts a query's timeline (and forgets the previous query's). */
export function beginQuery(): void {
  for (const n of names()) performance.clearMeasures(n);
  performance.clearMarks(START);
  performance.clearMarks(RESULTS);
  performance.mark(START);
}

/** Records `durationMs` of `stage` from `start` (worker-side stages: durations timed in the worker). */
export function stageTook(stage: QueryStage, start: number, durationMs: number): void {
  performance.measure(PREFIX + stage, { start, duration: durationMs });
}

/** Runs `fn` and records its wall time as `stage` (added to what the stage already has). */
export async function timeStage<T>(stage: QueryStage, fn: () => Promise<T> | T): Promise<T> {
  const t0 = performance.now();
  try {
    return await fn();
  } finally {
    performance.measure(PREFIX + stage, { start: t0, end: performance.now() });
  }
}

/** The results are in the state: rendering starts. */
export function resultsSet(): void {
  performance.mark(RESULTS);
}

/**
 * The results are painted (call after the DOM update): ends `render` and `query`. Waits for the
 * next frame and a task after it, so the time includes layout and paint.
 */
export function afterPaint(): Promise<void> {
  if (performance.getEntriesByName(RESULTS, 'mark').length === 0) return Promise.resolve();
  return new Promise((resolve) =>
    requestAnimationFrame(() =>
      setTimeout(() => {
        if (performance.getEntriesByName(`${PREFIX}query`, 'measure').length === 0) {
          performance.measure(`${PREFIX}render`, RESULTS);
          performance.measure(`${PREFIX}query`, START);
        }
        resolve();
      }, 0),
    ),
  );
}
