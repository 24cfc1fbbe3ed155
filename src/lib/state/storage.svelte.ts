// What Loupe keeps in this browser (shards with their runs, embeddings and indexes; model files in
// transformers.js's cache; the app shell), the origin's quota, persistence, and removing any of it.
// The Shards view's Storage panel reads `report`; removing a shard goes through the library, so the
// open shard and the cached list follow.
import {
  browserOnline,
  listStorage,
  offlineDefault,
  offlineModels,
  removeCachedModel,
  removeEmbeddings,
  requestPersistentStorage,
  type OfflineModel,
  type StorageReport,
} from '../platform/offline';
import type { ModelSpec } from '../core/retrieval/models';
import type { Library } from './library.svelte';
import type { Messages } from './messages.svelte';

export class StorageState {
  /** The last listing (null before the first, or when storage cannot be read). */
  report = $state.raw<StorageReport | null>(null);
  /** The answer to the last persistence request (null: not asked in this session). */
  persistAnswer = $state.raw<{ granted: boolean; already: boolean } | null>(null);
  #asked = false;
  /** Whether the browser is online (the hub may still be unreachable: a model load then says so). */
  online = $state(browserOnline());
  /** The registry models that load without the network (listed when the browser goes offline). */
  offline = $state.raw<OfflineModel[] | null>(null);

  constructor(
    private library: Library,
    private messages: Messages,
  ) {}

  /**
   * Follows the browser's online state; offline, lists the models that load without the hub (so the
   * pickers mark them and default to one). Resolves once that list is known.
   */
  async watchNetwork(): Promise<void> {
    if (typeof window === 'undefined') return;
    const update = async () => {
      this.online = browserOnline();
      if (!this.online) this.offline = await offlineModels().catch(() => []);
    };
    window.addEventListener('online', () => void update());
    window.addEventListener('offline', () => void update());
    await update();
  }

  /** Where `id` loads from without the network ('cached', 'generated', 'self-hosted'), if it does. */
  offlineSource(id: string): OfflineModel['source'] | undefined {
    return this.offline?.find((m) => m.spec.id === id)?.source;
  }

  /**
   * Offline: `preferred` when it loads without the network, else one of the same kind that does (null
   * when none does). Online: `preferred`.
   */
  usable(preferred: ModelSpec | undefined): ModelSpec | null {
    if (this.online || !this.offline || !preferred) return preferred ?? null;
    return offlineDefault(this.offline, preferred);
  }

  /** What a model picker adds to a model's name while the browser is offline. */
  offlineLabel(id: string): string {
    if (this.online || !this.offline) return '';
    const source = this.offlineSource(id);
    return source ? ` · offline (${source})` : ' · needs the network';
  }

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
