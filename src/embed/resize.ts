// The embed's height, told to the page around it whenever its content changes size, in three forms:
// Loupe's own event (the <loupe-search> element sizes its frame with it), H5P's resizer message
// (`{ context: 'h5p', action: 'resize', scrollHeight }`, as h5p-resizer.js reads it) and the
// Embedly / iframe-resize form (`{ context: 'iframe.resize', height, src }`, a JSON string). Sent to
// the host page's origin only.
import { EMBED_SOURCE } from './protocol';

/** The messages one height is sent as (what `watchHeight` posts, in order). */
export function resizeMessages(height: number, src: string): unknown[] {
  return [
    { source: EMBED_SOURCE, type: 'loupe-resize', detail: { height } },
    { context: 'h5p', action: 'resize', scrollHeight: height },
    JSON.stringify({ src, context: 'iframe.resize', height }),
  ];
}

/**
 * Watches `root`'s height (its box plus the body's margins) and posts each new height to `target`
 * at `origin`. Returns the function that stops watching.
 */
export function watchHeight(root: HTMLElement, target: Window, origin: string): () => void {
  let last = -1;
  const send = () => {
    const body = getComputedStyle(document.body);
    const height = Math.ceil(
      root.getBoundingClientRect().height + parseFloat(body.marginTop) + parseFloat(body.marginBottom),
    );
    if (height === last || height <= 0) return;
    last = height;
    for (const m of resizeMessages(height, location.href)) target.postMessage(m, origin);
  };
  const observer = new ResizeObserver(send);
  observer.observe(root);
  send();
  return () => observer.disconnect();
}
