// The progress line of an import by URL (issue 36 item 4), in real Chromium: a shard of 20,000
// documents with precomputed vectors (make-scale-shard, in a temporary folder) on a plain static
// host on another origin that sends corpus.jsonl slowly (a slow link), so that reading it lasts
// seconds. Every line the page shows during the import is recorded (a MutationObserver on the job's
// line, with its data-phase): the line never sits at the job's title; the steps come in order
// (shard.json, parsing with bytes of the file's length and a time left, caching the documents with
// their count, the precomputed embeddings with their file's bytes, the id directory).
import { execFileSync } from 'node:child_process';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launch, pageErrors } from './browser';

const baseUrl = inject('baseUrl');
const ROOT = resolve(import.meta.dirname, '../..');
const DOCS = 20_000;
const MODEL = 'loupe-test/bert-tiny-random';
/** corpus.jsonl is sent in pieces of this many bytes, one every TRICKLE_MS. */
const PIECE = 256 * 1024;
const TRICKLE_MS = 40;

const CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Headers': 'Range, If-Range',
  'Access-Control-Expose-Headers': 'Content-Range, Content-Length, Accept-Ranges',
  'Cross-Origin-Resource-Policy': 'cross-origin',
};

/** Serves `root` at `/shard/`, with Content-Length; corpus.jsonl is sent slowly, in pieces. */
async function slowHost(root: string): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    if (req.method === 'OPTIONS') return void res.writeHead(204, CORS).end();
    const file = resolve(root, path.replace(/^\/shard\//, ''));
    if (
      !path.startsWith('/shard/') ||
      !file.startsWith(root + sep) ||
      !existsSync(file) ||
      !statSync(file).isFile()
    )
      return void res.writeHead(404, { ...CORS, 'Content-Type': 'text/plain' }).end('not found');
    const size = statSync(file).size;
    res.writeHead(200, {
      ...CORS,
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(size),
    });
    if (req.method === 'HEAD') return void res.end();
    if (!path.endsWith('/corpus.jsonl')) return void createReadStream(file).pipe(res);
    const stream = createReadStream(file, { highWaterMark: PIECE });
    stream.on('data', (chunk) => {
      stream.pause();
      res.write(chunk, () => setTimeout(() => stream.resume(), TRICKLE_MS));
    });
    stream.on('end', () => res.end());
    res.on('close', () => stream.destroy());
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/shard/`,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of sockets) s.destroy();
      }),
  };
}

interface Seen {
  at: number;
  phase: string | null;
  text: string;
}

/** Records every text and phase of the job's line from the page's start (an init script). */
async function recordLines(page: Page): Promise<() => Promise<Seen[]>> {
  await page.addInitScript(() => {
    const seen: Seen[] = [];
    (window as unknown as { loupeLines: Seen[] }).loupeLines = seen;
    const note = () => {
      const el = document.querySelector('[data-testid="job"]');
      if (!el) return;
      const text = el.querySelector('.text')?.textContent ?? '';
      const phase = el.getAttribute('data-phase');
      const last = seen.at(-1);
      if (last && last.text === text && last.phase === phase) return;
      seen.push({ at: performance.now(), phase, text });
    };
    new MutationObserver(note).observe(document, {
      subtree: true,
      childList: true,
      characterData: true,
      attributes: true,
      attributeFilter: ['data-phase'],
    });
  });
  return () => page.evaluate(() => (window as unknown as { loupeLines: Seen[] }).loupeLines);
}

describe('the progress line of an import by URL (issue 36 item 4)', () => {
  let dir = '';
  let host: Awaited<ReturnType<typeof slowHost>>;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loupe-import-progress-'));
    execFileSync(
      'npx',
      [
        'tsx',
        'scripts/make-scale-shard.ts',
        ...['--docs', String(DOCS), '--queries', '200', '--vectors', 'random', '--model', MODEL],
        ...['--out', dir],
      ],
      { cwd: ROOT, stdio: 'pipe' },
    );
    host = await slowHost(dir);
  }, 120_000);
  afterAll(async () => {
    await host?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('says a phase with a count from the start, the file read of its length with a time left, then each step in order', async () => {
    const s = await launch();
    try {
      const { page } = s;
      const lines = await recordLines(page);
      await page.goto(`${baseUrl}/#/shards`);
      await page.waitForSelector('[data-testid="app"][data-phase="idle"]', { timeout: 120_000 });
      await page.fill('[data-testid="url-input"]', host.url);
      await page.click('[data-testid="url-input"] ~ button');
      // Until the id directory is built (the import's last step: a line after its last one) or an
      // error is shown. (Its closing count may not be seen: the line shows the latest tick, and the
      // next step can replace it at once.)
      await page.waitForFunction(
        () => {
          const seen = (window as unknown as { loupeLines: Seen[] }).loupeLines;
          let ids = -1;
          seen.forEach((l, i) => /^Indexing document ids: /.test(l.text) && (ids = i));
          return (
            (ids >= 0 && ids < seen.length - 1) ||
            !!document.querySelector('[data-testid="message"][data-kind="error"]')
          );
        },
        null,
        { timeout: 300_000, polling: 250 },
      );
      const errors = await page.locator('[data-testid="message"][data-kind="error"]').allInnerTexts();
      expect(errors).toEqual([]);
      const seen = await lines();
      // The lines as seen, for a person to read (.test-results/, ignored).
      mkdirSync(resolve(ROOT, '.test-results'), { recursive: true });
      writeFileSync(
        resolve(ROOT, '.test-results/import-progress-lines.txt'),
        seen.map((l) => `${(l.at / 1000).toFixed(1)} s\t${l.phase ?? '-'}\t${l.text}`).join('\n') + '\n',
      );
      const texts = seen.map((l) => l.text);
      const first = (re: RegExp) => texts.findIndex((t) => re.test(t));
      const all = (re: RegExp) => seen.filter((l) => re.test(l.text));

      // The job's title ("Loading <url>") gives way at once to a step with a phase: no line of the
      // import after it is without one.
      let end = -1;
      texts.forEach((t, i) => /^Indexing document ids: [\d,]+ \/ 20,000$/.test(t) && (end = i));
      expect(end).toBeGreaterThan(0);
      expect(seen.filter((l) => l.text.startsWith('Loading ')).length).toBeLessThanOrEqual(1);
      expect(
        seen.slice(0, end + 1).filter((l) => l.phase === null && !l.text.startsWith('Loading ')),
      ).toEqual([]);

      // Parsing the corpus: its lines, the bytes read of its length, and (once measurable) a time left.
      const size = statSync(join(dir, 'corpus.jsonl')).size;
      const mib = (size / 1024 / 1024).toFixed(size < 10 * 1024 * 1024 ? 1 : 0);
      const parsing = all(/^Parsing corpus\.jsonl: line [\d,]+ \(/);
      expect(parsing.length).toBeGreaterThan(3);
      expect(parsing.every((l) => l.phase === 'parse' && l.text.includes(` of ${mib} MiB)`))).toBe(true);
      expect(parsing.some((l) => / · [\d,]+ docs\/s · (\d+ min )?\d+ s left$/.test(l.text))).toBe(true);

      // The steps in order: shard.json, parsing, caching the documents (counted), the precomputed
      // embeddings with their vectors' bytes of the file's length, the id directory.
      const order = [
        /^(Opening .*: reading shard\.json|Reading .*: shard\.json)$/,
        /^Parsing corpus\.jsonl: line/,
        /^Caching in IndexedDB: [\d,]+ \/ 20,000 documents/,
        /^Checking the precomputed embeddings$/,
        /^Reading embeddings\/.*\.npy: .* of .*$/,
        /^Indexing document ids: [\d,]+ \/ 20,000$/,
      ].map(first);
      expect(order.every((i) => i >= 0)).toBe(true);
      expect([...order].sort((a, b) => a - b)).toEqual(order);
      expect(pageErrors(page).filter((e) => !/Failed to load resource|net::ERR_/.test(e))).toEqual([]);
    } finally {
      await s.close();
    }
  }, 400_000);
});
