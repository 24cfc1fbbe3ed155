// The built site under its Content-Security-Policy: dist/ (built into a temp folder) served by
// `vite preview`, which sends the policy as a header, as public/_headers does on static hosts. The
// main flows run through the URL parameters the headless runner uses: open a demo shard, a BM25 run,
// and a dense run with a generated model (transformers.js + ONNX Runtime wasm in workers). Any
// `securitypolicyviolation` event or console report of a refused load fails the test.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build, preview, type PreviewServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentSecurityPolicy, headersFile } from '../../scripts/lib/csp';
import { launch, type Session } from './browser';

const ROOT = resolve(import.meta.dirname, '../..');
const outDir = mkdtempSync(join(tmpdir(), 'loupe-csp-dist-'));

describe('Content-Security-Policy on the built site', () => {
  let server: PreviewServer;
  let base = '';
  let session: Session;
  const reports: string[] = [];

  beforeAll(async () => {
    await build({ root: ROOT, logLevel: 'warn', build: { outDir, emptyOutDir: true } });
    server = await preview({ root: ROOT, logLevel: 'warn', build: { outDir }, preview: { port: 0 } });
    const address = server.httpServer.address();
    if (!address || typeof address === 'string') throw new Error('preview did not bind');
    base = `http://127.0.0.1:${address.port}`;
    session = await launch();
    // Violations in the page (workers report theirs on the console, caught below).
    await session.context.addInitScript(() => {
      const w = window as unknown as { cspViolations: string[] };
      w.cspViolations = [];
      document.addEventListener('securitypolicyviolation', (e) =>
        w.cspViolations.push(
          `${e.effectiveDirective} blocked ${e.blockedURI} (${e.sourceFile}:${e.lineNumber})`,
        ),
      );
    });
    session.page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) reports.push(m.text());
    });
    session.page.on('worker', (w) =>
      w.on('console', (m) => {
        if (/Content Security Policy|Refused to/i.test(m.text()))
          reports.push(`worker ${w.url()}: ${m.text()}`);
      }),
    );
  }, 300_000);

  afterAll(async () => {
    await session?.dispose();
    await server?.close();
    rmSync(outDir, { recursive: true, force: true });
  });

  /** Opens the app with these URL parameters and waits for a phase; returns the page's violations. */
  async function visit(query: Record<string, string>, phase: string): Promise<string[]> {
    const page = session.page;
    await page.goto(`${base}/?${new URLSearchParams(query)}`);
    await page.waitForSelector(
      `[data-testid="app"][data-phase="${phase}"], [data-testid="app"][data-phase="error"], [data-testid="shard-issues"]`,
      { timeout: 240_000 },
    );
    const message = await page.locator('[data-testid="message"]').allInnerTexts();
    expect(await page.getAttribute('[data-testid="app"]', 'data-phase'), message.join('\n')).toBe(phase);
    return page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations);
  }

  it('is sent as a header and as <meta>, the same policy as public/_headers', async () => {
    const res = await fetch(`${base}/`);
    expect(res.headers.get('content-security-policy')).toBe(contentSecurityPolicy());
    const html = await res.text();
    expect(html).toContain(`content="${contentSecurityPolicy({ meta: true })}"`);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
    // _headers: the framable policy everywhere, plus frame-ancestors 'none' for the app's own page.
    expect(readFileSync(join(outDir, '_headers'), 'utf8')).toBe(headersFile());
    expect(readFileSync(join(ROOT, 'public/_headers'), 'utf8')).toBe(headersFile());
    // embed.html may be framed by any page: its policy has no frame-ancestors.
    const embed = await fetch(`${base}/embed.html`);
    expect(embed.headers.get('content-security-policy')).toBe(contentSecurityPolicy({ framed: true }));
    expect(await embed.text()).toContain(`content="${contentSecurityPolicy({ meta: true })}"`);
    // Workers get the policy from their own response.
    // The build's asset URLs are relative to the page (base './').
    const js = html.match(/src="\.?(\/assets\/[^"]+\.js)"/)?.[1];
    expect(js).toBeTruthy();
    expect((await fetch(`${base}${js}`)).headers.get('content-security-policy')).toBe(
      contentSecurityPolicy(),
    );
  });

  it('opens a demo shard and runs BM25 without a violation', async () => {
    const shard = `${base}/shards/medquad/`;
    expect(await visit({ shard }, 'ready')).toEqual([]);
    expect(await visit({ shard, run: '1' }, 'done')).toEqual([]);
    expect(reports).toEqual([]);
  });

  it('runs a dense retriever (generated model, ONNX Runtime wasm in workers) without a violation', async () => {
    const query = {
      shard: `${base}/shards/vqa-rad/`,
      retriever: 'dense',
      model: 'loupe-test/clip-tiny-random',
      device: 'wasm',
      dtype: 'fp32',
      task: 'text-to-image',
      run: '1',
    };
    expect(await visit(query, 'done')).toEqual([]);
    expect(await session.page.locator('[data-testid="runs-table"] tbody tr').count()).toBeGreaterThan(0);
    expect(reports).toEqual([]);
  });
});
