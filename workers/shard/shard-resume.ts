// Resuming a stopped streamed import in the shard worker (issue 18; records in
// src/lib/platform/storage/import-resume.ts). Pass 1 is not run again: its result is in the `state` record.
// The source must be the same one: a URL is fetched again and its corpus file checked by the identity
// headers it had (size, ETag, Last-Modified), then read with a Range request from the hash block the
// import stopped in (a server that ignores Range sends it whole and the reader skips); a folder or zip,
// picked again by the user, is checked by its files' sizes and the digests of every file but the
// corpus, and its corpus is read from the start, its part already stored hashed again and compared.
// Either way the corpus's digest is checked at the end, as in any streamed import.
import { HASH_BLOCK_BYTES, FileHasher, toHex } from '../../src/lib/core/shard/hash';
import { ShardValidationError, type ShardIssue, type ShardSource } from '../../src/lib/core/shard/source';
import { DocCheckRefs, streamCorpus } from '../../src/lib/core/shard/stream-corpus';
import type { ParsedShard, ProgressFn } from '../../src/lib/core/types';
import type { ShardLimits } from '../../src/lib/core/shard/limits';
import {
  discardPaused,
  fetchFrom,
  readResume,
  remoteIdentity,
  sameRemote,
  type RemoteIdentity,
  type ResumeSource,
} from '../../src/lib/platform/storage/import-resume';
import { hashRange, type ShardStore, type ShardSummary } from '../../src/lib/platform/storage/shard-store';
import { putStreamed, type ResumeKeep } from '../../src/lib/platform/storage/shard-stream-store';
import {
  sourceFromDescriptor,
  streamChunks,
  type SourceDescriptor,
} from '../../src/lib/platform/sources/sources';

/** The URL of a file of a shard served at `base` (each path segment encoded, as urlSource does). */
function fileUrl(base: string, path: string): string {
  return new URL(path.split('/').map(encodeURIComponent).join('/'), base).href;
}

/** What a fresh streamed import keeps so that it can resume (putStreamed's `resumable.keep`). */
export async function resumeKeep(
  descriptor: SourceDescriptor,
  source: ShardSource,
  parsed: ParsedShard,
  noteId: string | undefined,
  precomputed: boolean,
): Promise<ResumeKeep> {
  const files = parsed.streamed?.files ?? {};
  const corpus = parsed.streamed!.corpusFile;
  let resumeSource: ResumeSource;
  let remote: RemoteIdentity | undefined;
  let sizes: Record<string, number | null> | undefined;
  if (descriptor.kind === 'url') {
    resumeSource = { kind: 'url', url: source.label };
    remote = (await remoteIdentity(fileUrl(source.label, corpus))) ?? undefined;
  } else {
    resumeSource = { kind: descriptor.kind, name: source.label };
    sizes = {};
    for (const p of Object.keys(files)) sizes[p] = (await source.size(p)) ?? null;
  }
  return {
    ...(noteId !== undefined ? { noteId } : {}),
    source: resumeSource,
    ...(remote ? { remote } : {}),
    ...(sizes ? { sizes } : {}),
    precomputed,
  };
}

export type ResumeOutcome =
  | {
      ok: true;
      summary: ShardSummary;
      parsed: ParsedShard;
      source: ShardSource;
      checkDocs: DocCheckRefs | null;
    }
  | { ok: false; issues: ShardIssue[] };

/**
 * Goes on with the stopped import of `hash`: `descriptor` is the source picked again (a folder or
 * zip); a URL import needs none. A source that is not the same is refused, and the stopped import
 * discarded, with issues saying which file differs.
 */
export async function resumeStreamed(
  store: ShardStore,
  hash: string,
  descriptor: SourceDescriptor | undefined,
  report: ProgressFn,
  limits?: Partial<ShardLimits>,
): Promise<ResumeOutcome> {
  const r = await readResume(store, hash);
  if (!r)
    return {
      ok: false,
      issues: [
        {
          file: '(stopped import)',
          code: 'nothing-to-resume',
          message:
            'there is no stopped import of this shard to resume any more (it was completed, discarded or ' +
            'imported again meanwhile)',
        },
      ],
    };
  const { state, progress } = r;
  const parsed = state.parsed;
  const streamed = parsed.streamed!;
  const corpus = streamed.corpusFile;
  const label = state.sourceLabel;
  const differs = async (file: string, why: string): Promise<ResumeOutcome> => {
    await discardPaused(store, hash);
    return {
      ok: false,
      issues: [
        {
          file,
          code: 'source-differs',
          message:
            `${file} ${why}, so ${label} is not the source the stopped import started from; the stopped ` +
            'import was discarded (nothing of it is kept). Import the source again from the start',
        },
      ],
    };
  };
  const at = progress?.mark;
  let source: ShardSource;
  let streamOffset = 0;
  if (state.source.kind === 'url') {
    const base = sourceFromDescriptor({ kind: 'url', url: state.source.url });
    const url = fileUrl(base.label, corpus);
    const now = await remoteIdentity(url);
    if (!now) return differs(corpus, 'can no longer be fetched');
    if (!state.remote)
      return differs(
        corpus,
        'could not be identified when the import started (the server answered no HEAD request)',
      );
    if (!sameRemote(state.remote, now))
      return differs(corpus, 'has changed on the server (its size, ETag or Last-Modified differ)');
    report({ kind: 'status', message: `Resuming ${label}` });
    const start = at ? Math.floor(at.offset / HASH_BLOCK_BYTES) * HASH_BLOCK_BYTES : 0;
    const got = await fetchFrom(url, start, state.remote);
    if (!got) return differs(corpus, 'can no longer be fetched');
    if (!sameRemote(state.remote, got.identity))
      return differs(corpus, 'has changed on the server (its size, ETag or Last-Modified differ)');
    streamOffset = got.start;
    let body: ReadableStream<Uint8Array> | null = got.body;
    source = {
      ...base,
      open: async (path) => {
        if (path !== corpus || !body) return base.open(path);
        const b = body;
        body = null;
        return streamChunks(b);
      },
      // The reader's progress counts the bytes of the whole file.
      size: async (path) => (path === corpus ? now.size : base.size(path)),
    };
  } else {
    if (!descriptor || descriptor.kind === 'url')
      return {
        ok: false,
        issues: [
          {
            file: '(stopped import)',
            code: 'pick-source',
            message: `pick ${state.source.name} again to resume its import`,
          },
        ],
      };
    source = sourceFromDescriptor(descriptor);
    report({ kind: 'status', message: `Checking that ${source.label} is the same as before` });
    for (const [path, size] of Object.entries(state.sizes ?? {})) {
      const now = (await source.size(path)) ?? null;
      if (now === null) return differs(path, `is missing from ${source.label}`);
      if (now !== size) return differs(path, `has ${now} bytes where it had ${size}`);
    }
    for (const [path, digest] of Object.entries(streamed.files ?? {})) {
      if (path === corpus) continue; // checked as it is read again
      const stream = await source.open(path);
      if (!stream) return differs(path, `is missing from ${source.label}`);
      const h = new FileHasher();
      for await (const chunk of stream) {
        const w = h.update(chunk);
        if (w) await w;
      }
      if (toHex(await h.digest()) !== digest) return differs(path, 'has other content than before');
    }
  }
  let summary: ShardSummary;
  try {
    summary = await putStreamed(
      store,
      parsed,
      (add) =>
        streamCorpus(
          source,
          { format: parsed.manifest.format, ...streamed },
          add,
          { limits },
          at ? { at, streamOffset } : undefined,
        ),
      new Map(state.images),
      label,
      report,
      { from: progress ?? null },
    );
  } catch (e) {
    // The corpus read again is not what it was (putStreamed discarded the stopped import).
    if (e instanceof ShardValidationError && e.issues.some((i) => i.code === 'changed-during-import'))
      return differs(corpus, 'has other content than when the import started');
    throw e;
  }
  return {
    ok: true,
    summary,
    parsed,
    source,
    checkDocs: state.precomputed ? await docRefsOf(store, hash) : null,
  };
}

/** What the precomputed-embedding checks need of a cached shard's documents, read chunk by chunk. */
async function docRefsOf(store: ShardStore, hash: string): Promise<DocCheckRefs> {
  const refs = new DocCheckRefs();
  const db = await store.db();
  let cur = await db.transaction('docs', 'readonly').store.openCursor(hashRange(hash));
  while (cur) {
    for (const d of cur.value.records) refs.add(d);
    cur = await cur.continue();
  }
  return refs;
}
