// The text the tokenizers' vocabularies are learned from: the demo shards' corpus and queries (a fixed
// list, fingerprinted), or a built-in deterministic text when they are absent; and what a tokenizer
// builder returns.

import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Shards (fixed list, so adding a shard does not silently change the vocabularies). */
export const VOCAB_SHARDS = ['medquad', 'r2med-demo', 'vqa-rad'];

/** The vocabulary source: its fingerprint, its texts and a line for the model card. */
export interface SourceText {
  /** sha256 over the source files: part of every model's spec hash. */
  fingerprint: string;
  /** Titles and texts of every row (parsed on first call). */
  texts: () => string[];
  /** What the text is, for the model card. */
  origin: string;
}

/** Whether `dir` holds every VOCAB_SHARDS corpus. */
export function hasVocabShards(dir: string): boolean {
  return VOCAB_SHARDS.every((shard) => existsSync(join(dir, shard, 'corpus.jsonl')));
}

/** The vocabulary text from `dataDir`'s VOCAB_SHARDS, or the built-in text when they are not all there. */
export function readSourceText(dataDir: string, log: (line: string) => void): SourceText {
  if (!hasVocabShards(dataDir)) {
    log(
      `vocabulary: ${VOCAB_SHARDS.map((s) => `${s}/corpus.jsonl`).join(', ')} not all in ${dataDir}; ` +
        'using the built-in vocabulary text (models differ from those learned from the demo shards; ' +
        'set LOUPE_VOCAB_DIR to the shared data folder to get those)',
    );
    return builtinSourceText();
  }
  const hash = createHash('sha256');
  const raws: Buffer[] = [];
  for (const shard of VOCAB_SHARDS) {
    for (const file of ['corpus.jsonl', 'queries.jsonl']) {
      const path = join(dataDir, shard, file);
      if (!existsSync(path)) continue; // only queries.jsonl can be missing here (hasVocabShards)
      const raw = readFileSync(path);
      hash.update(`${shard}/${file}\0`).update(raw);
      raws.push(raw);
    }
  }
  let texts: string[] | null = null;
  const parse = (): string[] => {
    const out: string[] = [];
    for (const raw of raws) {
      for (const line of raw.toString('utf8').split('\n')) {
        if (!line.trim()) continue;
        const row = JSON.parse(line) as { title?: unknown; text?: unknown };
        if (typeof row.title === 'string' && row.title) out.push(row.title);
        if (typeof row.text === 'string' && row.text) out.push(row.text);
      }
    }
    return out;
  };
  return {
    fingerprint: hash.digest('hex'),
    texts: () => (texts ??= parse()),
    origin: "the benchmark shards' text",
  };
}

/** Bump when builtinSourceText's output changes (it is part of every model's spec hash). */
const BUILTIN_TEXT_VERSION = 'builtin-1';

/**
 * Deterministic stand-in for the demo shards' text: sentences of pseudo-words built from syllables with
 * a Zipf-like frequency (a seeded PRNG), plus a fixed list of common English and medical words, so the
 * trained tokenizers have realistic merges. Same output on every machine.
 */
function builtinSourceText(): SourceText {
  const words =
    'the of and to in is for with on as by that this are from or be at an which patients disease ' +
    'treatment symptoms cause causes blood heart lung liver kidney brain cancer tumor cell cells ' +
    'infection pain chest abdomen image images scan ct mri x-ray radiograph fracture lesion normal ' +
    'left right upper lower mass fluid artery vein bone muscle skin eye ear nose throat what how ' +
    'who when where does can may should diagnosis therapy drug dose children adults women men risk ' +
    'genetic syndrome chronic acute severe mild test tests result results study studies clinical';
  const common = words.split(' ');
  const onsets = [
    '',
    'b',
    'c',
    'd',
    'f',
    'g',
    'h',
    'l',
    'm',
    'n',
    'p',
    'r',
    's',
    't',
    'v',
    'br',
    'ch',
    'cr',
    'gl',
    'pl',
    'st',
    'th',
    'tr',
  ];
  const nuclei = ['a', 'e', 'i', 'o', 'u', 'ia', 'io', 'ea', 'ou', 'y'];
  const codas = ['', '', 'n', 'r', 's', 'l', 'm', 'x', 'st', 'nt', 'ct', 'ph'];
  let state = 0x9e3779b9;
  // mulberry32: tiny, seeded, identical everywhere.
  const rand = (): number => {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
  const lexicon: string[] = [...common];
  while (lexicon.length < 6000) {
    let w = '';
    const syllables = 1 + Math.floor(rand() * 4);
    for (let i = 0; i < syllables; i++) w += pick(onsets) + pick(nuclei) + pick(codas);
    lexicon.push(w);
  }
  const texts: string[] = [];
  for (let s = 0; s < 20000; s++) {
    const n = 4 + Math.floor(rand() * 16);
    const ws: string[] = [];
    // rank ~ exp(u * ln N): a Zipf-like skew towards the first (common) words.
    for (let i = 0; i < n; i++) ws.push(lexicon[Math.floor(Math.exp(rand() * Math.log(lexicon.length))) - 1]);
    if (rand() < 0.2) ws.push(String(Math.floor(rand() * 1000)));
    texts.push(ws.join(' ') + (rand() < 0.3 ? '?' : '.'));
  }
  const fingerprint = createHash('sha256')
    .update(BUILTIN_TEXT_VERSION)
    .update(texts.join('\n'))
    .digest('hex');
  return {
    fingerprint,
    texts: () => texts,
    origin: 'a built-in deterministic text (the demo shards were not found)',
  };
}

/** A tokenizer's files (tokenizer.json, tokenizer_config.json, special_tokens_map.json) and a summary. */
export interface BuiltTokenizer {
  files: Record<string, object>;
  stats: string;
  /** Vocabulary size, when the model's embedding table follows it (XLM-R). */
  vocabSize?: number;
}
