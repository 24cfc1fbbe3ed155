// The open shard's documents, read by id from IndexedDB when a panel shows them, never all held by
// the page: at a million documents the corpus is over a gigabyte, and a Map of it took seconds of
// main-thread work on open (issue 18). The sorted id directory answers "is this a document of the
// shard" at once; `get` returns a document when it is cached and otherwise asks for its chunk,
// and the panels that read it update when it arrives. Small shards are read whole on open, so what
// they show never waits.
import type { Doc } from '../core/types';
import { findDocRow, type DocDirectory, type DocFacts } from '../core/shard/doc-directory';
import { readDocRows } from '../platform/storage/shard-docs';
import type { ShardStore } from '../platform/storage/shard-store';

/** The documents whose image is a query's, as report.ts's queryFacets takes them. */
export function queryImageDocs(s: { docs: ShardDocs }): { image: string; meta: Doc['meta'] }[] {
  return s.docs.facts.queryImageDocs.map(([image, , meta]) => ({ image, meta }));
}

/**
 * Finds rows by id where the page holds no id directory (a shard read from its host with a version 2
 * offsets file: remote-first.ts looks ids up by Range when they are first wanted).
 */
export interface DocLookup {
  readonly count: number;
  /** The row of `id` when known (-1: the shard has no such document), else undefined. */
  known(id: string): number | undefined;
  /** Looks `ids` up: afterwards `known` answers for each. */
  lookup(ids: string[]): Promise<void>;
}

/** Corpora up to this many documents are read whole when opened. */
export const READ_WHOLE_UP_TO = 5000;
/** Documents kept cached beyond those read whole (the oldest go first). */
const CACHE_LIMIT = 20_000;

export class ShardDocs {
  readonly count: number;
  readonly facts: DocFacts;
  #version = $state(0);
  #cache = new Map<number, Doc>();
  #wanted = new Set<number>();
  /** Ids wanted whose rows are not known yet (a DocLookup's). */
  #wantedIds = new Set<string>();
  #scheduled = false;
  #whole = false;

  constructor(
    private store: ShardStore | null,
    private hash: string,
    private dir: DocDirectory | DocLookup,
    facts: DocFacts,
    /** Told when a read fails (a damaged shard is dropped by the read). */
    private onError: (e: unknown) => void,
    /** Reads rows from elsewhere than the cache (a shard read from its host by Range: remote-first.ts). */
    private readRows?: (rows: number[]) => Promise<Map<number, Doc>>,
  ) {
    this.count = 'known' in dir ? dir.count : dir.rows.length;
    this.facts = facts;
  }

  /** Reads every document when the corpus is small (then `get` never waits). */
  async readWholeIfSmall(): Promise<void> {
    if (this.count > READ_WHOLE_UP_TO || this.readRows) return;
    const rows = Array.from({ length: this.count }, (_, i) => i);
    for (const [r, d] of await this.#read(rows)) this.#cache.set(r, d);
    this.#whole = true;
  }

  /** Whether every document was read on open (a small corpus). */
  get whole(): boolean {
    return this.#whole;
  }

  /** How many documents the page holds now (reactive). */
  get held(): number {
    void this.#version;
    return this.#cache.size;
  }

  /** The row of `id` (-1: none), or undefined while a DocLookup has not looked it up. */
  #row(id: string): number | undefined {
    return 'known' in this.dir ? this.dir.known(id) : findDocRow(this.dir, id);
  }

  /** Whether the shard has a document `id` (an id not looked up yet counts as one). */
  has(id: string): boolean {
    return (this.#row(id) ?? 0) >= 0;
  }

  /**
   * Document `id` when it is cached; otherwise undefined, and it is read (a reactive reader runs again
   * when it arrives). Undefined for good when the shard has no such document (see `has`).
   */
  get(id: string): Doc | undefined {
    void this.#version;
    const r = this.#row(id);
    if (r !== undefined && r < 0) return undefined;
    const d = r === undefined ? undefined : this.#cache.get(r);
    if (d || this.#whole) return d;
    if (r === undefined) this.#wantedIds.add(id);
    else this.#wanted.add(r);
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(() => void this.#readWanted());
    }
    return undefined;
  }

  /** The documents of `ids` that the shard has, read where not cached. */
  async load(ids: Iterable<string>): Promise<Map<string, Doc>> {
    const out = new Map<string, Doc>();
    const missing: number[] = [];
    const list = [...ids];
    const unknown = list.filter((id) => this.#row(id) === undefined);
    if (unknown.length && 'known' in this.dir) await this.dir.lookup(unknown);
    for (const id of list) {
      const r = this.#row(id) ?? -1;
      if (r < 0) continue;
      const d = this.#cache.get(r);
      if (d) out.set(id, d);
      else missing.push(r);
    }
    if (missing.length) {
      const got = await this.#read(missing);
      for (const [r, d] of got) {
        out.set(d.id, d);
        this.#keep(r, d);
      }
      this.#version++;
    }
    return out;
  }

  async #readWanted() {
    this.#scheduled = false;
    const ids = [...this.#wantedIds];
    this.#wantedIds.clear();
    try {
      if (ids.length && 'known' in this.dir) {
        await this.dir.lookup(ids);
        for (const id of ids) {
          const r = this.#row(id) ?? -1;
          if (r >= 0) this.#wanted.add(r);
        }
      }
    } catch (e) {
      this.onError(e);
      return;
    }
    const rows = [...this.#wanted];
    this.#wanted.clear();
    if (!rows.length) return void this.#version++;
    try {
      const got = await this.#read(rows);
      for (const [r, d] of got) this.#keep(r, d);
      this.#version++;
    } catch (e) {
      this.onError(e);
    }
  }

  #read(rows: number[]): Promise<Map<number, Doc>> {
    return this.readRows ? this.readRows(rows) : readDocRows(this.store!, this.hash, rows);
  }

  #keep(r: number, d: Doc) {
    this.#cache.delete(r);
    this.#cache.set(r, d);
    if (this.#whole) return;
    for (const old of this.#cache.keys()) {
      if (this.#cache.size <= CACHE_LIMIT) break;
      this.#cache.delete(old);
    }
  }

  /** Closes the store connection (the shard was closed). */
  close() {
    void this.store?.close();
  }
}
