// The JS heaps of a page and of every worker it starts, read over CDP (Runtime.getHeapUsage), and the
// line that sets them against the renderer's resident set (bench-harness.ts re-exports them).
import type { BrowserContext, CDPSession, Page } from 'playwright-core';
import { MiB } from './bench-procs';

/** One target's Runtime.getHeapUsage (bytes). */
export interface TargetHeap {
  /** 'page', or the worker's script name without its build hash ('retrieval.worker', …). */
  name: string;
  /** Live objects in the V8 heap. */
  used: number;
  /** The V8 heap as allocated (used + free space the GC holds). */
  total: number;
  /** Blink's own (Oilpan) heap in use; 0 where the browser does not report it. */
  embedder: number;
  /** ArrayBuffer backing stores (typed arrays; not wasm memories); 0 where not reported. */
  backing: number;
}

type Usage = {
  usedSize: number;
  totalSize: number;
  embedderHeapUsedSize?: number;
  backingStorageSize?: number;
};

/** 'assets/retrieval.worker-AbC123.js' → 'retrieval.worker'; a blob: URL → 'worker'. */
export function workerName(url: string): string {
  const file = url.split(/[?#]/)[0].split('/').pop() ?? '';
  const m = /^(.*?)(?:-[\w-]{6,})?\.(?:m?js|ts)$/.exec(file);
  return m?.[1] || 'worker';
}

/**
 * Attaches to `page` and every worker it starts (now and later). `sample()` returns the page's and
 * each live worker's heap usage; a target that does not answer within `timeoutMs` (a worker busy in
 * one long task, or just closed) is left out of that sample.
 */
export async function attachHeaps(
  context: BrowserContext,
  page: Page,
  timeoutMs = 2000,
): Promise<{ sample(): Promise<TargetHeap[]>; detach(): Promise<void> }> {
  const cdp: CDPSession = await context.newCDPSession(page);
  /** Live workers: the session path from the page (outermost first) → its name. */
  const workers = new Map<string, { path: string[]; name: string }>();
  let nextId = 1;
  const pending = new Map<number, (r: { result?: unknown; error?: unknown }) => void>();

  /** Sends one CDP message to the target at the end of `path` (wrapped once per level but the first). */
  const sendNested = (path: string[], message: object) => {
    let msg = JSON.stringify(message);
    for (let i = path.length - 1; i >= 1; i--)
      msg = JSON.stringify({
        id: nextId++,
        method: 'Target.sendMessageToTarget',
        params: { sessionId: path[i], message: msg },
      });
    return cdp.send('Target.sendMessageToTarget', { sessionId: path[0], message: msg }).catch(() => {});
  };
  /** A message that came from the target at `path`: an answer, or an event (maybe from deeper). */
  const onMessage = (path: string[], raw: string) => {
    const m = JSON.parse(raw) as {
      id?: number;
      method?: string;
      params?: Record<string, unknown>;
      result?: unknown;
      error?: unknown;
    };
    if (m.id !== undefined) {
      pending.get(m.id)?.(m);
      pending.delete(m.id);
    } else if (m.method === 'Target.attachedToTarget') attached(path, m.params as never);
    else if (m.method === 'Target.detachedFromTarget') detached(path, m.params as never);
    else if (m.method === 'Target.receivedMessageFromTarget') {
      const p = m.params as { sessionId: string; message: string };
      onMessage([...path, p.sessionId], p.message);
    }
  };
  const attached = (outer: string[], e: { sessionId: string; targetInfo: { type: string; url: string } }) => {
    const path = [...outer, e.sessionId];
    workers.set(path.join('/'), { path, name: workerName(e.targetInfo.url) });
    // Its own workers too (ORT's threads, started by the encoder worker).
    void sendNested(path, {
      id: nextId++,
      method: 'Target.setAutoAttach',
      params: { autoAttach: true, waitForDebuggerOnStart: false, flatten: false },
    });
  };
  const detached = (outer: string[], e: { sessionId: string }) => {
    const key = [...outer, e.sessionId].join('/');
    for (const k of [...workers.keys()]) if (k === key || k.startsWith(`${key}/`)) workers.delete(k);
  };
  cdp.on('Target.attachedToTarget', (e) => attached([], e as never));
  cdp.on('Target.detachedFromTarget', (e) => detached([], e as never));
  cdp.on('Target.receivedMessageFromTarget', (e) => onMessage([e.sessionId], e.message));
  await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
  const withTimeout = <T>(p: Promise<T>, ms = timeoutMs): Promise<T | null> =>
    Promise.race([p, new Promise<null>((r) => setTimeout(() => r(null), ms))]);
  const heapOf = (name: string, u: Usage | null | undefined): TargetHeap | null =>
    (u && {
      name,
      used: u.usedSize,
      total: u.totalSize,
      embedder: u.embedderHeapUsedSize ?? 0,
      backing: u.backingStorageSize ?? 0,
    }) ||
    null;
  /** One CDP call on the page (path []) or a worker, its result (undefined on an error). */
  const call = <T>(path: string[], method: string, params: object = {}): Promise<T | undefined> =>
    path.length === 0
      ? (cdp.send(method as never, params as never) as Promise<T>).catch(() => undefined)
      : new Promise<T | undefined>((resolve) => {
          const id = nextId++;
          pending.set(id, (r) => resolve(r.result as T | undefined));
          void sendNested(path, { id, method, params });
        });
  return {
    async sample() {
      const targets = [{ path: [] as string[], name: 'page' }, ...workers.values()];
      const all = await Promise.all(
        targets.map(async (t) =>
          heapOf(t.name, await withTimeout(call<Usage>(t.path, 'Runtime.getHeapUsage'))),
        ),
      );
      for (const id of [...pending.keys()]) pending.delete(id); // answers that came too late
      return all.filter((h): h is TargetHeap => h !== null);
    },
    detach: () => cdp.detach().catch(() => {}),
  };
}

/**
 * "page 180 (+12 buffers) · retrieval.worker 600 (+40) · … · rest 250 MiB": each target's V8 heap as
 * allocated plus its ArrayBuffer backing stores (MiB), same-named targets summed, and what the
 * renderer's RSS holds beyond them (split into file-backed and shared memory when `parts` is given).
 */
export function heapLine(
  heaps: TargetHeap[],
  rssBytes: number,
  parts?: { file: number; shmem: number } | null,
): string {
  const byName = new Map<string, TargetHeap & { count: number }>();
  for (const h of heaps) {
    const b = byName.get(h.name) ?? { ...h, used: 0, total: 0, embedder: 0, backing: 0, count: 0 };
    byName.set(h.name, b);
    [b.used, b.total, b.embedder, b.backing] = [
      b.used + h.used,
      b.total + h.total,
      b.embedder + h.embedder,
      b.backing + h.backing,
    ];
    b.count++;
  }
  const m = (b: number) => Math.round(b / MiB);
  const list = [...byName.values()]
    .sort((a, b) => b.total + b.backing - (a.total + a.backing))
    .map(
      (h) =>
        `${h.name}${h.count > 1 ? ` ×${h.count}` : ''} ${m(h.used)}/${m(h.total)}` +
        (h.backing ? ` +${m(h.backing)} buffers` : '') +
        (h.embedder >= 8 * MiB ? ` +${m(h.embedder)} blink` : ''),
    );
  const counted = heaps.reduce((s, h) => s + h.total + h.backing + h.embedder, 0);
  const of = parts ? ` (of the RSS: ${m(parts.file)} file-backed, ${m(parts.shmem)} shared memory)` : '';
  return `${list.join(' · ')} · rest ${m(rssBytes - counted)} MiB${of} (heap used/allocated, MiB)`;
}
