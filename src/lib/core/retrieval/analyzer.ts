// English text analysis for the lexical retriever, modelled on Lucene's EnglishAnalyzer as used by
// Anserini/Pyserini (DefaultEnglishAnalyzer: StandardTokenizer → possessive filter → lowercase →
// 33-word stop filter → Porter stemmer), so BM25 scores here can be compared with their baselines.
//
// The tokenizer approximates Lucene's StandardTokenizer (Unicode UAX#29 word boundaries):
// - A token is a run of letters, numbers and combining marks (\p{L}\p{N}\p{M}); connector
//   punctuation such as `_` (UAX#29 ExtendNumLet) stays inside a token: `foo_bar`, `__init__`.
//   Letters and digits run together: `covid19`, `h2o`, `123abc` are one token each.
// - A single "mid" character joins its neighbours only where UAX#29 says so: `.` and `'` (and
//   ’ ‘ ․) between two letters or two digits (`u.s.a`, `don't`, `3.5`, but `a9.com` → `a9` `com`),
//   `:` and `·` between two letters, `,` and `;` between two digits (`1,000`). A trailing one ends
//   the token (`U.S.` → `u.s`).
// - Everything else separates, notably `-`, `/`, `+`, `<`, `=`: `covid-19` → `covid` `19`,
//   `x-linked` → `x` `linked` (as StandardTokenizer does).
// - Han and Hiragana characters are single-character tokens and Katakana runs are split from other
//   scripts, as StandardTokenizer does; Thai/Lao/Khmer/Myanmar runs are kept whole (Lucene too).
// - Tokens longer than 255 UTF-16 units are cut into 255-unit pieces (Lucene's maxTokenLength).
// Known differences from StandardTokenizer: emoji are dropped (Lucene emits them as <EMOJI>
// tokens); the Hebrew-letter quote rules (WB7a–c) are not applied; a combining mark directly after
// a mid character breaks the join; Unicode format characters (soft hyphen, ZWJ, BOM…) are deleted
// before tokenising rather than skipped by the rules (same result for words); the text is NFKC-
// normalised first (Lucene does not), so full-width and compatibility forms (`ｆｉ`, `²`, `①`)
// become their plain equivalents; lowercasing is String#toLowerCase, whose full case mapping differs
// from Java's per-character Character.toLowerCase on a few letters (final sigma, dotted İ).
// The `stemmer` package follows Porter's reference implementation (including its `bli`→`ble` and
// `logi`→`log` departures), as Lucene's PorterStemmer does; they may differ on rare edge cases.
import { stemmer } from 'stemmer';

/**
 * Bumped whenever analysis output changes, so cached indexes built by an older analyzer are rejected.
 * 2: the per-language analyzers of analyzers.ts (English output unchanged).
 */
export const ANALYZER_VERSION = 2;

// prettier-ignore
/** Lucene's English stop words (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET), the 33 words Anserini removes. */
export const ENGLISH_STOP_WORDS: readonly string[] = Object.freeze([
  'a', 'an', 'and', 'are', 'as', 'at', 'be', 'but', 'by', 'for', 'if', 'in', 'into', 'is', 'it',
  'no', 'not', 'of', 'on', 'or', 'such', 'that', 'the', 'their', 'then', 'there', 'these', 'they',
  'this', 'to', 'was', 'will', 'with',
]);

const STOP = new Set(ENGLISH_STOP_WORDS);

/** Lucene StandardTokenizer's default maximum token length, in UTF-16 code units. */
const MAX_TOKEN_LENGTH = 255;

// Mid characters of UAX#29 that survive NFKC (their full-width/small forms normalise to these).
const MID_LETTER = ':\u00B7\u0387\u055F\u05F4\u2027';
const MID_NUM = ',;\u0589\u060C\u060D\u066C\u07F8\u2044';
const MID_NUM_LET = ".'\u2018\u2019\u2024";
const MID = MID_LETTER + MID_NUM + MID_NUM_LET;

// A candidate token: word characters with single mid characters inside; the mid joins are then
// checked against the neighbours' classes in splitMids (a regex cannot see the left neighbour's
// class through the marks cheaply).
const TOKEN_RE = new RegExp(
  `\\p{Pc}*[\\p{L}\\p{N}][\\p{L}\\p{N}\\p{M}\\p{Pc}]*(?:[${MID}][\\p{L}\\p{N}][\\p{L}\\p{N}\\p{M}\\p{Pc}]*)*`,
  'gu',
);
const HAS_MID_RE = new RegExp(`[${MID}]`, 'u');
const FORMAT_RE = /\p{Cf}/gu;
const CJK_RE = /[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}]/u;
const SINGLE_RE = /[\p{sc=Han}\p{sc=Hiragana}]/u;
const KATAKANA_RE = /[\p{sc=Katakana}\u30FC]/u;
const LETTER_RE = /[\p{L}\p{Nl}]/u;
const DIGIT_RE = /\p{Nd}/u;
const MARK_RE = /\p{M}/u;

type CharClass = 'letter' | 'digit' | 'other';

function classOf(ch: string): CharClass {
  if (LETTER_RE.test(ch)) return 'letter';
  if (DIGIT_RE.test(ch)) return 'digit';
  return 'other';
}

/** The class of the last non-mark code point of `s` (UAX#29 WB4: marks take their base's class). */
function lastBaseClass(s: string): CharClass {
  const cps = Array.from(s);
  for (let i = cps.length - 1; i >= 0; i--) if (!MARK_RE.test(cps[i])) return classOf(cps[i]);
  return 'other';
}

function midJoins(mid: string, left: CharClass, right: CharClass): boolean {
  if (MID_LETTER.includes(mid)) return left === 'letter' && right === 'letter';
  if (MID_NUM.includes(mid)) return left === 'digit' && right === 'digit';
  return left === right && left !== 'other';
}

/** Splits a candidate at the mid characters whose neighbours do not allow a join. */
function splitMids(cand: string, out: string[]): void {
  let start = 0;
  for (let i = 0; i < cand.length; i++) {
    const ch = cand[i];
    if (!MID.includes(ch)) continue;
    // The regex guarantees a word character on both sides of every mid character.
    const next = String.fromCodePoint(cand.codePointAt(i + 1)!);
    if (!midJoins(ch, lastBaseClass(cand.slice(start, i)), classOf(next))) {
      out.push(cand.slice(start, i));
      start = i + 1;
    }
  }
  out.push(cand.slice(start));
}

/** Splits Han/Hiragana characters into their own tokens and Katakana runs from other scripts. */
function splitCjk(token: string, out: string[]): void {
  let cur = '';
  let curKind = '';
  for (const cp of token) {
    if (MARK_RE.test(cp) && cur) {
      cur += cp;
      continue;
    }
    const kind = SINGLE_RE.test(cp) ? 'single' : KATAKANA_RE.test(cp) ? 'kata' : 'other';
    if (cur && (kind === 'single' || kind !== curKind)) (out.push(cur), (cur = ''));
    cur += cp;
    curKind = kind;
  }
  if (cur) out.push(cur);
}

const lowerCase = (s: string) => s.toLowerCase();

/**
 * Lucene's StandardTokenizer approximation (see the file comment); returns lowercased tokens.
 * `lower` replaces String#toLowerCase for languages with their own case rules (Turkish dotless ı).
 */
export function tokenize(text: string, lower: (s: string) => string = lowerCase): string[] {
  const norm = lower(text.normalize('NFKC').replace(FORMAT_RE, (c) => (c === '\u200B' ? ' ' : '')));
  const hasCjk = CJK_RE.test(norm);
  const raw: string[] = [];
  for (const m of norm.matchAll(TOKEN_RE)) {
    const cand = m[0];
    if (HAS_MID_RE.test(cand)) splitMids(cand, raw);
    else raw.push(cand);
  }
  const out: string[] = [];
  for (const tok of raw) {
    const pieces: string[] = [];
    if (hasCjk && CJK_RE.test(tok)) splitCjk(tok, pieces);
    else pieces.push(tok);
    for (const piece of pieces) {
      if (piece.length <= MAX_TOKEN_LENGTH) {
        out.push(piece);
        continue;
      }
      let from = 0;
      while (from < piece.length) {
        let to = Math.min(from + MAX_TOKEN_LENGTH, piece.length);
        // Do not cut a surrogate pair in half.
        if (to < piece.length && /[\uD800-\uDBFF]/.test(piece[to - 1])) to--;
        out.push(piece.slice(from, to));
        from = to;
      }
    }
  }
  return out;
}

// Stemming is the hot spot of indexing and vocabularies are small, so stems are memoised; the
// table is dropped when it grows past the cap to bound memory on huge vocabularies.
const STEM_CACHE_MAX = 200_000;
let stemCache = new Map<string, string>();

function stem(token: string): string {
  let s = stemCache.get(token);
  if (s === undefined) {
    s = stemmer(token);
    if (stemCache.size >= STEM_CACHE_MAX) stemCache = new Map();
    stemCache.set(token, s);
  }
  return s;
}

/** Analyzes text into index terms: tokenize, drop possessive `'s`, drop stop words, Porter-stem. */
export function analyze(text: string): string[] {
  const out: string[] = [];
  for (let tok of tokenize(text)) {
    // Lucene's EnglishPossessiveFilter: ASCII, right and full-width apostrophes (the last is
    // already ASCII after NFKC).
    if (tok.length >= 2 && tok.endsWith('s')) {
      const q = tok[tok.length - 2];
      if (q === "'" || q === '\u2019') tok = tok.slice(0, -2);
    }
    if (tok.length === 0 || STOP.has(tok)) continue;
    out.push(stem(tok));
  }
  return out;
}
