// Frees ArrayBuffers at once instead of when their context's next major GC finds them: they are
// transferred into a message that is never delivered (its port is closed), which detaches them and
// drops their memory with the message. For buffers nothing uses any more, in workers that hold
// large ones briefly (a released BM25 index: its 160 MB stayed about 8 s in an idle worker; the
// float16 pieces of a precomputed set read one after another: up to 120 MB of them waited for the GC
// while 1M rows streamed, bench:scale --trace).

/**
 * Detaches `buffers` (duplicates and empty ones skipped); returns the bytes freed. Only plain
 * buffers the caller owns (never a wasm memory's: some engines copy those instead of refusing).
 */
export function freeBuffers(buffers: Iterable<ArrayBufferLike>): number {
  const list = [...new Set(buffers)].filter(
    (b): b is ArrayBuffer => b instanceof ArrayBuffer && b.byteLength > 0,
  );
  const bytes = list.reduce((s, b) => s + b.byteLength, 0);
  if (!list.length || typeof MessageChannel === 'undefined') return 0;
  const { port1, port2 } = new MessageChannel();
  try {
    port1.postMessage(null, list);
  } catch {
    // A buffer that cannot be transferred: all are left to the GC.
    return 0;
  } finally {
    port1.close();
    port2.close();
  }
  return bytes;
}
