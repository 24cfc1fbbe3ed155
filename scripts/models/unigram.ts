// The SentencePiece Unigram tokenizer of XLM-R, learned from the source text, with whole scripts
// (Cyrillic, Thai, kana, CJK, Hangul…) covered one piece per character.

import type { BuiltTokenizer, SourceText } from './source-text';

/** Whole scripts given one piece per character, so non-Latin text tokenizes offline without <unk>. */
const UNIGRAM_RANGES: Array<[number, number]> = [
  [0x20, 0x7e], // ASCII
  [0xa0, 0x24f], // Latin-1 and Latin Extended (accents of es/fr/it/de/fi/tr)
  [0x400, 0x4ff], // Cyrillic
  [0xe00, 0xe7f], // Thai
  [0x3040, 0x30ff], // Hiragana, Katakana
  [0x4e00, 0x9fff], // CJK unified ideographs
  [0xac00, 0xd7a3], // Hangul syllables
];
const UNIGRAM_WORDS = 4000;

/**
 * A SentencePiece-style Unigram tokenizer.json in XLM-R's layout: <s> <pad> </s> <unk> first, `▁word`
 * pieces for the most frequent words of the source text (scored by log frequency), then one piece per
 * character of UNIGRAM_RANGES (scored low, so words win and unseen text falls back to characters).
 */
export function buildUnigram(src: SourceText): BuiltTokenizer {
  const counts = new Map<string, number>();
  for (const text of src.texts())
    for (const w of text.normalize('NFKC').split(/\s+/)) if (w) counts.set(w, (counts.get(w) ?? 0) + 1);
  const words = [...counts]
    .filter(([w]) => w.length > 1)
    .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, UNIGRAM_WORDS);
  const total = words.reduce((a, [, c]) => a + c, 0) || 1;
  const vocab: Array<[string, number]> = [
    ['<s>', 0],
    ['<pad>', 0],
    ['</s>', 0],
    ['<unk>', 0],
    ['\u2581', -6],
  ];
  const seen = new Set(vocab.map(([p]) => p));
  const add = (piece: string, score: number): void => {
    if (!seen.has(piece)) {
      seen.add(piece);
      vocab.push([piece, score]);
    }
  };
  for (const [w, c] of words) add(`\u2581${w}`, Math.log(c / total));
  for (const [lo, hi] of UNIGRAM_RANGES)
    for (let cp = lo; cp <= hi; cp++) if (cp !== 0x20) add(String.fromCodePoint(cp), -16);
  vocab.push(['<mask>', 0]); // last, as in XLM-R
  const specials = ['<s>', '<pad>', '</s>', '<unk>'].map((content, id) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [...specials, { ...specials[0], id: vocab.length - 1, content: '<mask>', lstrip: true }],
    normalizer: {
      type: 'Sequence',
      normalizers: [{ type: 'NFKC' }, { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }],
    },
    pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
    post_processor: {
      type: 'RobertaProcessing',
      sep: ['</s>', 2],
      cls: ['<s>', 0],
      trim_offsets: true,
      add_prefix_space: true,
    },
    decoder: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
    model: { type: 'Unigram', unk_id: 3, vocab, byte_fallback: false },
  };
  const specialMap = {
    bos_token: '<s>',
    cls_token: '<s>',
    eos_token: '</s>',
    mask_token: '<mask>',
    pad_token: '<pad>',
    sep_token: '</s>',
    unk_token: '<unk>',
  };
  const config = {
    clean_up_tokenization_spaces: true,
    model_max_length: 512,
    tokenizer_class: 'XLMRobertaTokenizer',
    ...specialMap,
  };
  return {
    files: {
      'tokenizer.json': tokenizer,
      'tokenizer_config.json': config,
      'special_tokens_map.json': specialMap,
    },
    stats: `SentencePiece Unigram ${vocab.length} (${words.length} word pieces, the rest characters of Latin, Cyrillic, Thai, kana, CJK, Hangul)`,
    vocabSize: vocab.length,
  };
}
