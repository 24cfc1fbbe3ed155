// Generates test models with deterministic random weights in the exact Hugging Face hub layout that
// transformers.js loads (config.json, tokenizer files, onnx/<name>.onnx, onnx/<name>_quantized.onnx and,
// for the bi-encoders, onnx/<name>_fp16.onnx).
// Real architectures and shapes, so compute cost, tokenisation, loading and caching are real; the
// weights are random, so similarities are meaningless. Bi-encoders (BERT, CLIP) and BERT cross-encoders
// (BertForSequenceClassification: query/document pairs → `logits`, for reranking).
//
//   npx tsx scripts/generate-models.ts [--set ci|bench|all] [--out models/generated] [--force]
//
// Idempotent: each model folder holds a small manifest (.generated.json) with the spec hash and the
// sha256 of every file; a model whose files all match is skipped. The same spec and vocabulary
// source texts always give byte-identical files.
//
// The builders live in scripts/models/: specs (the models and sets), weights (seeded random tensors),
// onnx-graph (the ONNX writer), one file per architecture (bert, xlmr, cross-encoder, clip) and per
// tokenizer (wordpiece, unigram, clip-bpe, over source-text and bpe-merges). This file writes the model
// folders and is the CLI.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { endianness } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { bertModel } from './models/bert';
import { clipModel } from './models/clip';
import { buildClipBpe } from './models/clip-bpe';
import { crossEncoderModel } from './models/cross-encoder';
import type { ModelParts } from './models/onnx-graph';
import { hasVocabShards, readSourceText, type BuiltTokenizer, type SourceText } from './models/source-text';
import { FP16_KINDS, GENERATOR_VERSION, MODELS, SETS, type BertShape, type ModelSpec } from './models/specs';
import { buildUnigram } from './models/unigram';
import { WeightStore } from './models/weights';
import { buildWordPiece } from './models/wordpiece';
import { xlmrModel } from './models/xlmr';

export { GENERATOR_VERSION, MODELS, SETS } from './models/specs';
export type { BertShape, ClipTextShape, ClipVisionShape, CrossEncoderHead, ModelSpec } from './models/specs';
export type { BuiltTokenizer } from './models/source-text';

/**
 * Folder of the benchmark shards whose text the vocabularies are learned from (read only): LOUPE_VOCAB_DIR
 * when set, else the first of LOUPE_DATA_DIR and ../shared/data that holds every VOCAB_SHARDS corpus.
 * When it does not (LOUPE_DATA_DIR pointing at the user's own shards, no shared folder), the vocabularies come from
 * a built-in deterministic text instead (see builtinSourceText), so the models never depend on user data.
 */
export const DATA_DIR = resolve(
  process.env.LOUPE_VOCAB_DIR ??
    [process.env.LOUPE_DATA_DIR, resolve(import.meta.dirname, '../../shared/data')]
      .filter((d): d is string => !!d)
      .find((d) => hasVocabShards(d)) ??
    resolve(import.meta.dirname, '../../shared/data'),
);
/** Default output folder (gitignored); model ids are folders below it. */
export const DEFAULT_OUT = resolve(import.meta.dirname, '../models/generated');

// ---- generation -----------------------------------------------------------------------------------

export interface GenerateOptions {
  /** Model ids to generate (default: the ci set). */
  models?: string[];
  /** Output folder (default models/generated). */
  out?: string;
  /** Regenerate even when the manifest matches. */
  force?: boolean;
  /** Folder of the shards the vocabularies are learned from. */
  dataDir?: string;
  /** Reuse tokenizers built earlier in this process for the same source text (default true). */
  cacheTokenizers?: boolean;
  log?: (line: string) => void;
}

export interface GeneratedModel {
  id: string;
  dir: string;
  skipped: boolean;
  seconds: number;
  files: Record<string, { bytes: number; sha256: string }>;
  ops: string[];
}

interface Manifest {
  generator: string;
  specHash: string;
  files: Record<string, { bytes: number; sha256: string }>;
  ops: string[];
}

const MANIFEST = '.generated.json';
const tokenizerCache = new Map<string, BuiltTokenizer>();

const sha256 = (data: Uint8Array | string): string => createHash('sha256').update(data).digest('hex');

function writeAtomic(path: string, data: Uint8Array | string): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

function upToDate(dir: string, specHash: string): Manifest | null {
  const path = join(dir, MANIFEST);
  if (!existsSync(path)) return null;
  let m: Manifest;
  try {
    m = JSON.parse(readFileSync(path, 'utf8')) as Manifest;
  } catch {
    return null;
  }
  if (m.generator !== GENERATOR_VERSION || m.specHash !== specHash) return null;
  for (const [file, info] of Object.entries(m.files)) {
    const p = join(dir, file);
    if (!existsSync(p) || statSync(p).size !== info.bytes) return null;
    if (sha256(readFileSync(p)) !== info.sha256) return null;
  }
  return m;
}

function modelCard(spec: ModelSpec, tokenizerStats: string, origin: string): string {
  const bert = (s: BertShape): string =>
    `BERT, hidden ${s.hidden}, ${s.layers} layers, ${s.heads} heads, ` +
    `intermediate ${s.intermediate}, vocab ${s.vocab}`;
  const shape =
    spec.kind === 'bert' || spec.kind === 'xlmr'
      ? bert(spec.shape)
      : spec.kind === 'bert-cross-encoder'
        ? `${bert(spec.shape)}; BertForSequenceClassification head (pooler dense + tanh on [CLS], ` +
          `classifier to ${spec.head.labels.length} logit${spec.head.labels.length === 1 ? '' : 's'})`
        : `CLIP, text hidden ${spec.text.hidden} × ${spec.text.layers} layers, vision ViT hidden ${spec.vision.hidden} × ` +
          `${spec.vision.layers} layers (patch ${spec.vision.patchSize}, ${spec.vision.imageSize}px), projection ${spec.projection}`;
  const meaningless =
    spec.kind === 'bert-cross-encoder' ? 'relevance scores are meaningless' : 'similarities are meaningless';
  return [
    `# ${spec.id}`,
    '',
    `Generated by Loupe's scripts/generate-models.ts (generator ${GENERATOR_VERSION}, seed ${spec.seed}): ${spec.note}.`,
    `${shape}. Tokenizer: ${tokenizerStats}, learned from ${origin}.`,
    '',
    'The weights are deterministic random numbers (normal, std 0.02; LayerNorm 1/0): shapes, compute cost,',
    `tokenisation and loading are real, ${meaningless}. onnx/*_quantized.onnx: dynamic uint8`,
    'quantization of the MatMul weights and the token embedding table.' +
      (FP16_KINDS.includes(spec.kind)
        ? ' onnx/*_fp16.onnx: the fp32 weights rounded to float16 (float32 inputs and outputs).'
        : ''),
    '',
  ].join('\n');
}

const json = (v: unknown): string => JSON.stringify(v, null, 2) + '\n';

function tokenizerFor(spec: ModelSpec, src: SourceText, cache: boolean): BuiltTokenizer {
  // BERT bi-encoders and cross-encoders share one WordPiece vocabulary.
  const wordPiece = spec.kind === 'bert' || spec.kind === 'bert-cross-encoder';
  const key = `${wordPiece ? 'bert' : spec.kind}:${src.fingerprint}`;
  let tok = cache ? tokenizerCache.get(key) : undefined;
  if (!tok) {
    tok = wordPiece ? buildWordPiece(src) : spec.kind === 'xlmr' ? buildUnigram(src) : buildClipBpe(src);
    if (cache) tokenizerCache.set(key, tok);
  }
  return tok;
}

/** Generates (or skips, when up to date) the given models; returns what was written. */
export function generateModels(options: GenerateOptions = {}): GeneratedModel[] {
  if (endianness() !== 'LE')
    throw new Error('raw tensor data is written little-endian; this host is big-endian');
  const out = resolve(options.out ?? DEFAULT_OUT);
  const dataDir = resolve(options.dataDir ?? DATA_DIR);
  const log = options.log ?? ((line: string) => console.log(line));
  const ids = options.models ?? SETS.ci;
  const src = readSourceText(dataDir, log);
  const fingerprint = src.fingerprint;
  const results: GeneratedModel[] = [];
  for (const id of ids) {
    const spec = MODELS.find((m) => m.id === id);
    if (!spec) throw new Error(`unknown model ${id}`);
    const dir = join(out, ...id.split('/'));
    const specHash = sha256(JSON.stringify({ generator: GENERATOR_VERSION, spec, fingerprint }));
    const t0 = performance.now();
    const current = options.force ? null : upToDate(dir, specHash);
    if (current) {
      const seconds = (performance.now() - t0) / 1000;
      results.push({ id, dir, skipped: true, seconds, files: current.files, ops: current.ops });
      log(
        `${id}: up to date (${formatBytes(totalBytes(current.files))}, checked in ${seconds.toFixed(2)} s)`,
      );
      continue;
    }
    rmSync(join(dir, MANIFEST), { force: true });
    const tok = tokenizerFor(spec, src, options.cacheTokenizers ?? true);
    const files: Record<string, { bytes: number; sha256: string }> = {};
    const ops = new Set<string>();
    const put = (name: string, data: Uint8Array | string): void => {
      writeAtomic(join(dir, name), data);
      const bytes = typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
      files[name] = { bytes, sha256: sha256(data) };
    };
    const store = new WeightStore(spec.seed);
    const parts: ModelParts =
      spec.kind === 'bert'
        ? bertModel(spec, store)
        : spec.kind === 'xlmr'
          ? xlmrModel(spec, store, tok.vocabSize ?? 0)
          : spec.kind === 'bert-cross-encoder'
            ? crossEncoderModel(spec, store)
            : clipModel(spec, store);
    for (const [name, content] of parts.json) put(name, json(content));
    for (const [name, content] of Object.entries(tok.files)) put(name, json(content));
    put('README.md', modelCard(spec, tok.stats, src.origin));
    for (const [name, build] of parts.graphs) {
      for (const q8 of [false, true]) {
        const g = build(q8);
        for (const op of g.opTypes) ops.add(op);
        put(
          `onnx/${name}${q8 ? '_quantized' : ''}.onnx`,
          g.encode(`${id}/${name}`, `${id} ${name} (random weights)`),
        );
        // The fp16 variant: the fp32 graph and weights converted (float16.ts).
        if (!q8 && FP16_KINDS.includes(spec.kind))
          put(
            `onnx/${name}_fp16.onnx`,
            g.encode(`${id}/${name}`, `${id} ${name} fp16 (random weights)`, true),
          );
      }
    }
    const manifest: Manifest = { generator: GENERATOR_VERSION, specHash, files, ops: [...ops].sort() };
    writeAtomic(join(dir, MANIFEST), json(manifest));
    const seconds = (performance.now() - t0) / 1000;
    results.push({ id, dir, skipped: false, seconds, files, ops: manifest.ops });
    const onnxSizes = Object.entries(files)
      .filter(([f]) => f.endsWith('.onnx'))
      .map(([f, i]) => `${f.slice(5)} ${formatBytes(i.bytes)}`)
      .join(', ');
    log(`${id}: generated in ${seconds.toFixed(1)} s: ${onnxSizes}; tokenizer ${tok.stats}`);
  }
  return results;
}

const totalBytes = (files: Record<string, { bytes: number }>): number =>
  Object.values(files).reduce((a, f) => a + f.bytes, 0);

function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${n} B`;
}

// ---- CLI ------------------------------------------------------------------------------------------

function main(): void {
  const { values } = parseArgs({
    options: {
      set: { type: 'string', default: 'ci' },
      out: { type: 'string', default: DEFAULT_OUT },
      force: { type: 'boolean', default: false },
    },
  });
  const set = values.set as keyof typeof SETS;
  if (!(set in SETS)) {
    console.error(`unknown --set ${values.set}: use ci, bench or all`);
    process.exit(2);
  }
  const t0 = performance.now();
  const results = generateModels({ models: SETS[set], out: values.out, force: values.force });
  const total = results.reduce((a, r) => a + totalBytes(r.files), 0);
  console.log(
    `${results.length} models (${results.filter((r) => !r.skipped).length} generated) in ${values.out}: ` +
      `${formatBytes(total)}, ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main();
