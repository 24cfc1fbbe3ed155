import { describe, expect, it } from 'vitest';
import { foreground, foregroundBusy, whenQuiet } from '../../src/lib/platform/page/activity';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('foreground activity and background work', () => {
  it('waits until no foreground work has run for the quiet time', async () => {
    let release!: () => void;
    const work = foreground(new Promise<void>((r) => (release = r)));
    expect(foregroundBusy()).toBe(true);
    let quietAt = 0;
    const t0 = performance.now();
    const quiet = whenQuiet(60, 10_000, 5).then(() => (quietAt = performance.now()));
    await sleep(120);
    // Still busy after twice the quiet time: not resolved.
    expect(quietAt).toBe(0);
    const ended = performance.now();
    release();
    await work;
    expect(foregroundBusy()).toBe(false);
    await quiet;
    expect(quietAt - ended).toBeGreaterThanOrEqual(55);
    expect(quietAt - t0).toBeGreaterThanOrEqual(170);
  });

  it('gives up waiting after the longest wait', async () => {
    let release!: () => void;
    const work = foreground(new Promise<void>((r) => (release = r)));
    const t0 = performance.now();
    await whenQuiet(60, 100, 5);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(95);
    expect(foregroundBusy()).toBe(true);
    release();
    await work;
  });

  it('a failed job counts as ended', async () => {
    await foreground(Promise.reject(new Error('x'))).catch(() => undefined);
    expect(foregroundBusy()).toBe(false);
  });
});
