// Permalinks: retriever configurations written into a URL parameter and read back.
//   runs=bm25(k1=0.9,b=0.4);dense(model=loupe-test/clip-tiny-random,dtype=fp32,fusion=score,alpha=0.5)
//   fuse=rrf(k=60)
// Values are percent-encoded by URLSearchParams; inside a spec, `,` `(` `)` `;` are separators, so
// values containing them are escaped with encodeURIComponent.
import type { RetrieverConfig } from '../retrieval/runs';
import { DEFAULT_CHUNK_OVERLAP, type ChunkAggregate } from '../retrieval/chunking';
import type { MultiImage } from '../retrieval/multi-image';

/** A retriever to run (or find in the run store) for a permalink. */
export type RunSpec =
  | { kind: 'bm25'; k1: number; b: number }
  | {
      kind: 'dense';
      model: string;
      dtype: string;
      device: string;
      fusion: 'score' | 'feature' | 'both';
      alpha: number;
      /** Long texts (core/chunking.ts): absent or `first` = truncated to the model's window. */
      chunks?: ChunkAggregate;
      /** Tokens shared by consecutive windows (chunks mean/max). */
      overlap?: number;
      /** Multi-image items: every image by mean or max (absent: the first image). */
      images?: MultiImage;
    };

/** A fusion of all the listed runs. */
export interface FuseSpec {
  method: 'rrf' | 'combsum' | 'combmnz' | 'linear';
  k?: number;
  normalization?: 'minmax' | 'zscore';
}

export class PermalinkError extends Error {}

function parseCall(s: string): { name: string; args: Map<string, string> } {
  const m = /^\s*([a-z][a-z0-9]*)\s*(?:\((.*)\))?\s*$/.exec(s);
  if (!m) throw new PermalinkError(`cannot read "${s}": expected name(key=value,…)`);
  const args = new Map<string, string>();
  for (const part of (m[2] ?? '').split(',').filter((p) => p.trim())) {
    const eq = part.indexOf('=');
    if (eq < 0) throw new PermalinkError(`"${part}" in "${s}" is not key=value`);
    args.set(part.slice(0, eq).trim(), decodeURIComponent(part.slice(eq + 1).trim()));
  }
  return { name: m[1], args };
}

function num(args: Map<string, string>, key: string, dflt: number, where: string): number {
  const v = args.get(key);
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new PermalinkError(`${where}: ${key}=${v} is not a number`);
  return n;
}

/** Parses the `runs` parameter. */
export function parseRunSpecs(s: string): RunSpec[] {
  return s
    .split(';')
    .filter((x) => x.trim())
    .map((part): RunSpec => {
      const { name, args } = parseCall(part);
      if (name === 'bm25')
        return { kind: 'bm25', k1: num(args, 'k1', 0.9, part), b: num(args, 'b', 0.4, part) };
      if (name === 'dense') {
        const model = args.get('model');
        if (!model) throw new PermalinkError(`${part}: dense needs model=…`);
        const fusion = args.get('fusion') ?? 'both';
        if (fusion !== 'score' && fusion !== 'feature' && fusion !== 'both')
          throw new PermalinkError(`${part}: fusion must be score, feature or both`);
        const chunks = args.get('chunks') ?? 'first';
        if (chunks !== 'first' && chunks !== 'mean' && chunks !== 'max')
          throw new PermalinkError(`${part}: chunks must be first, mean or max`);
        const overlap = num(args, 'overlap', DEFAULT_CHUNK_OVERLAP, part);
        if (!Number.isInteger(overlap) || overlap < 0)
          throw new PermalinkError(`${part}: overlap must be a non-negative integer`);
        const images = args.get('images');
        if (images !== undefined && images !== 'mean' && images !== 'max')
          throw new PermalinkError(`${part}: images must be mean or max`);
        return {
          kind: 'dense',
          model,
          dtype: args.get('dtype') ?? 'auto',
          device: args.get('device') ?? 'auto',
          fusion,
          alpha: num(args, 'alpha', 0.5, part),
          ...(chunks !== 'first' ? { chunks, overlap } : {}),
          ...(images ? { images } : {}),
        };
      }
      throw new PermalinkError(`unknown retriever "${name}" (bm25 or dense)`);
    });
}

/** Parses the `fuse` parameter. */
export function parseFuseSpec(s: string): FuseSpec {
  const { name, args } = parseCall(s);
  if (name !== 'rrf' && name !== 'combsum' && name !== 'combmnz' && name !== 'linear')
    throw new PermalinkError(`unknown fusion "${name}"`);
  const normalization = args.get('norm');
  if (normalization !== undefined && normalization !== 'minmax' && normalization !== 'zscore')
    throw new PermalinkError(`norm must be minmax or zscore`);
  return {
    method: name,
    ...(args.has('k') ? { k: num(args, 'k', 60, s) } : {}),
    ...(normalization ? { normalization } : {}),
  };
}

const enc = (v: string | number) => encodeURIComponent(String(v));

export function formatRunSpec(r: RunSpec): string {
  return r.kind === 'bm25'
    ? `bm25(k1=${r.k1},b=${r.b})`
    : `dense(model=${enc(r.model)},dtype=${enc(r.dtype)},device=${enc(r.device)},fusion=${r.fusion},alpha=${r.alpha}${r.chunks && r.chunks !== 'first' ? `,chunks=${r.chunks},overlap=${r.overlap ?? DEFAULT_CHUNK_OVERLAP}` : ''}${r.images ? `,images=${r.images}` : ''})`;
}

export function formatFuseSpec(f: FuseSpec): string {
  const args = [f.k !== undefined ? `k=${f.k}` : '', f.normalization ? `norm=${f.normalization}` : ''].filter(
    Boolean,
  );
  return `${f.method}${args.length ? `(${args.join(',')})` : ''}`;
}

/** The spec that reproduces a stored run's configuration, or null (imports, fusions, reranks). */
export function specOf(c: RetrieverConfig): RunSpec | null {
  if (c.kind === 'bm25') return { kind: 'bm25', k1: c.k1, b: c.b };
  if (c.kind === 'dense')
    return {
      kind: 'dense',
      model: c.modelId,
      dtype: c.dtype,
      device: c.device,
      fusion: c.fusion?.mode ?? 'both',
      alpha: c.fusion?.textWeight ?? 0.5,
      ...(c.chunking && c.chunking.aggregate !== 'first'
        ? { chunks: c.chunking.aggregate, overlap: c.chunking.overlap }
        : {}),
      ...(c.multiImage ? { images: c.multiImage } : {}),
    };
  return null;
}

/**
 * Whether a stored run was produced by this spec (so a permalink can reuse it instead of running
 * again). `auto` dtype/device match whatever was chosen; a dense spec with fusion `both` matches
 * either fusion run.
 */
export function specMatches(spec: RunSpec, c: RetrieverConfig): boolean {
  if (spec.kind === 'bm25') return c.kind === 'bm25' && c.k1 === spec.k1 && c.b === spec.b;
  // Permalinks describe exact runs; an approximate (HNSW) run is not a match.
  if (c.kind !== 'dense' || c.modelId !== spec.model || c.ann) return false;
  if (spec.dtype !== 'auto' && c.dtype !== spec.dtype) return false;
  if (spec.device !== 'auto' && c.device !== spec.device) return false;
  // Long-text chunking: truncation (first) matches runs without chunking only.
  const chunks = spec.chunks ?? 'first';
  const runChunks = c.chunking?.aggregate ?? 'first';
  if (chunks !== runChunks) return false;
  if (chunks !== 'first' && c.chunking!.overlap !== (spec.overlap ?? DEFAULT_CHUNK_OVERLAP)) return false;
  if ((spec.images ?? null) !== (c.multiImage ?? null)) return false;
  if (!c.fusion) return true;
  if (spec.fusion !== 'both' && c.fusion.mode !== spec.fusion) return false;
  return c.fusion.mode === 'feature' || c.fusion.textWeight === spec.alpha;
}
