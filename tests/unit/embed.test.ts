// The embed's options (embed.html parameters = <loupe-search> attributes), the message guards and
// the snippets the "Embed this" dialog writes.
import { describe, expect, it } from 'vitest';
import {
  EMBED_K,
  isEmbedCommand,
  isEmbedEvent,
  parseEmbedOptions,
  webOrigin,
} from '../../src/embed/protocol';
import { elementSnippet, escapeAttr, iframeSnippet, shardRef } from '../../src/embed/snippet';

const parse = (q: string) => {
  const p = new URLSearchParams(q);
  return parseEmbedOptions((n) => p.get(n));
};

describe('embed options', () => {
  it('reads every option, with defaults', () => {
    expect(
      parse(
        'shard=shards/vqa-rad/&task=t&model=bm25&query=a%20b&k=5&mode=text&theme=dark&origin=https://c.example',
      ),
    ).toEqual({
      options: {
        shard: 'shards/vqa-rad/',
        task: 't',
        model: 'bm25',
        query: 'a b',
        image: undefined,
        k: 5,
        mode: 'text',
        theme: 'dark',
        origin: 'https://c.example',
      },
      problems: [],
    });
    const d = parse('shard=s/');
    expect(d.options).toMatchObject({ k: EMBED_K, mode: 'text', theme: 'light' });
    expect(d.options.origin).toBeUndefined();
    // An image without a mode asks for image + text.
    expect(parse('shard=s/&image=i.jpg').options.mode).toBe('image+text');
  });

  it('names each bad option and falls back to its default', () => {
    const r = parse('k=0&mode=video&theme=pink&origin=*');
    expect(r.problems).toEqual([
      'shard: no shard URL given (e.g. shard=shards/vqa-rad/)',
      'k: "0" is not a whole number from 1 to 100; showing 10',
      'mode: "video" is not one of text, image, image+text; using text',
      'theme: "pink" is not light or dark; using light',
      'origin: "*" is not an origin like https://course.example.org',
    ]);
    expect(r.options).toMatchObject({ k: 10, mode: 'text', theme: 'light' });
    expect(r.options.origin).toBeUndefined();
    expect(parse('shard=s/&k=2.5').problems[0]).toMatch(/^k: "2.5"/);
  });

  it('accepts only web origins', () => {
    expect(webOrigin('https://a.example:8443')).toBe('https://a.example:8443');
    expect(webOrigin('https://a.example/')).toBe('https://a.example');
    for (const bad of [
      '*',
      'null',
      'https://a.example/path',
      'javascript:alert(1)',
      'file:///x',
      '',
      undefined,
    ])
      expect(webOrigin(bad)).toBeNull();
  });

  it('tells its own messages from any other postMessage traffic', () => {
    expect(isEmbedEvent({ source: 'loupe-embed', type: 'loupe-ready', detail: {} })).toBe(true);
    expect(isEmbedEvent({ source: 'other', type: 'loupe-ready' })).toBe(false);
    expect(isEmbedEvent({ source: 'loupe-embed', type: 'loupe-search', set: {} })).toBe(false);
    expect(isEmbedCommand({ source: 'loupe-embed', type: 'loupe-search', set: { query: 'x' } })).toBe(true);
    expect(isEmbedCommand({ source: 'loupe-embed', type: 'loupe-search' })).toBe(false);
    expect(isEmbedCommand('loupe-search')).toBe(false);
  });
});

describe('snippets', () => {
  const loupe = 'https://u.example/course/loupe/';
  it('writes the shard relative to Loupe when it lies below it', () => {
    expect(shardRef(loupe, 'https://u.example/course/loupe/shards/vqa-rad/')).toBe('shards/vqa-rad/');
    expect(shardRef(loupe, 'https://data.example/x/')).toBe('https://data.example/x/');
  });

  it('escapes a query with quotes and angle brackets in both snippets', () => {
    const q = 'the "worst" <script>alert(1)</script> & co';
    expect(escapeAttr(q)).toBe('the &quot;worst&quot; &lt;script&gt;alert(1)&lt;/script&gt; &amp; co');
    const o = { loupe, shard: `${loupe}shards/vqa-rad/`, task: 't', model: 'bm25', query: q, height: 400 };
    const el = elementSnippet(o);
    expect(el).toContain(
      '<script type="module" src="https://u.example/course/loupe/loupe-embed.js"></script>',
    );
    expect(el).toContain(
      '<loupe-search shard="shards/vqa-rad/" task="t" model="bm25" query="the &quot;worst&quot; &lt;script&gt;alert(1)&lt;/script&gt; &amp; co"></loupe-search>',
    );
    expect(el).not.toContain('<script>alert');
    const fr = iframeSnippet(o);
    const src = /<iframe src="([^"]+)"/.exec(fr)![1].replace(/&amp;/g, '&');
    const url = new URL(src);
    expect(url.href.startsWith('https://u.example/course/loupe/embed.html?')).toBe(true);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      shard: 'shards/vqa-rad/',
      task: 't',
      model: 'bm25',
      query: q,
    });
    expect(fr).toContain('if (e.origin !== "https://u.example"');
    expect(fr).toContain('allow="cross-origin-isolated"');
  });
});
