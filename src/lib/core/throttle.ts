import type { Progress } from './types';

/** PROGRESS_INTERVAL_MS: minimum milliseconds between two forwarded progress ticks. */
export const PROGRESS_INTERVAL_MS = 100;

/**
 * Wraps a progress callback so at most one tick per `intervalMs` (PROGRESS_INTERVAL_MS) crosses a
 * worker boundary. A tick held back is forwarded when its interval ends (a trailing timer), so the
 * line never stays a tick behind while the next step is slow; `flush()` forwards it at once and
 * cancels the timer (so the final state is seen before the job's result).
 */
export function throttle(
  fn?: (p: Progress) => void,
  now: () => number = () => Date.now(),
  intervalMs = PROGRESS_INTERVAL_MS,
) {
  let last = -Infinity;
  let held: Progress | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const send = (p: Progress) => {
    last = now();
    held = null;
    fn?.(p);
  };
  const trailing = () => {
    timer = undefined;
    if (!held) return;
    // The job may have ended without a flush and its callback been released (a Comlink proxy
    // throws then): a late tick is dropped, never an error in the worker.
    try {
      send(held);
    } catch {
      held = null;
    }
  };
  const report = (p: Progress) => {
    if (!fn) return;
    const t = now();
    if (t - last >= intervalMs) {
      clearTimeout(timer);
      timer = undefined;
      send(p);
    } else {
      held = p;
      if (timer === undefined) timer = setTimeout(trailing, Math.max(0, intervalMs - (t - last)));
    }
  };
  report.flush = () => {
    clearTimeout(timer);
    timer = undefined;
    const p = held;
    held = null;
    if (fn && p) fn(p);
  };
  return report;
}
