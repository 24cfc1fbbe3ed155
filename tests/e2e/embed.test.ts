// The teacher's embed: dist/ on a plain static server under a sub-path (no COOP/COEP; CORS as
// GitHub Pages sends it), the app's "Embed this" dialog writes the snippets, and a course page on a
// second origin pastes both (the <loupe-search> element and the iframe) next to styles of its own.
// Both reach loupe-ready, answer the preset text query and an image + text query through their
// events, the host page's styles stay as they were, and its styles do not reach the embeds.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Frame } from 'playwright-core';
import { launch, pageErrors, type Session } from './browser';
import { buildSite, serveStatic, type StaticServer } from './static-server';
import { shotPath } from './artifacts';

const ROOT = resolve(import.meta.dirname, '../..');
const OUT = join(ROOT, '.test-results/embed-dist');
const PREFIX = '/course/loupe/';
const TASK = 'image-question-to-passage';
const QUERY = 'is there a pneumothorax?';
const IMAGE = 'shards/vqa-rad/images/synpic100132.jpg';
const CLIP = 'loupe-test/clip-tiny-random';

/** The course page's own look, written to clash with everything the embed draws. */
const HOST_STYLE = `
  body { font-family: Georgia, serif; color: rgb(0, 0, 128); background: rgb(255, 250, 240); }
  p, li { font-size: 19px; }
  button, input, textarea, select { background: rgb(255, 0, 0) !important; font-size: 31px !important; }
  iframe { border: 9px dashed rgb(0, 128, 0) !important; }
  * { letter-spacing: 3px; }
`;

interface Recorded {
  from: 'element' | 'iframe';
  type: string;
  detail: {
    task?: string;
    threads?: number;
    text?: string;
    image?: boolean;
    retriever?: string;
    columns?: { label: string; hits: { docId: string; score: number }[] }[];
    randomWeights?: boolean;
    message?: string;
  };
}

/** The course page: the dialog's two snippets, and a recorder of what both report. */
function hostPage(element: string, iframe: string, loupeOrigin: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Radiology 101, week 3</title><style>${HOST_STYLE}</style></head>
<body>
<p id="host-text">Week 3: find the images that answer a question.</p>
<script>
  window.events = [];
  for (const type of ['loupe-ready', 'loupe-results', 'loupe-error'])
    document.addEventListener(type, (e) => events.push({ from: 'element', type, detail: e.detail }));
  addEventListener('message', (e) => {
    if (e.origin !== ${JSON.stringify(loupeOrigin)} || e.data?.source !== 'loupe-embed') return;
    if (e.source !== document.querySelector('#frame-holder iframe').contentWindow) return;
    events.push({ from: 'iframe', type: e.data.type, detail: e.data.detail });
  });
</script>
<section id="element-holder">${element}</section>
<section id="frame-holder">${iframe}</section>
<p id="host-after">After the demo.</p>
</body></html>`;
}

describe('the embed: <loupe-search> and embed.html on a course page of another origin', () => {
  let loupe: StaticServer;
  let host: StaticServer;
  let hostDir: string;
  let s: Session;

  beforeAll(async () => {
    buildSite(OUT);
    loupe = await serveStatic(OUT, PREFIX, { cors: true });
    hostDir = mkdtempSync(join(tmpdir(), 'loupe-host-'));
    host = await serveStatic(hostDir, '/');
    s = await launch();
  }, 300_000);
  afterAll(async () => {
    await s?.dispose();
    await loupe?.close();
    await host?.close();
    if (hostDir) rmSync(hostDir, { recursive: true, force: true });
  });

  test('the build measures the embed and writes the element at the root of dist/', () => {
    const size = JSON.parse(readFileSync(join(OUT, 'embed-size.json'), 'utf8'));
    const files = size.files.map((f: { file: string }) => f.file);
    expect(files).toContain('loupe-embed.js');
    expect(files.some((f: string) => /shard\.worker-/.test(f))).toBe(true);
    // No wasm, no model, no shard counted.
    expect(files.filter((f: string) => /\.wasm$|^models\/|^shards\//.test(f))).toEqual([]);
    expect(size.ownGzip).toBe(size.elementGzip + size.pageGzip + size.workersGzip);
    console.log(
      `embed own code ${(size.ownGzip / 1024).toFixed(1)} kB gzipped: element ${(size.elementGzip / 1024).toFixed(1)}, ` +
        `page ${(size.pageGzip / 1024).toFixed(1)}, workers ${(size.workersGzip / 1024).toFixed(1)}; ` +
        `encoder worker ${(size.encoderWorkerGzip / 1024).toFixed(1)}`,
    );
  });

  test('the dialog writes both snippets; pasted into a page of another origin, both answer a text and an image + text query', async () => {
    const { page } = s;
    const errors = pageErrors(page);
    // The teacher: the demo shard, a task, BM25 and a question, then "Embed this".
    await page.goto(
      `${loupe.url}?shard=shards/vqa-rad/&task=${TASK}&search-model=bm25&q=${encodeURIComponent(QUERY)}#/search`,
    );
    await page.waitForSelector('[data-testid="app"][data-phase="ready"]', { timeout: 120_000 });
    await page.click('[data-testid="embed-this"]');
    const element = await page.locator('[data-testid="embed-snippet-element"]').inputValue();
    const iframe = await page.locator('[data-testid="embed-snippet-iframe"]').inputValue();
    expect(element).toContain(`src="${loupe.url}loupe-embed.js"`);
    expect(element).toContain(
      `<loupe-search shard="shards/vqa-rad/" task="${TASK}" model="bm25" query="${QUERY}"`,
    );
    expect(iframe).toContain(`${loupe.url}embed.html?shard=shards%2Fvqa-rad%2F&amp;task=${TASK}`);
    expect(iframe).toContain('allow="cross-origin-isolated"');
    expect(await page.locator('[data-testid="embed-isolation"]').innerText()).toMatch(
      /One thread.*Two threads/s,
    );
    await page.screenshot({ path: shotPath('embed-dialog.png'), fullPage: false });
    // On a phone the dialog fits the width (its snippets wrap inside their boxes).
    await page.setViewportSize({ width: 390, height: 800 });
    expect(
      await page.evaluate(() => {
        const d = document.querySelector('[data-testid="embed-dialog"]')!.getBoundingClientRect();
        return document.documentElement.scrollWidth <= innerWidth && d.right <= innerWidth && d.left >= 0;
      }),
    ).toBe(true);
    await page.setViewportSize({ width: 1400, height: 1000 });
    expect(errors).toEqual([]);

    // The course page on another origin.
    const loupeOrigin = new URL(loupe.url).origin;
    writeFileSync(join(hostDir, 'week3.html'), hostPage(element, iframe, loupeOrigin));
    const course = await s.context.newPage();
    const courseErrors = pageErrors(course);
    const hostLook = () =>
      course.evaluate(() => {
        const p = getComputedStyle(document.getElementById('host-text')!);
        return {
          font: p.fontFamily,
          color: p.color,
          size: p.fontSize,
          spacing: p.letterSpacing,
          bg: getComputedStyle(document.body).backgroundColor,
          // Nothing of Loupe's in the course page's own document.
          sheets: document.styleSheets.length,
          heads: [...document.head.children].map((e) => e.tagName).join(','),
        };
      });
    // What the pasted snippets print: the iframe's listener logs its frame's events (and only its).
    const logged: string[] = [];
    course.on('console', (m) => logged.push(m.text()));
    await course.goto(`${host.url}week3.html`);
    const events = () => course.evaluate(() => (window as unknown as { events: Recorded[] }).events);
    const waitFor = async (from: string, type: string, n = 1) => {
      await expect
        .poll(async () => (await events()).filter((e) => e.from === from && e.type === type).length, {
          timeout: 150_000,
        })
        .toBeGreaterThanOrEqual(n);
      return (await events()).filter((e) => e.from === from && e.type === type)[n - 1];
    };

    // Both ready, on one thread (the course page is not cross-origin isolated), with the preset task.
    for (const from of ['element', 'iframe'] as const) {
      const ready = await waitFor(from, 'loupe-ready');
      expect(ready.detail).toMatchObject({ task: TASK, threads: 1, retriever: 'bm25' });
    }
    // The preset text query: BM25, the same 10 results in both.
    const elText = await waitFor('element', 'loupe-results');
    const frText = await waitFor('iframe', 'loupe-results');
    for (const r of [elText, frText]) {
      expect(r.detail).toMatchObject({ task: TASK, text: QUERY, image: false, retriever: 'BM25' });
      expect(r.detail.columns![0].hits).toHaveLength(10);
      for (const h of r.detail.columns![0].hits) expect(h.score).toBeGreaterThan(0);
    }
    expect(frText.detail.columns).toEqual(elText.detail.columns);
    expect((await events()).filter((e) => e.type === 'loupe-error')).toEqual([]);
    // The iframe snippet's listener took its own frame's ready and results, not the element's (whose
    // frame posts to this page too).
    await expect.poll(() => logged.filter((t) => /^loupe-results\b/.test(t)).length).toBe(1);
    expect(logged.filter((t) => /^loupe-ready\b/.test(t))).toHaveLength(1);

    // What they show: the results inside the element's shadow root and inside the iframe.
    // (Playwright's CSS locators pierce open shadow roots.)
    const elementFrame = (await (await course
      .locator('loupe-search iframe')
      .elementHandle())!.contentFrame())!;
    const iframeFrame = (await (await course
      .locator('#frame-holder iframe')
      .elementHandle())!.contentFrame())!;
    // The pasted frame follows its content's height (it was pasted with height="520"): the embed's
    // document is as tall as the frame shows, with results in it.
    const pastedFit = async () => {
      const inner = await course.evaluate(() => document.querySelector('#frame-holder iframe')!.clientHeight);
      const content = await iframeFrame.evaluate(() => document.documentElement.scrollHeight);
      return { inner, fits: Math.abs(inner - content) <= 1 };
    };
    // (A frame outside the viewport is not laid out again: Chromium throttles hidden cross-origin frames.)
    await course.locator('#frame-holder iframe').scrollIntoViewIfNeeded();
    await expect.poll(pastedFit, { timeout: 30_000 }).toMatchObject({ fits: true });
    expect((await pastedFit()).inner).not.toBe(518);
    for (const f of [elementFrame, iframeFrame]) {
      const first = await f.locator('[data-testid="results"] li button').first().getAttribute('data-doc');
      expect(first).toBe(elText.detail.columns![0].hits[0].docId);
    }

    // The host page's styles are untouched, and they do not reach inside either embed.
    const before = await hostLook();
    expect(before).toMatchObject({
      color: 'rgb(0, 0, 128)',
      size: '19px',
      spacing: '3px',
      bg: 'rgb(255, 250, 240)',
    });
    expect(before.font).toContain('Georgia');
    const look = (f: Frame) =>
      f.evaluate(() => {
        const b = getComputedStyle(document.querySelector('[data-testid="search-submit"]')!);
        const li = getComputedStyle(document.querySelector('[data-testid="results"] li')!);
        return {
          buttonBg: b.backgroundColor,
          buttonSize: b.fontSize,
          spacing: li.letterSpacing,
          font: li.fontFamily,
        };
      });
    for (const f of [elementFrame, iframeFrame]) {
      const l = await look(f);
      expect(l.buttonBg).not.toBe('rgb(255, 0, 0)');
      expect(l.buttonSize).not.toBe('31px');
      expect(l.spacing).toBe('normal');
      expect(l.font).not.toContain('Georgia');
    }
    // The element's own frame keeps its border (the page's `iframe` rule stops at the shadow root);
    // the pasted iframe is the page's own element, and the page's rule applies to it, as it should.
    const borders = await course.evaluate(() => ({
      element: getComputedStyle(document.querySelector('loupe-search')!.shadowRoot!.querySelector('iframe')!)
        .borderTopStyle,
      pasted: getComputedStyle(document.querySelector('#frame-holder iframe')!).borderTopStyle,
    }));
    expect(borders).toEqual({ element: 'solid', pasted: 'dashed' });

    // An image + text query with the generated CLIP model: the element by its attributes (an image
    // with no mode: it is searched with the text), the iframe by a message that names no model: its
    // BM25 cannot read images, so it switches to the image model and says so.
    await course.evaluate(
      ({ model, image }) => {
        const el = document.querySelector('loupe-search')!;
        el.setAttribute('model', model);
        el.setAttribute('image', image);
      },
      { model: CLIP, image: IMAGE },
    );
    const elImage = await waitFor('element', 'loupe-results', 2);
    await course.evaluate(
      ({ image, origin }) => {
        const f = document.querySelector('#frame-holder iframe') as HTMLIFrameElement;
        f.contentWindow!.postMessage(
          {
            source: 'loupe-embed',
            type: 'loupe-search',
            set: { mode: 'image+text', image, query: 'is there a pneumothorax?' },
          },
          origin,
        );
      },
      { image: IMAGE, origin: loupeOrigin },
    );
    const frImage = await waitFor('iframe', 'loupe-results', 2);
    expect(
      await iframeFrame.locator('[data-testid="message"][data-kind="warning"]').allInnerTexts(),
    ).toContainEqual(
      expect.stringMatching(
        /BM25 cannot read images: switched to CLIP tiny.*, which loads before the first image query/,
      ),
    );
    for (const r of [elImage, frImage]) {
      expect(r.detail).toMatchObject({ text: QUERY, image: true, randomWeights: true });
      expect(r.detail.retriever).toMatch(/clip/i);
      expect(r.detail.columns!.length).toBeGreaterThanOrEqual(1);
      for (const c of r.detail.columns!) expect(c.hits).toHaveLength(10);
    }
    expect(frImage.detail.columns).toEqual(elImage.detail.columns);
    // Random weights and one thread are said in the embed too.
    for (const f of [elementFrame, iframeFrame]) {
      await f.waitForSelector('[data-testid="random-weights"]');
      // The cause named is the course page (not isolated), not the iframe's allow attribute.
      expect(await f.locator('[data-testid="isolation-note"]').innerText()).toMatch(
        /One thread: the page that embeds Loupe is not cross-origin isolated/,
      );
    }
    expect(await hostLook()).toEqual(before);
    // A phone-width course page: nothing inside either embed is wider than its frame.
    for (const width of [390, 1024]) {
      await course.setViewportSize({ width, height: 900 });
      for (const f of [elementFrame, iframeFrame])
        expect(await f.evaluate(() => document.documentElement.scrollWidth <= innerWidth)).toBe(true);
    }
    await course.setViewportSize({ width: 390, height: 900 });
    await course.screenshot({ path: shotPath('embed-course-page-390.png'), fullPage: true });
    await course.setViewportSize({ width: 1280, height: 900 });
    expect((await events()).filter((e) => e.type === 'loupe-error')).toEqual([]);
    await course.screenshot({ path: shotPath('embed-course-page.png'), fullPage: true });
    expect(courseErrors).toEqual([]);
    await course.close();
  });

  test('the element fits its content; the embed sends H5P- and Embedly-style resize messages; the dialog warns on a host without CORS', async () => {
    const loupeOrigin = new URL(loupe.url).origin;
    writeFileSync(
      join(hostDir, 'fit.html'),
      `<!doctype html><html><body>
<script type="module" src="${loupe.url}loupe-embed.js"></script>
<loupe-search shard="shards/vqa-rad/" model="bm25" query="effusion" k="3"></loupe-search>
<div style="height: 3000px"></div>
<iframe id="f" src="${loupe.url}embed.html?shard=shards/vqa-rad/&amp;model=bm25&amp;query=effusion&amp;k=3"></iframe>
<script>
  window.raw = [];
  addEventListener('message', (e) => {
    if (e.origin === ${JSON.stringify(loupeOrigin)} && e.source === document.getElementById('f').contentWindow)
      raw.push(e.data);
  });
</script></body></html>`,
    );
    const page = await s.context.newPage();
    await page.goto(`${host.url}fit.html`);
    const frame = (await (await page.locator('loupe-search iframe').elementHandle())!.contentFrame())!;
    await frame.waitForSelector('[data-testid="results"] li', { timeout: 120_000 });
    // The element's frame is as tall as what it shows: no scrolling inside, no fixed 480 px.
    const fit = async () => {
      const inner = await frame.evaluate(() => [document.documentElement.scrollHeight, innerHeight]);
      const outer = await page.evaluate(
        () => document.querySelector('loupe-search')!.shadowRoot!.querySelector('iframe')!.clientHeight,
      );
      return { fits: Math.abs(inner[0] - inner[1]) <= 1 && outer === inner[1], outer };
    };
    await expect.poll(async () => (await fit()).fits, { timeout: 30_000 }).toBe(true);
    expect((await fit()).outer).not.toBe(480);
    // More results: the frame grows with them.
    const before = (await fit()).outer;
    await page.evaluate(() => document.querySelector('loupe-search')!.setAttribute('k', '12'));
    await expect.poll(async () => (await fit()).outer, { timeout: 60_000 }).toBeGreaterThan(before);
    await expect.poll(async () => (await fit()).fits, { timeout: 30_000 }).toBe(true);
    // The pasted iframe tells its height in the forms H5P's and Embedly's resizers read
    const raw = () => page.evaluate(() => (window as unknown as { raw: unknown[] }).raw);
    // (the last of each form: the height once the results are shown).
    const last = async () => {
      const all = await raw();
      const h5p = all.filter((m) => (m as { context?: string }).context === 'h5p').at(-1) as
        { action: string; scrollHeight: number } | undefined;
      const embedly = all.filter((m) => typeof m === 'string' && m.includes('iframe.resize')).at(-1) as
        string | undefined;
      return { h5p, embedly: embedly ? JSON.parse(embedly) : undefined };
    };
    // The pasted frame sits below the fold (as on a course page), and Chromium does not run an
    // offscreen cross-origin frame's rendering, nor its ResizeObserver, until it is seen: its height
    // is sent once a reader scrolls to it. (Without the spacer this depended on whether its results
    // came before the element grew over the fold: a fresh-clone CI once saw 59 px and nothing after.)
    await page.locator('#f').scrollIntoViewIfNeeded();
    try {
      await expect
        .poll(async () => (await last()).h5p?.scrollHeight ?? 0, { timeout: 60_000 })
        .toBeGreaterThan(100);
    } catch (e) {
      // Say what the pasted frame shows, to tell a slow import from a stuck or failed one.
      const f = await (await page.$('#f'))?.contentFrame();
      const shown = f
        ? await f
            .evaluate(() => {
              const el = document.querySelector('[data-testid="embed"]');
              return `status ${el?.getAttribute('data-status')}, phase ${el?.getAttribute('data-phase')}: ${document.body.innerText.slice(0, 400)}`;
            })
            .catch((x: Error) => `unreadable (${x.message})`)
        : 'no frame';
      throw new Error(`${(e as Error).message}; the pasted frame shows: ${shown}`);
    }
    const { h5p, embedly } = await last();
    expect(h5p!.action).toBe('resize');
    expect(embedly).toMatchObject({ context: 'iframe.resize', height: h5p!.scrollHeight });
    await page.close();

    // The Embed dialog on a Loupe host without CORS says the element cannot load there; with CORS it does not.
    const noCors = await serveStatic(OUT, PREFIX);
    try {
      for (const [url, warned] of [
        [noCors.url, 1],
        [loupe.url, 0],
      ] as const) {
        await s.page.goto(`${url}?shard=shards/vqa-rad/&search-model=bm25#/search`);
        await s.page.waitForSelector('[data-testid="app"][data-phase="ready"]', { timeout: 120_000 });
        await s.page.click('[data-testid="embed-this"]');
        await s.page.waitForSelector('[data-testid="embed-snippet-element"]');
        await s.page.waitForTimeout(1000);
        expect(await s.page.locator('[data-testid="embed-no-cors"]').count()).toBe(warned);
      }
      expect(await s.page.locator('[data-testid="embed-no-cors"]').count()).toBe(0);
    } finally {
      await noCors.close();
    }
  });

  test('events go only to the page that embeds: a wrong origin= gets nothing; commands from another window are ignored', async () => {
    const loupeOrigin = new URL(loupe.url).origin;
    writeFileSync(
      join(hostDir, 'wrong.html'),
      `<!doctype html><html><body>
<iframe id="a" src="${loupe.url}embed.html?shard=shards/vqa-rad/&amp;model=bm25&amp;query=effusion&amp;origin=http://127.0.0.1:9"></iframe>
<iframe id="b" src="${loupe.url}embed.html?shard=shards/vqa-rad/&amp;model=bm25&amp;query=effusion&amp;theme=dark&amp;k=3"></iframe>
<script>
  window.got = [];
  addEventListener('message', (e) => {
    if (e.origin !== ${JSON.stringify(loupeOrigin)} || e.data?.source !== 'loupe-embed') return;
    const from = e.source === document.getElementById('a').contentWindow ? 'a' : 'b';
    got.push(from + ':' + e.data.type + (e.data.detail.text ? ':' + e.data.detail.text : ''));
  });
</script></body></html>`,
    );
    const page = await s.context.newPage();
    await page.goto(`${host.url}wrong.html`);
    const got = () => page.evaluate(() => (window as unknown as { got: string[] }).got);
    await expect.poll(got, { timeout: 120_000 }).toContain('b:loupe-results:effusion');
    // theme=dark and k=3 on frame b: the dark palette, three results.
    const bFrame = (await (await page.locator('#b').elementHandle())!.contentFrame())!;
    await bFrame.waitForSelector('[data-testid="results"] li');
    expect(await bFrame.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe(
      'rgb(21, 25, 30)',
    );
    expect(await bFrame.locator('[data-testid="results"] li').count()).toBe(3);
    // Frame a answered too, yet posted nothing to this page (its origin= names another).
    const a = (await page.locator('#a').elementHandle())!.contentFrame();
    await (await a)!.waitForSelector('[data-testid="results"]', { timeout: 60_000 });
    expect((await got()).filter((x) => x.startsWith('a:'))).toEqual([]);
    // A window of the same origin that is not the embedding page (a popup) cannot drive the embed;
    // the embedding page can.
    const [popup] = await Promise.all([
      page.waitForEvent('popup'),
      page.evaluate(() => void window.open('wrong.html?popup')),
    ]);
    await popup.waitForLoadState();
    await popup.evaluate(() => {
      const b = (window.opener as Window).document.getElementById('b') as HTMLIFrameElement;
      b.contentWindow!.postMessage(
        { source: 'loupe-embed', type: 'loupe-search', set: { query: 'from a popup' } },
        '*',
      );
    });
    await page.evaluate(() => {
      const b = document.getElementById('b') as HTMLIFrameElement;
      b.contentWindow!.postMessage(
        { source: 'loupe-embed', type: 'loupe-search', set: { query: 'fracture' } },
        '*',
      );
    });
    await expect.poll(got, { timeout: 60_000 }).toContain('b:loupe-results:fracture');
    expect((await got()).filter((x) => x.includes('popup'))).toEqual([]);
    await popup.close();
    await page.close();
  });
});
