// <loupe-search>: Loupe's Search view in any page, as one element. Load this module from the Loupe
// site and write the element:
//
//   <script type="module" src="https://host/course/loupe/loupe-embed.js"></script>
//   <loupe-search shard="shards/vqa-rad/" query="pleural effusion" height="520px"></loupe-search>
//
// The element draws an iframe of embed.html (Loupe's origin) inside its Shadow DOM. Loupe's code
// runs there, not in the host page: its workers, ONNX Runtime's wasm, the model files and the shard
// come from Loupe's own origin (a page cannot start workers from another origin's scripts), its
// IndexedDB cache and its Content-Security-Policy are Loupe's, and neither page's CSS reaches the
// other. Attributes become embed.html's parameters; later changes of the query's attributes are
// sent to the running embed (no reload). The embed's events come back as DOM events on the element
// (`loupe-ready`, `loupe-results`, `loupe-error`, bubbling and composed, with `detail`), taken only
// from that iframe and from Loupe's origin. Without a `height` attribute the frame is as tall as
// the embed's content (it sends its height as it changes: resize.ts).
import { EMBED_PARAMS, EMBED_SOURCE, isEmbedEvent, type EmbedCommand } from './protocol';

/** The Loupe site this module came from (the dev server serves it from src/embed/). */
const LOUPE_BASE = new URL(import.meta.env.DEV ? '../../' : './', import.meta.url);

/** Attributes sent to a running embed instead of reloading it. */
const LIVE = ['query', 'image', 'mode', 'model', 'task', 'k'] as const;
type Live = (typeof LIVE)[number];

const STYLE = `
:host { display: block; contain: content; min-width: 0; }
:host([hidden]) { display: none; }
iframe { display: block; width: 100%; height: 480px; border: 1px solid #b7c0ca; border-radius: 10px; background: #fff; box-sizing: border-box; }
:host([theme='dark']) iframe { border-color: #4a5563; background: #15191e; }
`;

export class LoupeSearch extends HTMLElement {
  static observedAttributes = [...EMBED_PARAMS.filter((p) => p !== 'origin'), 'height', 'loupe'];

  #frame: HTMLIFrameElement | null = null;
  #ready = false;
  /** The embed.html URL the frame was last pointed at. */
  #src = '';
  /** Attribute changes not sent yet (sent together at the end of the current task). */
  #changes: EmbedCommand['set'] | null = null;
  #onMessage = (e: MessageEvent) => {
    if (!this.#frame || e.source !== this.#frame.contentWindow || e.origin !== this.loupe.origin) return;
    if (!isEmbedEvent(e.data)) return;
    if (e.data.type === 'loupe-ready') this.#ready = true;
    // The frame follows its content's height, unless the page set one (`height`).
    if (e.data.type === 'loupe-resize') {
      const f = this.#frame;
      // The content's height plus the frame's own borders.
      if (!this.hasAttribute('height') && f)
        f.style.height = `${e.data.detail.height + f.offsetHeight - f.clientHeight}px`;
      return;
    }
    this.dispatchEvent(
      new CustomEvent(e.data.type, { detail: e.data.detail, bubbles: true, composed: true }),
    );
  };

  /** The Loupe site: the `loupe` attribute (a copy of this module hosted elsewhere), else where this module is. */
  get loupe(): URL {
    const attr = this.getAttribute('loupe');
    return attr ? new URL(attr.endsWith('/') ? attr : `${attr}/`, document.baseURI) : LOUPE_BASE;
  }

  /** embed.html with the attributes as parameters; the host's origin is where events go. */
  embedUrl(): string {
    const url = new URL('embed.html', this.loupe);
    for (const name of EMBED_PARAMS) {
      const v = name === 'origin' ? location.origin : this.getAttribute(name);
      if (v) url.searchParams.set(name, v);
    }
    return url.href;
  }

  connectedCallback() {
    const root = this.shadowRoot ?? this.attachShadow({ mode: 'open' });
    if (!this.#frame) {
      const style = document.createElement('style');
      style.textContent = STYLE;
      const frame = document.createElement('iframe');
      frame.title = this.getAttribute('title') || 'Loupe: search a medical image and text collection';
      // Threads where the host page is cross-origin isolated itself (COOP/COEP); else one thread.
      frame.allow = 'cross-origin-isolated';
      frame.setAttribute('part', 'frame');
      root.append(style, frame);
      this.#frame = frame;
    }
    this.#applyHeight();
    window.addEventListener('message', this.#onMessage);
    this.#load();
  }

  disconnectedCallback() {
    window.removeEventListener('message', this.#onMessage);
  }

  attributeChangedCallback(name: string, old: string | null, value: string | null) {
    if (old === value || !this.#frame) return;
    if (name === 'height') return this.#applyHeight();
    if (this.#ready && (LIVE as readonly string[]).includes(name)) {
      // Attributes set one after another in the same task make one query.
      if (!this.#changes) {
        this.#changes = {};
        queueMicrotask(() => this.#sendChanges());
      }
      if (name === 'k') this.#changes.k = Number(value);
      else (this.#changes as Record<Live, string | undefined>)[name as Live] = value ?? '';
      return;
    }
    this.#load();
  }

  #sendChanges() {
    const set = this.#changes;
    this.#changes = null;
    if (!set || !this.#frame) return;
    const command = { source: EMBED_SOURCE, type: 'loupe-search', set };
    this.#frame.contentWindow?.postMessage(command, this.loupe.origin);
  }

  /** Runs a query in the embed (sets the `query` attribute, and `image` when given). */
  search(query: string, image?: string) {
    if (image !== undefined) this.setAttribute('image', image);
    this.setAttribute('query', query);
  }

  #applyHeight() {
    const h = this.getAttribute('height');
    const css = h && /^\d+(\.\d+)?$/.test(h) ? `${h}px` : h;
    if (this.#frame) this.#frame.style.height = css ?? '';
  }

  #load() {
    const src = this.embedUrl();
    if (!this.#frame || src === this.#src) return;
    this.#src = src;
    this.#ready = false;
    this.#frame.src = src;
  }
}

if (!customElements.get('loupe-search')) customElements.define('loupe-search', LoupeSearch);
