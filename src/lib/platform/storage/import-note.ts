// A note in localStorage for each import running in this page, so that an import cut off by a
// reload or a closed tab is told about on the next start ("stopped at n of N documents"). The
// half-written records themselves are the shard cache's business: they carry no commit marker, are
// never listed, and the cache sweeps them when it opens (shard-store.ts). While the import runs, the
// page holds the Web Lock `loupe-import-note:<id>`; a note whose lock is free belongs to a page that
// is gone (another tab's running import holds its lock, so its note is left alone).
import type { Progress } from '../../core/types';

/** localStorage key prefix of the notes. */
export const IMPORT_NOTE_PREFIX = 'loupe:import:';

/** What the note says about an import in progress. */
export interface ImportNote {
  id: string;
  /** The source as messages name it (URL, zip or folder name). */
  label: string;
  startedAt: number;
  /** Documents committed to the cache so far, of `docTotal` (known once the shard was checked). */
  docsDone: number;
  docTotal?: number;
  /** Bytes of the file being checked, while the first pass reads. */
  checking?: { file: string; bytes: number; totalBytes?: number };
}

export interface ImportNoteHandle {
  /** The note's id (kept with a streamed import that may resume: import-resume.ts). */
  readonly id: string;
  /** Records progress (written at most every NOTE_EVERY_MS). */
  update(p: Progress): void;
  /** The import ended (any outcome): the note is removed and its lock released. */
  end(): void;
}

/** NOTE_EVERY_MS: least time between two writes of a note. */
const NOTE_EVERY_MS = 500;

function storage(): Storage | null {
  try {
    return globalThis.localStorage ?? null;
  } catch {
    return null; // blocked site data
  }
}

const lockName = (id: string) => `loupe-import-note:${id}`;

/** Starts the note of an import from `label`. */
export function beginImportNote(label: string): ImportNoteHandle {
  const ls = storage();
  const id = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
  const note: ImportNote = { id, label, startedAt: Date.now(), docsDone: 0 };
  let release: () => void = () => undefined;
  const locks = (globalThis.navigator as Navigator | undefined)?.locks;
  if (locks)
    void locks
      .request(lockName(id), () => new Promise<void>((resolve) => (release = resolve)))
      .catch(() => undefined);
  const save = () => {
    try {
      ls?.setItem(IMPORT_NOTE_PREFIX + id, JSON.stringify(note));
    } catch {
      // A full or blocked localStorage only costs the message after a reload.
    }
  };
  save();
  let last = 0;
  let ended = false;
  return {
    id,
    update(p) {
      if (ended) return;
      // A new stage (another file checked, the first documents stored) is saved at once: a note that
      // still named the previous file would say the wrong one after a reload.
      let moved: boolean;
      if (p.kind === 'read' || (p.kind === 'parse' && p.bytes !== undefined)) {
        moved = note.checking?.file !== p.file;
        note.checking = { file: p.file, bytes: p.bytes ?? 0, totalBytes: p.totalBytes };
      } else if (p.kind === 'store' && p.what === 'documents' && p.docTotal !== undefined) {
        moved = note.docsDone === 0 && p.done > 0;
        note.docTotal = p.docTotal;
        note.docsDone = Math.min(p.done, p.docTotal);
      } else return;
      const now = Date.now();
      if (!moved && now - last < NOTE_EVERY_MS) return;
      last = now;
      save();
    },
    end() {
      ended = true;
      ls?.removeItem(IMPORT_NOTE_PREFIX + id);
      release();
    },
  };
}

/**
 * The notes of imports whose page is gone (their lock is free): removed from localStorage and
 * returned, oldest first. Without Web Locks every note found at start is taken as stopped.
 */
export async function takeStoppedImports(): Promise<ImportNote[]> {
  const ls = storage();
  if (!ls) return [];
  const locks = (globalThis.navigator as Navigator | undefined)?.locks;
  const held = new Set(
    locks ? ((await locks.query().catch(() => ({ held: [] }))).held ?? []).map((l) => l.name) : [],
  );
  const out: ImportNote[] = [];
  for (let i = ls.length - 1; i >= 0; i--) {
    const key = ls.key(i);
    if (!key?.startsWith(IMPORT_NOTE_PREFIX)) continue;
    const id = key.slice(IMPORT_NOTE_PREFIX.length);
    if (held.has(lockName(id))) continue;
    try {
      const note = JSON.parse(ls.getItem(key) ?? 'null') as ImportNote | null;
      if (note && typeof note.label === 'string') out.push(note);
    } catch {
      // A damaged note is dropped silently.
    }
    ls.removeItem(key);
  }
  return out.sort((a, b) => a.startedAt - b.startedAt);
}

const count = (n: number) => n.toLocaleString('en');

/** The message for a stopped import. */
export function stoppedImportMessage(n: ImportNote): string {
  const where =
    n.docTotal !== undefined
      ? `stopped at ${count(n.docsDone)} of ${count(n.docTotal)} documents`
      : n.checking
        ? `stopped while checking ${n.checking.file} (${count(n.checking.bytes)}${
            n.checking.totalBytes !== undefined ? ` of ${count(n.checking.totalBytes)}` : ''
          } bytes read), before any document was stored`
        : 'stopped before any document was stored';
  return (
    `The import of ${n.label} ${where} when the page was reloaded or closed. Nothing of it was kept ` +
    '(what it had written was removed); import it again to use it.'
  );
}
