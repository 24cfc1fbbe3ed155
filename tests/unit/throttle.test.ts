import { describe, expect, it } from 'vitest';
import { throttle } from '../../src/lib/core/throttle';
import type { Progress } from '../../src/lib/core/types';

const tick = (done: number): Progress => ({ kind: 'embed', done, total: 10, docsPerSec: 1 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('throttle', () => {
  it('forwards at most one tick per interval, and the held one when the interval ends', async () => {
    const seen: Progress[] = [];
    const report = throttle((p) => seen.push(p), undefined, 50);
    report(tick(1));
    report(tick(2));
    report(tick(3));
    expect(seen).toEqual([tick(1)]);
    // No further tick comes (the next step is slow): the held one is not left behind.
    await sleep(120);
    expect(seen).toEqual([tick(1), tick(3)]);
    // An interval later a tick goes at once again; the next is held, then forwarded in its turn.
    report(tick(4));
    report(tick(5));
    expect(seen).toEqual([tick(1), tick(3), tick(4)]);
    await sleep(120);
    expect(seen).toEqual([tick(1), tick(3), tick(4), tick(5)]);
  });

  it('flush forwards the held tick at once and cancels the timer (no tick after the job)', async () => {
    const seen: Progress[] = [];
    const report = throttle((p) => seen.push(p), undefined, 50);
    report(tick(1));
    report(tick(2));
    report.flush();
    expect(seen).toEqual([tick(1), tick(2)]);
    await sleep(120);
    expect(seen).toEqual([tick(1), tick(2)]);
    report.flush();
    expect(seen).toHaveLength(2);
  });

  it('drops a late tick whose callback throws (a released proxy) instead of raising it', async () => {
    let released = false;
    const seen: Progress[] = [];
    const report = throttle(
      (p) => {
        if (released) throw new Error('Proxy has been released and is not useable');
        seen.push(p);
      },
      undefined,
      50,
    );
    report(tick(1));
    report(tick(2));
    released = true;
    await sleep(120);
    expect(seen).toEqual([tick(1)]);
  });
});
