// The app's IndexedDB as the import fault tests see it: how many records each store holds, read in the
// page with the plain IndexedDB API (none when the database was never made).
import type { Page } from 'playwright-core';

export type Counts = Record<'shards' | 'docs' | 'queries' | 'qrels' | 'images' | 'artifacts', number>;
export const ZERO: Counts = { shards: 0, docs: 0, queries: 0, qrels: 0, images: 0, artifacts: 0 };

/** Records in each store of the app's IndexedDB. */
export function idbCounts(page: Page): Promise<Counts> {
  return page.evaluate(
    () =>
      new Promise<Counts>((resolve, reject) => {
        const req = indexedDB.open('loupe');
        req.onerror = () => reject(req.error);
        req.onsuccess = () => {
          const db = req.result;
          const names = Array.from(db.objectStoreNames);
          const out: Record<string, number> = {};
          if (names.length === 0) {
            db.close();
            return resolve({ shards: 0, docs: 0, queries: 0, qrels: 0, images: 0, artifacts: 0 });
          }
          const tx = db.transaction(names, 'readonly');
          for (const n of names) {
            const c = tx.objectStore(n).count();
            c.onsuccess = () => (out[n] = c.result);
          }
          tx.oncomplete = () => {
            db.close();
            resolve(out as Counts);
          };
          tx.onerror = () => reject(tx.error);
        };
      }),
  );
}
