// The HTML a teacher pastes into course material: the element or the iframe, for a shard, task,
// model and query, with a listener for the embed's events. Values are escaped for HTML attributes
// (a query may hold quotes or angle brackets).
import type { EmbedMode } from './protocol';

export interface SnippetOptions {
  /** The Loupe site's folder URL (where index.html, embed.html and loupe-embed.js are). */
  loupe: string;
  /** Absolute shard URL; written relative to `loupe` when it lies below it. */
  shard: string;
  task?: string;
  model?: string;
  query?: string;
  mode?: EmbedMode;
  k?: number;
  /** The iframe's height in pixels (the element sizes itself to its content). */
  height?: number;
}

export function escapeAttr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The shard as the embed takes it: relative to the Loupe folder when below it, else absolute. */
export function shardRef(loupe: string, shard: string): string {
  const base = new URL(loupe);
  const url = new URL(shard, base);
  return url.href.startsWith(base.href) ? url.href.slice(base.href.length) : url.href;
}

function attrs(o: SnippetOptions): [string, string][] {
  const list: [string, string][] = [['shard', shardRef(o.loupe, o.shard)]];
  if (o.task) list.push(['task', o.task]);
  if (o.model) list.push(['model', o.model]);
  if (o.query) list.push(['query', o.query]);
  if (o.mode && o.mode !== 'text') list.push(['mode', o.mode]);
  if (o.k) list.push(['k', String(o.k)]);
  return list;
}

/** `<script type=module>` + `<loupe-search …>` + a listener (no height: the element fits its content). */
export function elementSnippet(o: SnippetOptions): string {
  const loupe = new URL(o.loupe);
  const a = attrs(o)
    .map(([k, v]) => `${k}="${escapeAttr(v)}"`)
    .join(' ');
  return [
    `<script type="module" src="${escapeAttr(new URL('loupe-embed.js', loupe).href)}"></script>`,
    `<loupe-search ${a}></loupe-search>`,
    `<script>`,
    `  document.querySelector('loupe-search').addEventListener('loupe-results', (e) => {`,
    `    console.log('Loupe results', e.detail.columns[0].hits);`,
    `  });`,
    `</script>`,
  ].join('\n');
}

/** A fresh id for a pasted frame, so that its listener can find it among other embeds on the page. */
function frameId(): string {
  const b = crypto.getRandomValues(new Uint8Array(4));
  return `loupe-${[...b].map((x) => x.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * `<iframe src=embed.html?…>` + a listener that takes this frame's messages only (checking the sender's
 * window and origin: a page may hold several embeds, and a `<loupe-search>`'s own frame posts to the
 * same page) and makes the frame follow its content's height, as the element does by itself.
 */
export function iframeSnippet(o: SnippetOptions & { id?: string }): string {
  const loupe = new URL(o.loupe);
  const src = new URL('embed.html', loupe);
  for (const [k, v] of attrs(o)) src.searchParams.set(k, v);
  const id = o.id ?? frameId();
  return [
    `<iframe src="${escapeAttr(src.href)}" id="${id}" title="Loupe search" width="100%" height="${o.height ?? 520}"`,
    `  style="border: 1px solid #b7c0ca; border-radius: 10px" allow="cross-origin-isolated"></iframe>`,
    `<script>`,
    `  (() => {`,
    `    const frame = document.getElementById('${id}');`,
    `    addEventListener('message', (e) => {`,
    `      // This frame's messages only: every Loupe embed on the page sends its own.`,
    `      if (e.source !== frame.contentWindow) return;`,
    `      if (e.origin !== ${JSON.stringify(loupe.origin)} || e.data?.source !== 'loupe-embed') return;`,
    `      // The frame follows its content's height (delete this line to keep height="${o.height ?? 520}").`,
    `      if (e.data.type === 'loupe-resize') {`,
    `        const borders = getComputedStyle(frame).boxSizing === 'border-box' ? frame.offsetHeight - frame.clientHeight : 0;`,
    `        frame.style.height = e.data.detail.height + borders + 'px';`,
    `      } else console.log(e.data.type, e.data.detail);`,
    `    });`,
    `  })();`,
    `</script>`,
  ].join('\n');
}
