// platform/storage/free-buffers.ts: buffers handed to freeBuffers are detached at once (their memory goes
// with a message that is never delivered), counted once each.
import { describe, expect, it } from 'vitest';
import { freeBuffers } from '../../src/lib/platform/storage/free-buffers';

describe('freeBuffers', () => {
  it('detaches the buffers and returns their bytes, each counted once', () => {
    const a = new Uint16Array(1000);
    const b = new Float32Array(10);
    const view = a.subarray(10, 20);
    expect(freeBuffers([a.buffer, b.buffer, a.buffer, view.buffer])).toBe(2000 + 40);
    expect(a.buffer.byteLength).toBe(0);
    expect(b.length).toBe(0);
    expect(view.length).toBe(0);
    // Already detached: nothing more to free.
    expect(freeBuffers([a.buffer])).toBe(0);
  });

  it('frees nothing for no buffers or empty ones', () => {
    expect(freeBuffers([])).toBe(0);
    expect(freeBuffers([new ArrayBuffer(0)])).toBe(0);
  });
});
