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
} from '../platform/storage/offline';
import type { ModelSpec } from '../core/retrieval/models';
import { hubAnswers, modelFolder, servedModelFolders } from '../platform/models/model-index';
import { forgetRemoteIvf } from '../clients/index-client';
import type { Library } from './library.svelte';
import type { Messages } from './messages.svelte';

export class StorageState {
  /** The last listing (null before the first, or when storage cannot be read). */
  report = $state.raw<StorageReport | null>(null);
  /** The answer to the last persistence request (null: not asked in this session). */
  persistAnswer = $state.raw<{ granted: boolean; already: boolean } | null>(null);
  #asked = false;
  /** Whether the browser is online (the hub may still be unreachable: see `hub`). */
  online = $state(browserOnline());
  /**
   * Whether the Hugging Face hub answers: `unknown` until the probe at page start (or a model
   * download) tells; `down` after a failed probe or a model file that could not be downloaded.
   */
  hub = $state<'unknown' | 'up' | 'down'>('unknown');
  /** The model folders this site serves (models/index.json); null when it lists none. */
  served = $state.raw<Set<string> | null>(null);
  /** The registry models that load without the hub (listed when the hub is out of reach). */
  offline = $state.raw<OfflineModel[] | null>(null);
  /** The one-line note of a fallback to a model that loads without the hub (its message id). */
  #fallbackNote: number | null = null;

  constructor(
    private library: Library,
    private messages: Messages,
  ) {}

  /** The hub cannot be used now (the browser is offline, or the hub did not answer). */
  get hubless(): boolean {
    return !this.online || this.hub === 'down';
  }

  /**
   * Follows the browser's online state; without the hub, lists the models that load without it (so
   * the pickers mark them and default to one). Resolves once the site's model list and, offline,
   * that list are known.
   */
  async watchNetwork(): Promise<void> {
    if (typeof window === 'undefined') return;
    this.served = await servedModelFolders();
    const update = async () => {
      this.online = browserOnline();
      if (this.hubless) await this.listOffline();
    };
    window.addEventListener('online', () => {
      // Back online: the hub is asked again the next time a hub model would be the default.
      this.hub = 'unknown';
      void update();
    });
    window.addEventListener('offline', () => void update());
    await update();
  }

  #probing = false;

  /**
   * Asks the hub once whether it answers (only when a hub model would be a picker's default: a page
   * that uses generated models only never contacts it). The defaults follow the answer.
   */
  #probe(spec: ModelSpec) {
    if (this.#probing || this.hub !== 'unknown' || !this.online) return;
    this.#probing = true;
    void hubAnswers(spec).then(async (up) => {
      this.#probing = false;
      // A download that failed meanwhile has the last word.
      if (this.hub !== 'unknown') return;
      this.hub = up ? 'up' : 'down';
      if (!up) await this.listOffline();
    });
  }

  /** Lists the registry models that load without the hub (kept in `offline`, and returned). */
  async listOffline(): Promise<OfflineModel[]> {
    return (this.offline = await offlineModels().catch(() => []));
  }

  /** A model file could not be downloaded from the hub: the hub counts as down from now on. */
  async hubFailed(): Promise<void> {
    this.hub = 'down';
    await this.listOffline();
  }

  /**
   * Whether a model is offered at all: a generated model only when this site serves its files
   * (a registry entry whose files were never generated cannot load).
   */
  offered(spec: ModelSpec): boolean {
    return !spec.local || !this.served || this.served.has(modelFolder(spec));
  }

  /** Where `id` loads from without the network ('cached', 'generated', 'self-hosted'), if it does. */
  offlineSource(id: string): OfflineModel['source'] | undefined {
    return this.offline?.find((m) => m.spec.id === id)?.source;
  }

  /**
   * The model to default to, given the registry's `preferred` one: `preferred` while the hub can be
   * used (and its files are offered); without the hub, `preferred` when it loads anyway, else one of
   * the same role that does (null when none does).
   */
  usable(preferred: ModelSpec | undefined): ModelSpec | null {
    if (!preferred) return null;
    if (!preferred.local && this.hub === 'unknown') this.#probe(preferred);
    if (!this.hubless) return this.offered(preferred) ? preferred : null;
    if (!this.offline) return preferred;
    return offlineDefault(this.offline, preferred);
  }

  /** What a model picker adds to a model's name while the hub cannot be used. */
  offlineLabel(id: string): string {
    if (!this.hubless || !this.offline) return '';
    const source = this.offlineSource(id);
    return source ? ` · offline (${source})` : ' · needs the network';
  }

  /**
   * Says in one line that `from` could not be downloaded and `to` is used instead. The line goes when
   * a later action succeeds (`succeeded`).
   */
  fellBack(from: ModelSpec, to: ModelSpec) {
    if (this.#fallbackNote !== null) this.messages.dismiss(this.#fallbackNote);
    const where = this.offlineSource(to.id);
    const name = from.label ?? from.id;
    this.#fallbackNote = this.messages.warn(
      `${name} could not be downloaded (huggingface.co did not answer): using ` +
        `${to.label ?? to.id}${where ? ` (${where})` : ''} instead. To use ${name} without the hub, ` +
        `self-host its files under models/${modelFolder(from)}/.`,
      'page',
    ).id;
  }

  /** An action that used a model succeeded: a fallback note from an earlier action goes. */
  succeeded(opts: { fellBack?: boolean } = {}) {
    if (opts.fellBack || this.#fallbackNote === null) return;
    this.messages.dismiss(this.#fallbackNote);
    this.#fallbackNote = null;
  }

  /** Which listing is the latest started: an older one that finishes later is dropped. */
  #listing = 0;

  /**
   * Lists what is stored now. Listings overlap (the panel lists again whenever the cached shards
   * change, and after each removal); only the latest started one is shown, so a listing that began
   * before a removal and read half of what was removed never replaces the one after it.
   */
  async refresh(): Promise<void> {
    const listing = ++this.#listing;
    try {
      const report = await listStorage();
      if (listing === this.#listing) this.report = report;
    } catch (e) {
      if (listing !== this.#listing) return;
      this.report = null;
      this.messages.error(
        `Reading this browser's storage failed: ${e instanceof Error ? e.message : String(e)}.`,
        'page',
      );
    }
  }

  /**
   * The shard whose removal waits out its undo window: hidden from the lists, deleted only when the
   * window ends, so a page closed or reloaded meanwhile keeps it. `reopen`: it was the open shard.
   */
  pendingDelete = $state.raw<{ hash: string; name: string; reopen: boolean; deleting?: boolean } | null>(
    null,
  );
  #deleteTimer: ReturnType<typeof setTimeout> | undefined;

  /** Removes a shard with its runs, embeddings and indexes once `UNDO_MS` pass without an undo. */
  async removeShard(hash: string, name: string): Promise<void> {
    await this.finishDelete();
    const reopen = this.library.shard?.summary.hash === hash;
    if (reopen) await this.library.close();
    this.pendingDelete = { hash, name, reopen };
    this.#deleteTimer = setTimeout(() => void this.finishDelete(), StorageState.UNDO_MS);
  }

  static readonly UNDO_MS = 10_000;

  /** Keeps the shard whose removal is pending (and opens it again when it was open). */
  async undoDelete(): Promise<void> {
    const p = this.pendingDelete;
    if (p?.deleting) return;
    clearTimeout(this.#deleteTimer);
    this.pendingDelete = null;
    if (p?.reopen && !this.library.shard) await this.library.open(p.hash);
  }

  /**
   * Deletes the shard whose removal is pending now (its window ended, or another removal began). The
   * notice stays, saying it is being deleted, until the transaction has committed: a reload before
   * that keeps the whole shard, so the notice must not promise it is gone.
   */
  async finishDelete(): Promise<void> {
    const p = this.pendingDelete;
    clearTimeout(this.#deleteTimer);
    if (!p || p.deleting) return this.#deleting;
    // Opened again meanwhile (a link, a demo): the user wants it after all.
    if (this.library.shard?.summary.hash === p.hash) {
      this.pendingDelete = null;
      return;
    }
    this.pendingDelete = { ...p, deleting: true };
    this.#deleting = (async () => {
      try {
        await this.library.deleteShard(p.hash);
        await this.refresh();
      } finally {
        if (this.pendingDelete?.hash === p.hash) this.pendingDelete = null;
        this.#deleting = undefined;
      }
    })();
    return this.#deleting;
  }
  #deleting: Promise<void> | undefined;

  /** Removes a shard's corpus embeddings (runs stay; the next dense run embeds again). */
  async removeEmbeddings(hash: string): Promise<void> {
    await removeEmbeddings(hash);
    await this.library.refreshSets(hash);
    await this.refresh();
  }

  /** Removes the cached parts of packed indexes (the next query reads them from their host again). */
  async clearIvf(urls: string[]): Promise<void> {
    await forgetRemoteIvf(urls);
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
