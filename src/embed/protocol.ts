// The embed's contract with a host page, shared by the iframe page (embed.html), the custom element
// (loupe-embed.js) and the app's "Embed this" dialog: the options (URL parameters of embed.html,
// attributes of <loupe-search>), and the messages both forms send.
//
// Messages go to one origin, never '*': the host page's origin, named by `origin=` (the element
// passes its page's origin) or, failing that, the embedding page's origin as the browser reports it.
// Commands are taken only from that origin and from the embedding window itself.

/** Which parts of a query the embed asks for and shows inputs for. */
export type EmbedMode = 'text' | 'image' | 'image+text';
export const EMBED_MODES: readonly EmbedMode[] = ['text', 'image', 'image+text'];
export type EmbedTheme = 'light' | 'dark';

/** Results per column unless `k` says otherwise (a compact demo), and the most `k` may ask for. */
export const EMBED_K = 10;
export const EMBED_K_MAX = 100;

export interface EmbedOptions {
  /** Shard URL, resolved against the Loupe app's folder (`shards/vqa-rad/`). */
  shard: string;
  task?: string;
  /** `bm25` or a model id of the registry; the shard's default when absent. */
  model?: string;
  query?: string;
  /** Query image URL, resolved like `shard`. */
  image?: string;
  k: number;
  mode: EmbedMode;
  theme: EmbedTheme;
  /** The host page's origin, where events go. */
  origin?: string;
}

/** The names shared by embed.html's parameters and <loupe-search>'s attributes. */
export const EMBED_PARAMS = [
  'shard',
  'task',
  'model',
  'query',
  'image',
  'k',
  'mode',
  'theme',
  'origin',
] as const;

/** A web origin (`https://host[:port]`), or null for anything else (a path, `*`, `null`). */
export function webOrigin(value: string | null | undefined): string | null {
  if (!value) return null;
  try {
    const u = new URL(value);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
    return u.origin === value.replace(/\/$/, '') ? u.origin : null;
  } catch {
    return null;
  }
}

/**
 * The options from embed.html's URL parameters (or the element's attributes, same names). Problems
 * are listed, one sentence each naming the option; the options are still usable (defaults replace
 * the bad values), except that a missing shard leaves nothing to search.
 */
export function parseEmbedOptions(get: (name: string) => string | null): {
  options: EmbedOptions;
  problems: string[];
} {
  const problems: string[] = [];
  const text = (name: string) => {
    const v = get(name)?.trim();
    return v ? v : undefined;
  };
  const shard = text('shard') ?? '';
  if (!shard) problems.push('shard: no shard URL given (e.g. shard=shards/vqa-rad/)');
  let k = EMBED_K;
  const kRaw = text('k');
  if (kRaw !== undefined) {
    const n = Number(kRaw);
    if (Number.isInteger(n) && n >= 1 && n <= EMBED_K_MAX) k = n;
    else
      problems.push(
        `k: ${JSON.stringify(kRaw)} is not a whole number from 1 to ${EMBED_K_MAX}; showing ${EMBED_K}`,
      );
  }
  const image = text('image');
  let mode: EmbedMode = image ? 'image+text' : 'text';
  const modeRaw = text('mode');
  if (modeRaw !== undefined) {
    if ((EMBED_MODES as readonly string[]).includes(modeRaw)) mode = modeRaw as EmbedMode;
    else
      problems.push(
        `mode: ${JSON.stringify(modeRaw)} is not one of ${EMBED_MODES.join(', ')}; using ${mode}`,
      );
  }
  const themeRaw = text('theme');
  let theme: EmbedTheme = 'light';
  if (themeRaw === 'dark' || themeRaw === 'light') theme = themeRaw;
  else if (themeRaw !== undefined)
    problems.push(`theme: ${JSON.stringify(themeRaw)} is not light or dark; using light`);
  const originRaw = text('origin');
  const origin = webOrigin(originRaw);
  if (originRaw !== undefined && !origin)
    problems.push(`origin: ${JSON.stringify(originRaw)} is not an origin like https://course.example.org`);
  return {
    options: {
      shard,
      task: text('task'),
      model: text('model'),
      query: text('query'),
      image,
      k,
      mode,
      theme,
      ...(origin ? { origin } : {}),
    },
    problems,
  };
}

/** One result as events report it. */
export interface EmbedHit {
  docId: string;
  score: number;
}

/** What the embed tells its host page. */
export type EmbedEvent =
  | { type: 'loupe-ready'; detail: { shard: string; task: string; retriever: string; threads: number } }
  | {
      type: 'loupe-results';
      detail: {
        task: string;
        text: string;
        image: boolean;
        retriever: string;
        /** One list per result column (a retriever, or one fusion of text and image). */
        columns: { label: string; hits: EmbedHit[] }[];
        ms: number;
        /** The model has generated random weights (a test model): the ranking says nothing about quality. */
        randomWeights: boolean;
      };
    }
  | { type: 'loupe-error'; detail: { message: string } }
  /** The embed's content height in CSS pixels (sent whenever it changes: resize.ts). */
  | { type: 'loupe-resize'; detail: { height: number } };

/** What a host page may ask the iframe (the element does it for its attributes). */
export type EmbedCommand = {
  type: 'loupe-search';
  /** Options to change (query, image, mode, model, task, k); absent ones are kept. */
  set: Partial<Pick<EmbedOptions, 'query' | 'image' | 'mode' | 'model' | 'task' | 'k'>>;
};

/** Messages carry this marker so that a page listening to other postMessage traffic can tell them apart. */
export const EMBED_SOURCE = 'loupe-embed';

export function isEmbedEvent(data: unknown): data is EmbedEvent & { source: typeof EMBED_SOURCE } {
  const d = data as { source?: unknown; type?: unknown } | null;
  return (
    !!d &&
    d.source === EMBED_SOURCE &&
    (d.type === 'loupe-ready' ||
      d.type === 'loupe-results' ||
      d.type === 'loupe-error' ||
      d.type === 'loupe-resize')
  );
}

export function isEmbedCommand(data: unknown): data is EmbedCommand & { source: typeof EMBED_SOURCE } {
  const d = data as { source?: unknown; type?: unknown; set?: unknown } | null;
  return (
    !!d && d.source === EMBED_SOURCE && d.type === 'loupe-search' && typeof d.set === 'object' && !!d.set
  );
}
