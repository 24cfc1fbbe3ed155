// embed.html's entry: cross-origin isolation first (as the app's boot.ts), then the embed. Framed by
// a page that is not itself isolated, the page cannot be isolated: after the service worker's one
// reload it runs on one thread and says why.
import { ensureIsolation } from '../lib/platform/page/isolation';

await ensureIsolation({ register: import.meta.env.MODE !== 'development' });
await import('./embed-main');
