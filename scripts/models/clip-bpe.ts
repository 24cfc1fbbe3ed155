// CLIP's byte-level BPE tokenizer: the byte-to-unicode table, CLIP's pre-tokenisation and merges learned
// from the source text, filled to CLIP's 49,408 entries.

import { trainMerges } from './bpe-merges';
import { CLIP_VOCAB } from './specs';
import type { BuiltTokenizer, SourceText } from './source-text';

/**
 * GPT-2/CLIP byte ↔ printable-character table: printable Latin-1 bytes map to themselves, the others to
 * 256+n. `byByte[b]` is byte b's character; `ordered` lists them in vocabulary order (printable first).
 */
function byteTable(): { byByte: string[]; ordered: string[] } {
  const printable = (b: number): boolean => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
  const byByte = new Array<string>(256);
  const order: number[] = [];
  for (let b = 0; b < 256; b++) if (printable(b)) order.push(b);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (printable(b)) byByte[b] = String.fromCharCode(b);
    else {
      byByte[b] = String.fromCharCode(256 + n++);
      order.push(b);
    }
  }
  return { byByte, ordered: order.map((b) => byByte[b]) };
}

/** CLIP's pre-tokenisation pattern, its begin- and end-of-text tokens. */
const CLIP_SPLIT =
  "<\\|startoftext\\|>|<\\|endoftext\\|>|'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+";
const CLIP_BOS = '<|startoftext|>';
const CLIP_EOS = '<|endoftext|>';

/** CLIP's tokenizer files, learned from `src`. */
export function buildClipBpe(src: SourceText): BuiltTokenizer {
  const { byByte, ordered } = byteTable();
  const enc = new TextEncoder();
  const split = new RegExp(CLIP_SPLIT, 'gu');
  const words = new Map<string, number>();
  for (const text of src.texts()) {
    const norm = text.normalize('NFC').replace(/\s+/g, ' ').toLowerCase();
    for (const piece of norm.match(split) ?? []) {
      let w = '';
      for (const b of enc.encode(piece)) w += byByte[b];
      words.set(w, (words.get(w) ?? 0) + 1);
    }
  }
  const vocab: string[] = [...ordered, ...ordered.map((c) => `${c}</w>`)];
  const seen = new Set(vocab);
  const budget = CLIP_VOCAB - 2 - vocab.length;
  const merges = trainMerges(
    words,
    (w) => {
      const s = [...w];
      s[s.length - 1] += '</w>';
      return s;
    },
    (a, b) => a + b,
    budget,
    2,
  );
  for (const [a, b] of merges) {
    const t = a + b;
    if (!seen.has(t)) {
      seen.add(t);
      vocab.push(t);
    }
  }
  const learned = vocab.length - 512;
  let unused = 0;
  while (vocab.length < CLIP_VOCAB - 2) vocab.push(`<|unused${unused++}|>`);
  vocab.push(CLIP_BOS, CLIP_EOS);

  const addedToken = (content: string, id: number) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: true,
    special: true,
  });
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [addedToken(CLIP_BOS, CLIP_VOCAB - 2), addedToken(CLIP_EOS, CLIP_VOCAB - 1)],
    normalizer: {
      type: 'Sequence',
      normalizers: [
        { type: 'NFC' },
        { type: 'Replace', pattern: { Regex: '\\s+' }, content: ' ' },
        { type: 'Lowercase' },
      ],
    },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: CLIP_SPLIT }, behavior: 'Removed', invert: true },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: {
      type: 'RobertaProcessing',
      sep: [CLIP_EOS, CLIP_VOCAB - 1],
      cls: [CLIP_BOS, CLIP_VOCAB - 2],
      trim_offsets: false,
      add_prefix_space: false,
    },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: CLIP_EOS,
      continuing_subword_prefix: '',
      end_of_word_suffix: '</w>',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: Object.fromEntries(vocab.map((t, i) => [t, i])),
      merges: merges.map(([a, b]) => `${a} ${b}`),
    },
  };
  const specialMap = { bos_token: CLIP_BOS, eos_token: CLIP_EOS, pad_token: CLIP_EOS, unk_token: CLIP_EOS };
  const config = {
    add_prefix_space: false,
    clean_up_tokenization_spaces: false,
    do_lower_case: true,
    errors: 'replace',
    model_max_length: 77,
    tokenizer_class: 'CLIPTokenizer',
    ...specialMap,
  };
  return {
    files: {
      'tokenizer.json': tokenizer,
      'tokenizer_config.json': config,
      'special_tokens_map.json': specialMap,
    },
    stats: `byte-level BPE ${vocab.length} (${merges.length} merges, ${learned} learned tokens, ${unused} <|unused|>)`,
  };
}
