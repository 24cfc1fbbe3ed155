import type { Progress } from './types';

/** PROGRESS_INTERVAL_MS: minimum milliseconds between two forwarded progress ticks. */
export const PROGRESS_INTERVAL_MS = 100;

/**
 * Wraps a progress callback so at most one tick per `intervalMs` (PROGRESS_INTERVAL_MS) crosses a
 * worker boundary; `flush()` forwards the last held tick (so the final state is always seen).
 */
export function throttle(
  fn?: (p: Progress) => void,
  now: () => number = () => Date.now(),
  intervalMs = PROGRESS_INTERVAL_MS,
) {
  let last = -Infinity;
  let held: Progress | null = null;
  const report = (p: Progress) => {
    if (!fn) return;
    const t = now();
    if (t - last >= intervalMs) {
      last = t;
      held = null;
      fn(p);
    } else held = p;
  };
  report.flush = () => {
    if (fn && held) fn(held);
    held = null;
  };
  return report;
}
