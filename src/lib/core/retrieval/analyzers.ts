// Text analysis per language for BM25, each analyzer named after the Lucene analyzer whose token
// stream it follows (Lucene's analysis-common module, as Anserini/Pyserini use it):
//
//   english     EnglishAnalyzer (Anserini's)  analyzer.ts: Standard → possessive → stop → Porter
//   german      GermanAnalyzer       Standard → lowercase → stop → GermanNormalization → GermanLightStem
//   spanish     SpanishAnalyzer      Standard → lowercase → stop → SpanishLightStem
//   french      FrenchAnalyzer       Standard → elision → lowercase → stop → stem (Snowball, see below)
//   italian     ItalianAnalyzer      Standard → elision → lowercase → stop → ItalianLightStem
//   portuguese  PortugueseAnalyzer   Standard → lowercase → stop → stem (Snowball, see below)
//   russian     RussianAnalyzer      Standard → lowercase → stop → Snowball Russian
//   finnish     FinnishAnalyzer      Standard → lowercase → stop → Snowball Finnish
//   turkish     TurkishAnalyzer      Standard → apostrophe → TurkishLowerCase → stop → Snowball Turkish
//   cjk         CJKAnalyzer          Standard → width (NFKC) → lowercase → CJKBigram → stop
//   thai        ThaiAnalyzer         ThaiTokenizer (dictionary word breaks) → lowercase → decimal digits
//   standard    ICUTokenizer-like    Unicode word segmentation (Intl.Segmenter) → lowercase, no stemming
//
// The Standard step is analyzer.ts's StandardTokenizer approximation (NFKC first, so full- and
// half-width forms fold as CJKWidthFilter does). Stop lists are the Snowball lists Lucene ships, as
// packaged by @orama/stopwords (identical to Lucene's for de, fr, it, pt, ru and fi).
// Known differences from Lucene, all deliberate or for want of a packaged source:
// - Spanish stop words: @orama/stopwords' Spanish list (577 words) is not Snowball's (313 words):
//   it adds words such as "actualmente", "además" and lacks some verb forms ("estás", "esté").
// - Turkish stop words: @orama/stopwords' Turkish list (279 words, a few in a legacy encoding that
//   never match) instead of Lucene's tr/stopwords.txt (212 words); both hold the common function words.
// - Thai: no stop words (Lucene's curated Thai list is in no package).
// - French and Portuguese stem with Snowball (snowball-stemmers), where Lucene's analyzers use
//   Savoy's light stemmers (FrenchLightStemFilter, PortugueseLightStemFilter): Snowball strips more
//   derivational suffixes, so a few word families merge that Lucene keeps apart.
// - Thai and the default analyzer segment with the runtime's ICU (Intl.Segmenter); dictionaries
//   differ slightly between ICU versions, so Node and Chromium can split a rare word differently.
import type snowballStemmers from 'snowball-stemmers';
import { stopwords as finnishStop } from '@orama/stopwords/finnish';
import { stopwords as frenchStop } from '@orama/stopwords/french';
import { stopwords as germanStop } from '@orama/stopwords/german';
import { stopwords as italianStop } from '@orama/stopwords/italian';
import { stopwords as portugueseStop } from '@orama/stopwords/portuguese';
import { stopwords as russianStop } from '@orama/stopwords/russian';
import { stopwords as spanishStop } from '@orama/stopwords/spanish';
import { stopwords as turkishStop } from '@orama/stopwords/turkish';
import { ENGLISH_STOP_WORDS, analyze as analyzeEnglish, tokenize } from './analyzer';

/** The analyzers Loupe implements, by id. */
export type AnalyzerId =
  | 'english'
  | 'german'
  | 'spanish'
  | 'french'
  | 'italian'
  | 'portuguese'
  | 'russian'
  | 'finnish'
  | 'turkish'
  | 'cjk'
  | 'thai'
  | 'standard';

/** A text analyzer: text in, index terms out (the same function for documents and queries). */
export interface Analyzer {
  id: AnalyzerId;
  /** The Lucene analyzer (or tokenizer) whose token stream this one follows. */
  lucene: string;
  analyze(text: string): string[];
}

/** Every analyzer id, in a stable order. */
export const ANALYZER_IDS: readonly AnalyzerId[] = Object.freeze([
  'english',
  'german',
  'spanish',
  'french',
  'italian',
  'portuguese',
  'russian',
  'finnish',
  'turkish',
  'cjk',
  'thai',
  'standard',
]);

/** Language (ISO 639-1 primary subtag) → analyzer; languages not listed use 'standard'. */
export const LANGUAGE_ANALYZERS: Readonly<Record<string, AnalyzerId>> = Object.freeze({
  en: 'english',
  de: 'german',
  es: 'spanish',
  fr: 'french',
  it: 'italian',
  pt: 'portuguese',
  ru: 'russian',
  fi: 'finnish',
  tr: 'turkish',
  zh: 'cjk',
  ja: 'cjk',
  ko: 'cjk',
  th: 'thai',
});

// ---------------------------------------------------------------------------------------------
// Token filters.

/** A stemmer memoised per analyzer: vocabularies are small and stemming is the indexing hot spot. */
function memo(fn: (t: string) => string): (t: string) => string {
  let cache = new Map<string, string>();
  return (t) => {
    let s = cache.get(t);
    if (s === undefined) {
      s = fn(t);
      // Bounded: the table is dropped when it grows past 200k entries.
      if (cache.size >= 200_000) cache = new Map();
      cache.set(t, s);
    }
    return s;
  };
}

// Snowball's stemmers (37 kB gzipped, every language in one module) load with the first
// analyzer that needs them: an English shard, the embed's usual case, never fetches them.
let snowball: typeof snowballStemmers | null = null;

/** Analyzers that stem with Snowball: `loadAnalyzers` must have loaded it before they analyze. */
export const SNOWBALL_ANALYZERS: readonly AnalyzerId[] = [
  'french',
  'portuguese',
  'russian',
  'finnish',
  'turkish',
];

/**
 * Loads what these analyzers need before they run (Snowball's stemmers for French, Portuguese,
 * Russian, Finnish and Turkish). Building a BM25 index does it; code that analyzes with a cached
 * index must await it first.
 */
export async function loadAnalyzers(ids: Iterable<AnalyzerId>): Promise<void> {
  if (snowball || ![...ids].some((id) => SNOWBALL_ANALYZERS.includes(id))) return;
  const m = await import('snowball-stemmers');
  snowball =
    (m as { default?: typeof snowballStemmers }).default ?? (m as unknown as typeof snowballStemmers);
}

function snowballStem(language: string): (t: string) => string {
  let stemmer: { stem(t: string): string } | null = null;
  return memo((t) => {
    if (!stemmer) {
      if (!snowball) throw new Error(`the ${language} analyzer is not loaded: await loadAnalyzers() first`);
      stemmer = snowball.newStemmer(language);
    }
    return stemmer.stem(t);
  });
}

/** Replaces accented vowels by their base letter, as Savoy's light stemmers do first. */
function foldVowels(s: string, map: Readonly<Record<string, string>>): string {
  let out = '';
  for (const ch of s) out += map[ch] ?? ch;
  return out;
}

const ROMANCE_VOWELS: Readonly<Record<string, string>> = Object.freeze({
  à: 'a',
  á: 'a',
  â: 'a',
  ä: 'a',
  ò: 'o',
  ó: 'o',
  ô: 'o',
  ö: 'o',
  è: 'e',
  é: 'e',
  ê: 'e',
  ë: 'e',
  ù: 'u',
  ú: 'u',
  û: 'u',
  ü: 'u',
  ì: 'i',
  í: 'i',
  î: 'i',
  ï: 'i',
});
const GERMAN_VOWELS: Readonly<Record<string, string>> = Object.freeze({
  ä: 'a',
  à: 'a',
  á: 'a',
  â: 'a',
  ö: 'o',
  ò: 'o',
  ó: 'o',
  ô: 'o',
  ï: 'i',
  ì: 'i',
  í: 'i',
  î: 'i',
  ü: 'u',
  ù: 'u',
  ú: 'u',
  û: 'u',
});

/**
 * Lucene's GermanNormalizationFilter: ß → ss; ä ö ü → a o u; and the transliterations ae, oe, ue →
 * a, o, u (ue only when the u does not follow a vowel or q, so "quelle" and "aue" keep their e).
 */
export function germanNormalize(s: string): string {
  // States: 0 ordinary, 1 after a vowel/q (a following u is not an umlaut), 2 umlaut (drop an e).
  let state = 0;
  let out = '';
  for (const c of s) {
    if (c === 'a' || c === 'o') state = 2;
    else if (c === 'u') state = state === 0 ? 2 : 1;
    else if (c === 'e') {
      if (state === 2) {
        state = 1;
        continue;
      }
      state = 1;
    } else if (c === 'i' || c === 'q' || c === 'y') state = 1;
    else if (c === 'ä' || c === 'ö' || c === 'ü') {
      out += c === 'ä' ? 'a' : c === 'ö' ? 'o' : 'u';
      state = 1;
      continue;
    } else if (c === 'ß') {
      out += 'ss';
      state = 0;
      continue;
    } else state = 0;
    out += c;
  }
  return out;
}

const ST_ENDING = new Set('bdfghklmnt');

/** Savoy's German light stemmer (Lucene's GermanLightStemmer, the "UniNE" algorithm). */
export function germanLightStem(word: string): string {
  let s = foldVowels(word, GERMAN_VOWELS);
  // Step 1: plural and case endings.
  const n1 = s.length;
  if (n1 > 5 && s.endsWith('ern')) s = s.slice(0, -3);
  else if (n1 > 4 && /e[mnrs]$/.test(s)) s = s.slice(0, -2);
  else if (n1 > 3 && s.endsWith('e')) s = s.slice(0, -1);
  else if (n1 > 3 && s.endsWith('s') && ST_ENDING.has(s[n1 - 2])) s = s.slice(0, -1);
  // Step 2: comparative/superlative and verb endings.
  const n2 = s.length;
  if (n2 > 5 && s.endsWith('est')) s = s.slice(0, -3);
  else if (n2 > 4 && /e[rn]$/.test(s)) s = s.slice(0, -2);
  else if (n2 > 4 && s.endsWith('st') && ST_ENDING.has(s[n2 - 3])) s = s.slice(0, -2);
  return s;
}

/** Savoy's Spanish light stemmer (Lucene's SpanishLightStemmer): plural and gender endings. */
export function spanishLightStem(word: string): string {
  if (word.length < 5) return word;
  const s = foldVowels(word, ROMANCE_VOWELS);
  const n = s.length;
  const last = s[n - 1];
  if (last === 'o' || last === 'a' || last === 'e') return s.slice(0, -1);
  if (last === 's') {
    if (s.endsWith('eses')) return s.slice(0, -2);
    if (s.endsWith('ces')) return `${s.slice(0, -3)}z`;
    if ('oae'.includes(s[n - 2])) return s.slice(0, -2);
  }
  return s;
}

/** Savoy's Italian light stemmer (Lucene's ItalianLightStemmer): plural and gender endings. */
export function italianLightStem(word: string): string {
  if (word.length < 6) return word;
  const s = foldVowels(word, ROMANCE_VOWELS);
  const n = s.length;
  const last = s[n - 1];
  const prev = s[n - 2];
  if (last === 'e' || last === 'i') return s.slice(0, prev === 'i' || prev === 'h' ? -2 : -1);
  if (last === 'a' || last === 'o') return s.slice(0, prev === 'i' ? -2 : -1);
  return s;
}

/** Lucene's ElisionFilter: drops an article and its apostrophe from the front (l'avion → avion). */
function elider(articles: readonly string[]): (t: string) => string {
  const set = new Set(articles);
  return (t) => {
    const at = t.search(/['\u2019]/);
    return at > 0 && set.has(t.slice(0, at)) ? t.slice(at + 1) : t;
  };
}

/** FrenchAnalyzer.DEFAULT_ARTICLES. */
const FRENCH_ARTICLES = ['l', 'm', 't', 'qu', 'n', 's', 'j', 'd', 'c', 'jusqu', 'quoiqu', 'lorsqu', 'puisqu'];
// prettier-ignore
/** ItalianAnalyzer.DEFAULT_ARTICLES. */
const ITALIAN_ARTICLES = ['c', 'l', 'all', 'dall', 'dell', 'nell', 'sull', 'coll', 'pell', 'gl', 'agl', 'dagl', 'degl', 'negl', 'sugl', 'un', 'm', 't', 's', 'v', 'd'];

/** Lucene's TurkishLowerCaseFilter: I → ı and İ → i before the ordinary lowercasing. */
export function turkishLowerCase(s: string): string {
  return s
    .replace(/I/g, 'ı')
    .replace(/İ\u0307?/g, 'i')
    .toLowerCase();
}

/** Lucene's ApostropheFilter (Turkish): drops an apostrophe and the suffix after it (Türkiye'de). */
function dropApostropheSuffix(t: string): string {
  const at = t.search(/['\u2019]/);
  return at >= 0 ? t.slice(0, at) : t;
}

/** Lucene's CJKAnalyzer default stop set (English function words that appear in CJK text). */
// prettier-ignore
const CJK_STOP_WORDS = ['a', 'and', 'are', 'as', 'at', 'be', 'but', 'by', 'for', 'if', 'in', 'into', 'is', 'it', 'no', 'not', 'of', 'on', 'or', 's', 'such', 't', 'that', 'the', 'their', 'then', 'there', 'these', 'they', 'this', 'to', 'was', 'will', 'with', 'www'];

/** Each Standard-chain analyzer's stop set and the token filters that run before it (elision…). */
const chainStops = new Map<
  AnalyzerId,
  { stop: ReadonlySet<string>; before?: (t: string) => string; lower?: (s: string) => string }
>();

/** An analyzer made of the Standard tokenizer, optional per-token filters, a stop set and a stemmer. */
function standardChain(
  id: AnalyzerId,
  lucene: string,
  stopWords: readonly string[],
  stem: (t: string) => string,
  opts: { before?: (t: string) => string; lower?: (s: string) => string; after?: (t: string) => string } = {},
): Analyzer {
  const stop = new Set(stopWords);
  chainStops.set(id, { stop, before: opts.before, lower: opts.lower });
  return {
    id,
    lucene,
    analyze(text) {
      const out: string[] = [];
      for (let tok of tokenize(text, opts.lower)) {
        if (opts.before) tok = opts.before(tok);
        if (!tok || stop.has(tok)) continue;
        if (opts.after) tok = opts.after(tok);
        const s = stem(tok);
        if (s) out.push(s);
      }
      return out;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// CJK: overlapping bigrams.

// Han (with its iteration marks), Hiragana, Katakana (with the prolonged sound mark) and Hangul:
// the scripts CJKBigramFilter bigrams. Marks (dakuten after NFKC) stay with their base.
const CJK_RUN_RE = /(?:[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}\p{sc=Hangul}\u30FC\u3005][\p{M}]*)+/gu;

/** Overlapping bigrams of a run of CJK characters; a lone character is kept as a unigram. */
export function cjkBigrams(run: string, out: string[]): void {
  // Characters with their trailing combining marks, as one unit each.
  const chars = run.match(/\P{M}\p{M}*/gu) ?? [];
  if (chars.length === 1) out.push(chars[0]);
  for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i] + chars[i + 1]);
}

function cjkAnalyzer(): Analyzer {
  const stop = new Set(CJK_STOP_WORDS);
  return {
    id: 'cjk',
    lucene: 'CJKAnalyzer',
    analyze(text) {
      const norm = text.normalize('NFKC').toLowerCase();
      const out: string[] = [];
      let from = 0;
      // Text between CJK runs goes through the Standard tokenizer; runs separated by anything
      // (space, punctuation, Latin) are bigrammed separately, as CJKBigramFilter does on gaps.
      const other = (s: string) => {
        for (const t of tokenize(s)) if (!stop.has(t)) out.push(t);
      };
      for (const m of norm.matchAll(CJK_RUN_RE)) {
        other(norm.slice(from, m.index));
        cjkBigrams(m[0], out);
        from = m.index! + m[0].length;
      }
      other(norm.slice(from));
      return out;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Dictionary word segmentation (Thai) and the language-neutral default.

interface SegmentLike {
  segment: string;
  isWordLike?: boolean;
}

/** An Intl.Segmenter for words in `locale`, or null where the runtime has none. */
function wordSegmenter(locale: string): { segment(s: string): Iterable<SegmentLike> } | null {
  const Segmenter = (Intl as { Segmenter?: typeof Intl.Segmenter }).Segmenter;
  return typeof Segmenter === 'function' ? new Segmenter(locale, { granularity: 'word' }) : null;
}

const FORMAT_RE = /\p{Cf}/gu;

/**
 * Word-like segments of lowercased text (numbers count as words, as in ICU). Segmentation sees the
 * text as written: NFKC would decompose Thai SARA AM (ำ → ํา) and break the dictionary lookup, so
 * `nfkc` normalises each word afterwards instead, as ICUTokenizer + ICUNormalizer2Filter do.
 */
function segmentWords(
  seg: { segment(s: string): Iterable<SegmentLike> },
  text: string,
  nfkc: boolean,
): string[] {
  const out: string[] = [];
  for (const s of seg.segment(text.replace(FORMAT_RE, '').toLowerCase()))
    if (s.isWordLike) out.push(nfkc ? s.segment.normalize('NFKC') : s.segment);
  return out;
}

const DIGIT_RE = /\p{Nd}/u;

/**
 * Lucene's DecimalDigitFilter: every Unicode decimal digit (Thai ๑, Arabic-Indic ٣…) becomes its
 * ASCII digit. Digits come in runs of ten from zero, so a digit's value is its distance from the
 * start of its run, modulo 10 (runs such as the mathematical digits are several sets back to back).
 */
export function foldDigits(token: string): string {
  if (/^[\x00-\x7f]*$/.test(token)) return token;
  let out = '';
  for (const ch of token) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x80 || !DIGIT_RE.test(ch)) {
      out += ch;
      continue;
    }
    let start = cp;
    while (DIGIT_RE.test(String.fromCodePoint(start - 1))) start--;
    out += String((cp - start) % 10);
  }
  return out;
}

const THAI_RUN_RE = /[\p{sc=Thai}]+/gu;

/** Overlapping character bigrams of Thai runs, the fallback without a dictionary segmenter. */
export function thaiBigramsFallback(text: string): string[] {
  const norm = text.toLowerCase();
  const out: string[] = [];
  let from = 0;
  for (const m of norm.matchAll(THAI_RUN_RE)) {
    out.push(...tokenize(norm.slice(from, m.index)));
    cjkBigrams(m[0], out);
    from = m.index! + m[0].length;
  }
  out.push(...tokenize(norm.slice(from)));
  return out;
}

function thaiAnalyzer(segmenter = wordSegmenter('th')): Analyzer {
  return {
    id: 'thai',
    lucene: 'ThaiAnalyzer',
    analyze: (text) =>
      (segmenter ? segmentWords(segmenter, text, false) : thaiBigramsFallback(text)).map(foldDigits),
  };
}

function defaultAnalyzer(segmenter = wordSegmenter('und')): Analyzer {
  return {
    id: 'standard',
    lucene: 'ICUTokenizer + lowercase',
    analyze: (text) => (segmenter ? segmentWords(segmenter, text, true) : tokenize(text)),
  };
}

// ---------------------------------------------------------------------------------------------

const builders: Record<AnalyzerId, () => Analyzer> = {
  english: () => ({ id: 'english', lucene: 'EnglishAnalyzer', analyze: analyzeEnglish }),
  german: () =>
    standardChain('german', 'GermanAnalyzer', germanStop, memo(germanLightStem), { after: germanNormalize }),
  spanish: () => standardChain('spanish', 'SpanishAnalyzer', spanishStop, memo(spanishLightStem)),
  french: () =>
    standardChain('french', 'FrenchAnalyzer', frenchStop, snowballStem('french'), {
      before: elider(FRENCH_ARTICLES),
    }),
  italian: () =>
    standardChain('italian', 'ItalianAnalyzer', italianStop, memo(italianLightStem), {
      before: elider(ITALIAN_ARTICLES),
    }),
  portuguese: () =>
    standardChain('portuguese', 'PortugueseAnalyzer', portugueseStop, snowballStem('portuguese')),
  russian: () => standardChain('russian', 'RussianAnalyzer', russianStop, snowballStem('russian')),
  finnish: () => standardChain('finnish', 'FinnishAnalyzer', finnishStop, snowballStem('finnish')),
  turkish: () =>
    standardChain('turkish', 'TurkishAnalyzer', turkishStop, snowballStem('turkish'), {
      lower: turkishLowerCase,
      before: dropApostropheSuffix,
    }),
  cjk: cjkAnalyzer,
  thai: () => thaiAnalyzer(),
  standard: () => defaultAnalyzer(),
};

const built = new Map<AnalyzerId, Analyzer>();

/** The analyzer with this id (built once, then shared). Throws on an unknown id. */
export function getAnalyzer(id: AnalyzerId): Analyzer {
  let a = built.get(id);
  if (!a) {
    const make = builders[id];
    if (!make) throw new RangeError(`unknown analyzer '${id}' (known: ${ANALYZER_IDS.join(', ')})`);
    a = make();
    built.set(id, a);
  }
  return a;
}

/** The analyzer id for a language tag ("de", "pt-BR", "zh-Hant"); English when there is none. */
export function analyzerIdForLanguage(language: string | undefined | null): AnalyzerId {
  if (!language) return 'english';
  const primary = language.trim().toLowerCase().split(/[-_]/)[0];
  return LANGUAGE_ANALYZERS[primary] ?? 'standard';
}

/** The analyzer for a language tag; English when there is none, the default analyzer when unknown. */
export function analyzerForLanguage(language: string | undefined | null): Analyzer {
  return getAnalyzer(analyzerIdForLanguage(language));
}

const ENGLISH_STOP = new Set(ENGLISH_STOP_WORDS);

/**
 * Removes the stop words of `language` from a query written in it, for analysis by another
 * language's analyzer (a Spanish query against an English index): the query's function words mean
 * nothing in the other language, and as unknown terms they would only match noise ("de", "la" in
 * English names). Returns the remaining words separated by spaces, which the other analyzer then
 * tokenizes the same way. Text in a language without a stop list, or one whose words are not
 * separated by spaces (CJK, Thai: their tokens cannot be rejoined), is returned unchanged.
 */
export function dropQueryStopWords(text: string, language: string | undefined | null): string {
  const id = analyzerIdForLanguage(language);
  if (!language || id === 'cjk' || id === 'thai' || id === 'standard') return text;
  if (id === 'english')
    return tokenize(text)
      .filter((t) => !ENGLISH_STOP.has(t))
      .join(' ');
  getAnalyzer(id);
  const chain = chainStops.get(id)!;
  return tokenize(text, chain.lower)
    .filter((t) => !chain.stop.has(chain.before ? chain.before(t) : t))
    .join(' ');
}

/** Test hooks: the Thai and default analyzers without a runtime segmenter (the fallback paths). */
export const withoutSegmenter = {
  thai: (): Analyzer => thaiAnalyzer(null),
  standard: (): Analyzer => defaultAnalyzer(null),
};
