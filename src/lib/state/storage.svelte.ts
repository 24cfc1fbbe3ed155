// What Loupe keeps in this browser (shards with their runs, embeddings and indexes; model files in
// transformers.js's cache; the app shell), the origin's quota, persistence, and removing any of it.
// The Shards view's Storage panel reads `report`; removing a shard goes through the library, so the
// open shard and the cached list follow.
import {
  listStorage,
  removeCachedModel,
  removeEmbeddings,
  requestPersistentStorage,
  type StorageReport,
} from '../adapters/offline';
import type { Library } from './library.svelte';
import type { Messages } from './messages.svelte';

export class StorageState {
  /** The last listing (null before the first, or when storage cannot be read). */
  report = $state.raw<StorageReport | null>(null);
  /** The answer to the last persistence request (null: not asked in this session). */
  persistAnswer = $state.raw<{ granted: boolean; already: boolean } | null>(null);
  #asked = false;

  constructor(
    private library: Library,
    private messages: Messages,
  ) {}

  /** Lists what is stored now. */
  async refresh(): Promise<void> {
    try {
      this.report = await listStorage();
    } catch (e) {
      this.report = null;
      this.messages.error(
        `Reading this browser's storage failed: ${e instanceof Error ? e.message : String(e)}.`,
        'page',
      );
    }
  }

  /** Removes a shard with its runs, embeddings and indexes (closing it when it is open). */
  async removeShard(hash: string): Promise<void> {
    await this.library.deleteShard(hash);
    await this.refresh();
  }

  /** Removes a shard's corpus embeddings (runs stay; the next dense run embeds again). */
  async removeEmbeddings(hash: string): Promise<void> {
    await removeEmbeddings(hash);
    await this.refresh();
  }

  /** Removes a model's files from the browser cache (it downloads again when next used). */
  async removeModel(model: string): Promise<void> {
    await removeCachedModel(model);
    await this.refresh();
  }

  /** Asks the browser to keep this site's storage (persistent storage); the answer is shown. */
  async keepOffline(): Promise<void> {
    this.#asked = true;
    this.persistAnswer = await requestPersistentStorage();
    await this.refresh();
  }

  /**
   * Called when the user caches a shard or a model: asks for persistent storage once per session, so
   * what they cached is not evicted under storage pressure.
   */
  async cached(): Promise<void> {
    if (this.#asked) return;
    await this.keepOffline();
  }
}
