import { describe, expect, test } from 'vitest';
import { pageOptions, readView, samePlace, viewHref, type View } from '../../src/lib/state/view-url';

const PAGE = 'https://example.org/course/loupe/';

const view: View = {
  route: 'benchmark',
  shard: { kind: 'demo', name: 'vqa-rad' },
  task: 'image-question-to-passage',
  retriever: 'dense',
  model: 'loupe-test/clip-tiny-random',
  device: 'wasm',
  dtype: 'auto',
  searchModel: 'bm25',
  q: 'a; b & c=d #1 ✓',
  picks: ['run-1', 'run-2'],
  compared: 'run-2',
};

describe('view URLs', () => {
  test('a view written and read back is the same view', () => {
    const href = viewHref(PAGE, view);
    expect(href.startsWith(`${PAGE}?`)).toBe(true);
    expect(new URL(href).hash).toBe('#/benchmark');
    expect(readView(href, ['vqa-rad'])).toEqual(view);
  });

  test("the Search view's URL names the model Search uses, not the Benchmark's retriever or picks", () => {
    const href = viewHref(PAGE, { ...view, route: 'search', searchModel: 'loupe-test/clip-tiny-random' });
    const p = new URL(href).searchParams;
    expect(p.get('search-model')).toBe('loupe-test/clip-tiny-random');
    for (const k of ['retriever', 'model', 'picked', 'compared']) expect(p.get(k)).toBeNull();
    // Read back: the Benchmark's retriever and model are left as they are ('').
    expect(readView(href, ['vqa-rad'])).toMatchObject({ retriever: '', model: '', picks: [], compared: '' });
  });

  test('the landing page is #/; no shard: no shard parameters', () => {
    const href = viewHref(`${PAGE}?run=1#/benchmark`, { ...view, route: 'home', shard: null });
    expect(href).toBe(`${PAGE}#/`);
    expect(readView(href).route).toBe('home');
  });

  test('a shard URL under the page is written relative to it; others stay absolute', () => {
    const under = viewHref(PAGE, { ...view, shard: { kind: 'url', url: `${PAGE}shards/mine/` } });
    expect(new URL(under).searchParams.get('shard')).toBe('shards/mine/');
    expect(readView(under).shard).toEqual({ kind: 'url', url: `${PAGE}shards/mine/` });
    const away = 'https://data.example.net/shards/mine/';
    const other = viewHref(PAGE, { ...view, shard: { kind: 'url', url: away } });
    expect(new URL(other).searchParams.get('shard')).toBe(away);
    expect(readView(other).shard).toEqual({ kind: 'url', url: away });
  });

  test('shard= names a demo when the site has a demo of that name, or a bare name on a site with demos', () => {
    const href = `${PAGE}?shard=medquad`;
    expect(readView(href, ['medquad']).shard).toEqual({ kind: 'demo', name: 'medquad' });
    expect(readView(href, []).shard).toEqual({ kind: 'url', url: `${PAGE}medquad` });
    // A bare name on a site with demos is a (mistyped) demo, never a folder fetched next to the page.
    expect(readView(`${PAGE}?shard=vqa-radd`, ['vqa-rad']).shard).toEqual({ kind: 'demo', name: 'vqa-radd' });
    expect(readView(`${PAGE}?shard=shards/mine/`, ['vqa-rad']).shard).toEqual({
      kind: 'url',
      url: `${PAGE}shards/mine/`,
    });
    expect(readView(`${PAGE}?cached=abc`).shard).toEqual({ kind: 'cached', hash: 'abc' });
  });

  test('route, shard and task make a place; model and query text do not', () => {
    expect(samePlace(view, { ...view, q: 'other', model: 'x' })).toBe(true);
    expect(samePlace(view, { ...view, task: 'text-to-image' })).toBe(false);
    expect(samePlace(view, { ...view, route: 'search' })).toBe(false);
    expect(samePlace(view, { ...view, shard: { kind: 'cached', hash: 'h' } })).toBe(false);
  });
});

test('page options stay in the URL; start instructions and the old view do not', () => {
  const opened = '?maxLineMB=64&run=1&k1=1.2&shard=x&q=old&simulate-webgpu-failure=1';
  const options = pageOptions(opened);
  expect(options).toEqual([
    ['maxLineMB', '64'],
    ['simulate-webgpu-failure', '1'],
  ]);
  const p = new URL(viewHref(PAGE + opened, view, options)).searchParams;
  expect(p.get('maxLineMB')).toBe('64');
  expect(p.get('run')).toBeNull();
  expect(p.get('k1')).toBeNull();
  expect(p.get('q')).toBe(view.q);
});
