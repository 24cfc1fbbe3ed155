// The WordPiece tokenizer of BERT uncased (BertTokenizer's normalisation and pre-tokenisation), its
// vocabulary learned from the source text with BPE merges and filled to BERT's 30,522 entries.

import { trainMerges } from './bpe-merges';
import { BERT_VOCAB } from './specs';
import type { BuiltTokenizer, SourceText } from './source-text';

/** BERT uncased's special tokens and their ids ([unused…] fill 1–99). */
const BERT_SPECIALS: Array<[string, number]> = [
  ['[PAD]', 0],
  ['[UNK]', 100],
  ['[CLS]', 101],
  ['[SEP]', 102],
  ['[MASK]', 103],
];

/** BERT's punctuation: Unicode P plus the ASCII symbol ranges. */
const BERT_PUNCT = '\\p{P}!-/:-@\\[-`{-~';
const BERT_WORD = new RegExp(`[^\\s${BERT_PUNCT}]+|[${BERT_PUNCT}]`, 'gu');

/** BertTokenizer's normalisation: control characters dropped, whitespace to spaces, lower case, accents stripped. */
function bertNormalize(text: string): string {
  let out = '';
  for (const ch of text) {
    const cp = ch.codePointAt(0) ?? 0;
    if (cp === 0 || cp === 0xfffd || (/\p{C}/u.test(ch) && ch !== '\t' && ch !== '\n' && ch !== '\r'))
      continue;
    out += /\s/.test(ch) ? ' ' : ch;
  }
  return out
    .toLowerCase()
    .normalize('NFD')
    .replace(/\p{Mn}/gu, '');
}

/** BERT's tokenizer files, learned from `src`. */
export function buildWordPiece(src: SourceText): BuiltTokenizer {
  const words = new Map<string, number>();
  const chars = new Map<string, number>();
  for (const text of src.texts()) {
    for (const w of bertNormalize(text).match(BERT_WORD) ?? []) {
      words.set(w, (words.get(w) ?? 0) + 1);
    }
  }
  for (const [w, c] of words) for (const ch of w) chars.set(ch, (chars.get(ch) ?? 0) + c);

  const vocab: string[] = new Array<string>(104);
  for (let i = 1; i < 100; i++) vocab[i] = `[unused${i - 1}]`;
  for (const [tok, id] of BERT_SPECIALS) vocab[id] = tok;
  const seen = new Set(vocab);
  const add = (t: string): void => {
    if (!seen.has(t) && vocab.length < BERT_VOCAB) {
      seen.add(t);
      vocab.push(t);
    }
  };
  // Alphabet: printable ASCII, ## forms of letters and digits, then other characters seen ≥ 5 times.
  for (let c = 0x21; c <= 0x7e; c++) add(String.fromCharCode(c));
  for (const ch of 'abcdefghijklmnopqrstuvwxyz0123456789') add(`##${ch}`);
  const alphabet = new Set<string>([...chars].filter(([, c]) => c >= 5).map(([ch]) => ch));
  for (let c = 0x21; c <= 0x7e; c++) alphabet.add(String.fromCharCode(c));
  const extra = [...alphabet].filter((ch) => ch.codePointAt(0)! > 0x7e).sort();
  for (const ch of extra) add(ch);
  for (const ch of extra) if (/[\p{L}\p{N}]/u.test(ch)) add(`##${ch}`);

  const trainWords = new Map([...words].filter(([w]) => [...w].every((ch) => alphabet.has(ch))));
  const budget = BERT_VOCAB - vocab.length;
  const merges = trainMerges(
    trainWords,
    (w) => [...w].map((ch, i) => (i === 0 ? ch : `##${ch}`)),
    (a, b) => a + b.slice(2),
    budget,
    2,
  );
  let learned = 0;
  for (const [a, b] of merges) {
    const before = vocab.length;
    add(a + b.slice(2));
    learned += vocab.length - before;
  }
  let unused = 99;
  while (vocab.length < BERT_VOCAB) {
    const t = `[unused${unused++}]`;
    if (!seen.has(t)) add(t);
  }

  const addedToken = (content: string, id: number) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  });
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: BERT_SPECIALS.map(([t, id]) => addedToken(t, id)),
    normalizer: {
      type: 'BertNormalizer',
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } },
        { SpecialToken: { id: '[SEP]', type_id: 1 } },
      ],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [101], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [102], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(vocab.map((t, i) => [t, i])),
    },
  };
  const specialMap = {
    cls_token: '[CLS]',
    mask_token: '[MASK]',
    pad_token: '[PAD]',
    sep_token: '[SEP]',
    unk_token: '[UNK]',
  };
  const config = {
    clean_up_tokenization_spaces: true,
    do_basic_tokenize: true,
    do_lower_case: true,
    model_max_length: 512,
    never_split: null,
    strip_accents: null,
    tokenize_chinese_chars: true,
    tokenizer_class: 'BertTokenizer',
    ...specialMap,
  };
  return {
    files: {
      'tokenizer.json': tokenizer,
      'tokenizer_config.json': config,
      'special_tokens_map.json': specialMap,
    },
    stats: `WordPiece ${vocab.length} (${learned} learned pieces from ${trainWords.size} words, ${unused - 99} extra [unused])`,
  };
}
