import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ANALYZER_VERSION,
  ENGLISH_STOP_WORDS,
  analyze,
  tokenize,
} from '../../src/lib/core/retrieval/analyzer';
import type { AnalyzerId } from '../../src/lib/core/retrieval/analyzers';
import {
  bm25AnalyzerKey,
  bm25Doc,
  buildBm25Index,
  bm25HasTokens,
  byte4ToInt,
  explainBm25,
  intToByte4,
  searchBm25,
  type Bm25Index,
} from '../../src/lib/core/retrieval/bm25';
import {
  BM25_FORMAT_VERSION,
  CorruptIndexError,
  deserializeBm25,
  serializeBm25,
  type SerializedBm25,
} from '../../src/lib/core/retrieval/bm25-store';
import { TopK, compareUtf8 } from '../../src/lib/core/retrieval/topk';
import type { Progress, ScoredDoc } from '../../src/lib/core/types';
import { DATA_DIR } from '../paths';

const K1 = 0.9;
const B = 0.4;

/** BM25 written out from the definition, independently of the implementation. */
function bm25Term(tf: number, df: number, dl: number, n: number, avgdl: number, queryCount = 1): number {
  const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
  return (queryCount * idf * tf) / (tf + K1 * (1 - B + (B * dl) / avgdl));
}

// Lengths after analysis: d1 = heart attack heart heart pain (5), d2 = lung lung cancer heart (4;
// "and" is a stop word), d3 = cancer cancer cancer treatment (4); d4 has no text (an image-only
// document) and d5 only stop words, so neither is indexed: N = 3, avgdl = 13 / 3.
const SMALL = [
  { id: 'd1', title: 'Heart attack', text: 'heart heart pain' },
  { id: 'd2', title: 'Lung', text: 'lung cancer and heart' },
  { id: 'd3', title: '', text: 'cancer cancer cancer treatment' },
  { id: 'd4', title: '', text: '' },
  { id: 'd5', title: 'The', text: 'and of' },
];
const N = 3;
const AVGDL = 13 / 3;

const exact = { k1: K1, b: B, lossyLengths: false };

function scoresOf(run: ScoredDoc[]): Record<string, number> {
  return Object.fromEntries(run.map((r) => [r.docId, r.score]));
}

describe('analyzer', () => {
  it('removes the 33 Lucene English stop words', () => {
    expect(ENGLISH_STOP_WORDS).toHaveLength(33);
    expect(analyze(ENGLISH_STOP_WORDS.join(' '))).toEqual([]);
    expect(analyze('The treatment of the disease is not known')).toEqual(['treatment', 'diseas', 'known']);
  });

  it('Porter-stems', () => {
    expect(analyze('hemorrhages')).toEqual(['hemorrhag']);
    expect(analyze('Hemorrhages of the lungs')).toEqual(['hemorrhag', 'lung']);
    expect(analyze('running relational generalizations')).toEqual(['run', 'relat', 'gener']);
  });

  it('removes possessives (ASCII, right and full-width apostrophes)', () => {
    expect(analyze("the patient's doctor")).toEqual(['patient', 'doctor']);
    expect(analyze('the patient\u2019s doctor')).toEqual(['patient', 'doctor']);
    expect(analyze('the patient\uFF07s doctor')).toEqual(['patient', 'doctor']);
    expect(analyze("patients' records")).toEqual(['patient', 'record']);
    // Not a possessive, kept joined like StandardTokenizer does.
    expect(tokenize("don't")).toEqual(["don't"]);
  });

  it('handles Unicode letters, NFKC and lowercasing', () => {
    expect(analyze('Ärzte')).toEqual(['ärzte']);
    expect(analyze('naïve')).toEqual(['naïv']);
    // Decomposed ï (i + U+0308) is composed by NFKC into the same token.
    expect(analyze('nai\u0308ve')).toEqual(['naïv']);
    expect(tokenize('ＣＯＶＩＤ　ｐａｔｉｅｎｔｓ')).toEqual(['covid', 'patients']);
    expect(tokenize('soft\u00ADhyphen')).toEqual(['softhyphen']);
    expect(tokenize('漢字かなカタカナabc')).toEqual(['漢', '字', 'か', 'な', 'カタカナ', 'abc']);
  });

  it('tokenizes digits the way StandardTokenizer does', () => {
    expect(tokenize('covid-19 3.5 mg 1,000 COVID19 h2o')).toEqual([
      'covid',
      '19',
      '3.5',
      'mg',
      '1,000',
      'covid19',
      'h2o',
    ]);
    expect(tokenize('U.S.A. a9.com x-linked 1990s 2.5.')).toEqual([
      'u.s.a',
      'a9',
      'com',
      'x',
      'linked',
      '1990s',
      '2.5',
    ]);
    expect(tokenize('foo_bar a:b 3:4 7,b')).toEqual(['foo_bar', 'a:b', '3', '4', '7', 'b']);
    // Tokens are cut at Lucene's 255-character limit.
    expect(tokenize('x'.repeat(600)).map((t) => t.length)).toEqual([255, 255, 90]);
  });

  it('treats markup as plain text', () => {
    expect(tokenize('<img src=x onerror=alert(1)>')).toEqual(['img', 'src', 'x', 'onerror', 'alert', '1']);
    expect(analyze('<script>alert("x")</script>')).toEqual(['script', 'alert', 'x', 'script']);
  });
});

describe('Lucene one-byte length norm', () => {
  it('matches values derived from SmallFloat.intToByte4 / byte4ToInt', () => {
    // From an independent Python implementation of the algorithm (lengths below 24 are their own
    // byte; above, length − 24 is stored as a float with 3 explicit mantissa bits, exponent + 1):
    //   python3 -c "e4=lambda v:v if v.bit_length()<4 else ((v>>(v.bit_length()-4))&7)|((v.bit_length()-3)<<3);
    //     d4=lambda i:i if i<8 else ((i&7)|8)<<((i>>3)-1); F=255-e4(2**31-1); enc=lambda v:v if v<F else F+e4(v-F);
    //     dec=lambda b:b if b<F else F+d4(b-F); print([(v,enc(v),dec(enc(v))) for v in (0,1,23,24,39,40,41,42,100,141,1000,2**31-1)], dec(254), dec(200))"
    const table: [length: number, byte: number, decoded: number][] = [
      [0, 0, 0],
      [1, 1, 1],
      [23, 23, 23],
      [24, 24, 24],
      [39, 39, 39],
      [40, 40, 40],
      [41, 40, 40],
      [42, 41, 42],
      [100, 57, 96],
      [141, 62, 136],
      [1000, 87, 984],
      [2 ** 31 - 1, 255, 2013265944],
    ];
    for (const [len, byte, decoded] of table) {
      expect(intToByte4(len)).toBe(byte);
      expect(byte4ToInt(byte)).toBe(decoded);
    }
    expect(byte4ToInt(254)).toBe(1879048216);
    expect(byte4ToInt(200)).toBe(16777240);
    // Decoding is monotonic and every byte is a fixed point of encode∘decode.
    for (let i = 1; i < 256; i++) {
      expect(byte4ToInt(i)).toBeGreaterThan(byte4ToInt(i - 1));
      expect(intToByte4(byte4ToInt(i))).toBe(i);
    }
  });
});

describe('BM25 scoring', () => {
  let exactIndex: Bm25Index;
  let lossyIndex: Bm25Index;
  beforeAll(async () => {
    exactIndex = await buildBm25Index(SMALL, exact);
    lossyIndex = await buildBm25Index(SMALL);
  });

  it('counts only documents with tokens', () => {
    expect(exactIndex.docCount).toBe(5);
    expect(exactIndex.indexedDocCount).toBe(N);
    expect(exactIndex.sumDocLength).toBe(13);
    expect(exactIndex.avgdl).toBeCloseTo(AVGDL, 12);
    expect(bm25HasTokens(exactIndex, 'd1')).toBe(true);
    expect(bm25HasTokens(exactIndex, 'd4')).toBe(false);
    expect(bm25HasTokens(exactIndex, 'd5')).toBe(false);
    expect(bm25HasTokens(exactIndex, 'nope')).toBe(false);
  });

  it('scores by the textbook formula (exact lengths)', () => {
    const run = searchBm25(exactIndex, 'heart cancer', 10);
    expect(run.map((r) => r.docId)).toEqual(['d2', 'd3', 'd1']);
    const s = scoresOf(run);
    expect(s.d1).toBeCloseTo(bm25Term(3, 2, 5, N, AVGDL), 12);
    expect(s.d2).toBeCloseTo(bm25Term(1, 2, 4, N, AVGDL) + bm25Term(1, 2, 4, N, AVGDL), 12);
    expect(s.d3).toBeCloseTo(bm25Term(3, 2, 4, N, AVGDL), 12);
    // Literal, by hand: python3 -c "import math; idf=math.log(1+1.5/2.5); print(idf*3/(3+0.9*(0.6+0.4*5/(13/3))))"
    expect(s.d1).toBeCloseTo(0.35647883198334673, 12);
  });

  it('reproduces Lucene float32 scores with lossyLengths', () => {
    // numpy float32 emulation of BM25Similarity (w = count·idf; w − w / (1 + tf / (k1·(1 − b + b·dl/avgdl)))):
    //   python3 -c "import numpy as np; f=np.float32; k1=f(0.9); b=f(0.4); avg=f(13/3); \
    //     idf=f(np.log(1+1.5/2.5)); ni=f(1)/(k1*((f(1)-b)+b*f(5)/avg)); print(float(idf-idf/(f(1)+f(3)*ni)))"
    //   → 0.35647884011268616 (d1); same with tf=1, dl=4, summed and cast → 0.5020581483840942 (d2);
    //   tf=3, dl=4 → 0.3641267716884613 (d3)
    const s = scoresOf(searchBm25(lossyIndex, 'heart cancer', 10));
    expect(s.d1).toBe(0.35647884011268616);
    expect(s.d2).toBe(0.5020581483840942);
    expect(s.d3).toBe(0.3641267716884613);
  });

  it('uses the decoded one-byte length above 39 tokens', async () => {
    const long = [
      { id: 'long', title: '', text: 'fever ' + 'word '.repeat(40) }, // 41 tokens, scored as 40
      { id: 'short', title: '', text: 'cough' },
    ];
    const lossy = await buildBm25Index(long);
    const ex = explainBm25(lossy, 'fever', 'long')!;
    expect(ex.docLength).toBe(41);
    expect(ex.scoredLength).toBe(40);
    const textbook = (await buildBm25Index(long, exact)).avgdl;
    expect(lossy.avgdl).toBe(Math.fround(textbook)); // avgdl from exact lengths: 42 / 2
    expect(ex.score).toBeCloseTo(bm25Term(1, 1, 40, 2, 21), 6);
    expect(Math.abs(ex.score - bm25Term(1, 1, 41, 2, 21))).toBeGreaterThan(1e-4);
  });

  it('weights repeated query terms by their count', () => {
    const once = scoresOf(searchBm25(exactIndex, 'cancer heart', 10));
    const twice = scoresOf(searchBm25(exactIndex, 'cancer heart cancers Cancer', 10));
    expect(twice.d1).toBeCloseTo(once.d1, 12); // heart only
    expect(twice.d3).toBeCloseTo(3 * bm25Term(3, 2, 4, N, AVGDL), 12);
    expect(twice.d2).toBeCloseTo(bm25Term(1, 2, 4, N, AVGDL, 3) + bm25Term(1, 2, 4, N, AVGDL), 12);
    const lossyOnce = scoresOf(searchBm25(lossyIndex, 'cancer', 10));
    const lossyTwice = scoresOf(searchBm25(lossyIndex, 'cancer cancer', 10));
    expect(lossyTwice.d3).toBeCloseTo(2 * lossyOnce.d3, 6);
  });

  it('excludes documents by id (set or array) and never returns token-less documents', () => {
    expect(
      searchBm25(exactIndex, 'heart cancer', 10, { exclude: new Set(['d2']) }).map((r) => r.docId),
    ).toEqual(['d3', 'd1']);
    expect(
      searchBm25(exactIndex, 'heart cancer', 10, { exclude: ['d2', 'd3', 'unknown'] }).map((r) => r.docId),
    ).toEqual(['d1']);
    expect(searchBm25(exactIndex, 'heart cancer lung pain treatment attack', 10)).toHaveLength(3);
    expect(searchBm25(exactIndex, 'the and of', 10)).toEqual([]);
    expect(searchBm25(exactIndex, 'unseenword', 10)).toEqual([]);
    expect(searchBm25(exactIndex, 'heart cancer', 0)).toEqual([]);
    expect(searchBm25(exactIndex, 'heart cancer', 2).map((r) => r.docId)).toEqual(['d2', 'd3']);
  });

  it('explains a score term by term', () => {
    const ex = explainBm25(exactIndex, 'heart heart cancer zebra', 'd2')!;
    expect(ex.terms.map((t) => [t.term, t.queryCount, t.tf, t.df])).toEqual([
      ['heart', 2, 1, 2],
      ['cancer', 1, 1, 2],
      ['zebra', 1, 0, 0],
    ]);
    expect(ex.terms[0].idf).toBeCloseTo(Math.log(1.6), 12);
    expect(ex.terms[0].score).toBeCloseTo(bm25Term(1, 2, 4, N, AVGDL, 2), 12);
    expect(ex.docLength).toBe(4);
    for (const index of [exactIndex, lossyIndex]) {
      const run = searchBm25(index, 'heart heart cancer pain', 10);
      for (const r of run)
        expect(explainBm25(index, 'heart heart cancer pain', r.docId)!.score).toBe(r.score);
    }
    expect(explainBm25(exactIndex, 'heart', 'nope')).toBeNull();
    expect(explainBm25(exactIndex, 'heart', 'd3')!.score).toBe(0);
  });

  it('breaks ties by document id descending in UTF-8 byte order (as trec_eval)', async () => {
    // U+1F600 sorts after U+FFFD in UTF-8 but before it in UTF-16 code units.
    const ids = ['doc-b', 'doc-a', '\uFFFD', 'doc-c', '\u{1F600}', 'doc-10'];
    const index = await buildBm25Index(ids.map((id) => ({ id, title: 'same', text: 'text' })));
    const run = searchBm25(index, 'same text', 10);
    expect(new Set(run.map((r) => r.score)).size).toBe(1);
    expect(run.map((r) => r.docId)).toEqual(['\u{1F600}', '\uFFFD', 'doc-c', 'doc-b', 'doc-a', 'doc-10']);
    // With k smaller than the tie group, the largest ids are kept.
    expect(searchBm25(index, 'same', 2).map((r) => r.docId)).toEqual(['\u{1F600}', '\uFFFD']);
    expect(compareUtf8('\u{1F600}', '\uFFFD')).toBeGreaterThan(0);
    expect(compareUtf8('a', 'ab')).toBeLessThan(0);
    expect(compareUtf8('b', 'ab')).toBeGreaterThan(0);
    expect(compareUtf8('x', 'x')).toBe(0);
  });

  it('rejects bad parameters and duplicate ids', async () => {
    await expect(buildBm25Index(SMALL, { k1: -1 })).rejects.toThrow(RangeError);
    await expect(buildBm25Index(SMALL, { b: 1.5 })).rejects.toThrow(RangeError);
    await expect(buildBm25Index([SMALL[0], SMALL[0]])).rejects.toThrow(/duplicate/);
  });
});

describe('TopK', () => {
  it('selects the same entries as a full sort, with the tie-break', () => {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const scores = Array.from({ length: 500 }, () => Math.floor(rand() * 20));
    for (const k of [0, 1, 5, 37, 500, 600]) {
      const top = new TopK(k, (a, b) => a - b); // ties: larger index first
      scores.forEach((s, i) => top.push(s, i));
      const got = top.drain().map((e) => e.index);
      const want = scores
        .map((s, i) => [s, i])
        .sort((x, y) => y[0] - x[0] || y[1] - x[1])
        .slice(0, k)
        .map((x) => x[1]);
      expect(got).toEqual(want);
    }
  });

  it('threshold is the k-th score once k entries are held, -Infinity before (and for k = 0)', () => {
    const top = new TopK(3);
    expect(top.threshold).toBe(-Infinity);
    for (const s of [5, 1, 9]) top.push(s, s);
    expect(top.threshold).toBe(1);
    top.push(7, 7);
    expect(top.threshold).toBe(5);
    top.push(2, 2); // cannot enter
    expect(top.threshold).toBe(5);
    const none = new TopK(0);
    none.push(1, 1);
    expect(none.threshold).toBe(-Infinity);
  });
});

describe('serialization', () => {
  it('round-trips through structured clone with identical results', async () => {
    const index = await buildBm25Index(SMALL);
    const back = deserializeBm25(structuredClone(serializeBm25(index)));
    expect(back.params).toEqual(index.params);
    expect(back.indexedDocCount).toBe(3);
    for (const q of ['heart cancer', 'lung', 'cancer cancer treatment', 'nothing'])
      expect(searchBm25(back, q, 10)).toEqual(searchBm25(index, q, 10));
    expect(bm25HasTokens(back, 'd4')).toBe(false);
  });

  it('keeps term frequencies above 65535 (Uint32 storage)', async () => {
    const index = await buildBm25Index([
      { id: 'big', title: '', text: 'beat '.repeat(70_000) },
      { id: 'small', title: '', text: 'beat' },
    ]);
    const data = serializeBm25(index);
    const back = deserializeBm25(structuredClone(data));
    expect(explainBm25(back, 'beat', 'big')!.terms[0].tf).toBe(70_000);
    expect(searchBm25(back, 'beat', 2)).toEqual(searchBm25(index, 'beat', 2));
  });

  it('detects corruption, truncation and version changes', async () => {
    const index = await buildBm25Index(SMALL);
    const fresh = (): SerializedBm25 => structuredClone(serializeBm25(index));
    const corrupt = (mutate: (s: SerializedBm25) => void) => {
      const s = fresh();
      mutate(s);
      return () => deserializeBm25(s);
    };
    expect(corrupt(() => {})).not.toThrow();
    expect(corrupt((s) => (s.meta.version = BM25_FORMAT_VERSION + 1))).toThrow(CorruptIndexError);
    expect(corrupt((s) => (s.meta.analyzerVersion = -1))).toThrow(CorruptIndexError);
    expect(corrupt((s) => ((s.meta as { format: string }).format = 'other'))).toThrow(CorruptIndexError);
    expect(corrupt((s) => (s.meta.params.b = 7))).toThrow(CorruptIndexError);
    expect(corrupt((s) => (s.meta.termCount += 1))).toThrow(CorruptIndexError);
    expect(corrupt((s) => (s.meta.sumDocLength += 1))).toThrow(CorruptIndexError);
    expect(corrupt((s) => s.buffers.pop())).toThrow(CorruptIndexError);
    expect(corrupt((s) => (s.buffers[5] = s.buffers[5].slice(0, 8)))).toThrow(CorruptIndexError);
    expect(corrupt((s) => (s.buffers[6] = s.buffers[6].slice(0, 8)))).toThrow(CorruptIndexError);
    // A posting pointing at another (in-range) document: the first posting of "attack" (d1, tf 1)
    // moved to d2 (gap 2, so 2·2 + 1).
    expect(corrupt((s) => (new Uint8Array(s.buffers[6])[0] = 5))).toThrow(CorruptIndexError);
    // A term frequency changed: the last byte of term 1's postings ("cancer": d2 tf 1, d3 tf 3) is
    // d3's tf, 3 → 4.
    expect(corrupt((s) => (new Uint8Array(s.buffers[6])[new Uint32Array(s.buffers[5])[2] - 1] += 1))).toThrow(
      /length disagrees/,
    );
    // A document frequency changed.
    expect(corrupt((s) => (new Uint32Array(s.buffers[4])[0] += 1))).toThrow(CorruptIndexError);
    // Terms out of byte order.
    expect(
      corrupt((s) => {
        const b = new Uint8Array(s.buffers[3]);
        [b[0], b[1]] = [0x7a, 0x7a];
      }),
    ).toThrow(/out of order/);
    // A document length changed.
    expect(corrupt((s) => (new Uint32Array(s.buffers[7])[0] += 1))).toThrow(CorruptIndexError);
    // Invalid UTF-8 in a term.
    expect(corrupt((s) => (new Uint8Array(s.buffers[3])[0] = 0xff))).toThrow(CorruptIndexError);
    expect(() => deserializeBm25({} as SerializedBm25)).toThrow(CorruptIndexError);
  });
});

describe('analyzers per document language', () => {
  const MIXED = [
    { id: 'en1', title: 'Fractures', text: 'Bone fractures heal slowly in older people', language: 'en' },
    {
      id: 'de1',
      title: 'Knochenbrüche',
      text: 'Knochenbrüche heilen bei älteren Menschen langsam',
      language: 'de',
    },
    { id: 'de2', title: 'Ernährung', text: 'Gesunde Ernährung im Alter', language: 'de' },
    { id: 'x1', title: '', text: 'fractures and more fractures' },
  ];

  it("analyses each document with its language and the query with each group's analyzer", async () => {
    const index = await buildBm25Index(MIXED, {}, { language: 'en' });
    expect(index.analyzers).toEqual(['english', 'german']);
    expect([...index.docAnalyzer]).toEqual([0, 1, 1, 0]);
    // German analysis of the query reaches the German document, English analysis the English ones.
    expect(searchBm25(index, 'Knochenbruch', 10).map((h) => h.docId)).toEqual(['de1']);
    expect(searchBm25(index, 'fracture', 10).map((h) => h.docId)).toEqual(['x1', 'en1']);
    const why = explainBm25(index, 'Knochenbruch', 'de1')!;
    expect(why.analyzer).toBe('german');
    expect(why.terms.map((t) => t.term)).toEqual(['knochenbruch']);
    expect(why.score).toBe(searchBm25(index, 'Knochenbruch', 1)[0].score);
    expect(explainBm25(index, 'Knochenbruch', 'en1')!.analyzer).toBe('english');
  });

  it("drops the query language's stop words for documents in another language, and explains the same", async () => {
    const docs = [
      { id: 'a', title: '', text: 'Fever in patients with pneumonia' },
      { id: 'b', title: '', text: 'La Paz de Ayala clinic' },
      { id: 'c', title: '', text: 'pneumonia treatment and fever' },
    ];
    const index = await buildBm25Index(docs);
    const query = 'la neumonía de la fiebre pneumonia';
    // As English text, "la" and "de" match the Spanish-named document.
    expect(searchBm25(index, query, 10).map((h) => h.docId)).toContain('b');
    const hits = searchBm25(index, query, 10, { queryLanguage: 'es' });
    expect(hits.map((h) => h.docId).sort()).toEqual(['a', 'c']);
    const why = explainBm25(index, query, 'c', 'es')!;
    expect(why.terms.map((t) => t.term)).toEqual(['neumonía', 'fiebr', 'pneumonia']);
    expect(why.score).toBe(hits.find((h) => h.docId === 'c')!.score);
    // A query in the documents' own language is analysed as before.
    expect(searchBm25(index, 'the fever', 10, { queryLanguage: 'en' })).toEqual(
      searchBm25(index, 'the fever', 10),
    );
  });

  it('uses the declared language for documents without one, English by default', async () => {
    const plain = MIXED.map(({ language: _, ...d }) => d);
    expect((await buildBm25Index(plain)).analyzers).toEqual(['english']);
    expect((await buildBm25Index(plain, {}, { language: 'de' })).analyzers).toEqual(['german']);
    expect((await buildBm25Index([], {}, { language: 'th' })).analyzers).toEqual(['thai']);
    expect(bm25AnalyzerKey(plain)).toBe(`english@${ANALYZER_VERSION}`);
    expect(bm25AnalyzerKey(MIXED, 'fr')).toBe(`english+german+french@${ANALYZER_VERSION}`);
    expect(bm25Doc({ id: 'a', title: 't', text: 'x', meta: { language: 'ru', field: 'y' } })).toEqual({
      id: 'a',
      title: 't',
      text: 'x',
      language: 'ru',
    });
    expect(bm25Doc({ id: 'a', title: 't', text: 'x', meta: {} })).toEqual({ id: 'a', title: 't', text: 'x' });
  });

  it('keeps the groups through serialization and rejects bad group data', async () => {
    const index = await buildBm25Index(MIXED);
    const data = serializeBm25(index);
    expect(data.meta.analyzers).toEqual(['english', 'german']);
    const back = deserializeBm25(structuredClone(data));
    expect(back.analyzers).toEqual(index.analyzers);
    for (const q of ['Knochenbruch', 'fractures', 'Ernährung'])
      expect(searchBm25(back, q, 10)).toEqual(searchBm25(index, q, 10));
    const bad = (mutate: (s: SerializedBm25) => void) => {
      const s = structuredClone(data);
      mutate(s);
      return () => deserializeBm25(s);
    };
    expect(bad((s) => (new Uint8Array(s.buffers[8])[1] = 2))).toThrow(/names analyzer group 2 of 2/);
    expect(bad((s) => (s.meta.analyzers = ['english', 'klingon' as AnalyzerId]))).toThrow(
      /bad analyzer list/,
    );
    expect(bad((s) => (s.meta.analyzers = []))).toThrow(CorruptIndexError);
    expect(bad((s) => (s.buffers[8] = s.buffers[8].slice(0, 2)))).toThrow(/doc analyzer groups/);
  });
});

describe('build progress and cancellation', () => {
  const many = Array.from({ length: 200 }, (_, i) => ({ id: `d${i}`, title: 't', text: `word${i} common` }));

  it('reports progress ending at the total', async () => {
    const ticks: Progress[] = [];
    await buildBm25Index(many, undefined, { onProgress: (p) => ticks.push(p) });
    expect(ticks.at(-1)).toEqual({ kind: 'index', done: 200, total: 200 });
  });

  it('throws an AbortError when cancelled', async () => {
    await expect(buildBm25Index(many, undefined, { isCancelled: () => true })).rejects.toMatchObject({
      name: 'AbortError',
    });
    let polls = 0;
    await expect(buildBm25Index(many, undefined, { isCancelled: () => ++polls > 3 })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(polls).toBe(4);
  });
});

describe('MedQuAD (real data)', () => {
  const dir = join(DATA_DIR, 'medquad');
  const readJsonl = (file: string) =>
    readFileSync(join(dir, file), 'utf8')
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as Record<string, string>);

  const docs = readJsonl('corpus.jsonl').map((d) => ({
    id: d._id,
    title: d.title ?? '',
    text: d.text ?? '',
  }));
  const queries = readJsonl('queries.jsonl').map((q) => ({ id: q._id, text: q.text }));
  const qrels = new Map<string, Map<string, number>>();
  for (const line of readFileSync(join(dir, 'qrels/test.tsv'), 'utf8').split('\n').slice(1)) {
    const [q, d, g] = line.split('\t');
    if (!q) continue;
    if (!qrels.has(q)) qrels.set(q, new Map());
    qrels.get(q)!.set(d, Number(g));
  }

  /** nDCG@10 with linear gain and log2 discount, averaged over queries with judgements. */
  function ndcg10(runs: Map<string, ScoredDoc[]>): number {
    let total = 0;
    let n = 0;
    for (const [qid, rel] of qrels) {
      const run = runs.get(qid) ?? [];
      let dcg = 0;
      run.slice(0, 10).forEach((r, i) => (dcg += Math.max(0, rel.get(r.docId) ?? 0) / Math.log2(i + 2)));
      const ideal = [...rel.values()]
        .filter((g) => g > 0)
        .sort((a, b) => b - a)
        .slice(0, 10);
      const idcg = ideal.reduce((s, g, i) => s + g / Math.log2(i + 2), 0);
      total += idcg > 0 ? dcg / idcg : 0;
      n++;
    }
    return total / n;
  }

  let index: Bm25Index;
  let runs: Map<string, ScoredDoc[]>;
  beforeAll(async () => {
    let t = performance.now();
    index = await buildBm25Index(docs);
    const buildMs = performance.now() - t;
    t = performance.now();
    runs = new Map(queries.map((q) => [q.id, searchBm25(index, q.text, 100)]));
    const searchMs = performance.now() - t;
    console.log(
      `medquad BM25: ${docs.length} docs, ${index.termCount} terms, ${index.postingCount} postings, ${index.postings.length} posting bytes; ` +
        `build ${buildMs.toFixed(0)} ms, ${queries.length} queries ${searchMs.toFixed(0)} ms ` +
        `(${((searchMs / queries.length) * 1000).toFixed(0)} µs/query)`,
    );
  });

  it('reaches a plausible nDCG@10 and beats a shuffled baseline by far', () => {
    expect(queries).toHaveLength(1000);
    expect(index.indexedDocCount).toBe(3000);
    for (const run of runs.values()) expect(run).toHaveLength(100);
    const score = ndcg10(runs);
    // Control: every query gets another query's ranking (a seeded shuffle), which keeps the score
    // distribution but breaks the query–document link; it should be near chance (~0.0015 for one
    // relevant document among 3,000).
    const ids = [...runs.keys()];
    const perm = ids.map((_, i) => i);
    let seed = 42;
    for (let i = perm.length - 1; i > 0; i--) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      const j = seed % (i + 1);
      [perm[i], perm[j]] = [perm[j], perm[i]];
    }
    const shuffled = ndcg10(new Map(ids.map((id, i) => [id, runs.get(ids[perm[i]])!])));
    console.log(`medquad BM25 nDCG@10 = ${score.toFixed(4)} (shuffled control ${shuffled.toFixed(4)})`);
    // Observed 0.8369 (Lucene-compatible lengths; 0.8360 with exact lengths). MedQuAD questions name
    // the condition their answer is about ("What are the symptoms of X?") and answer titles are
    // condition names, so lexical overlap nearly always puts the answer in the top 10; what keeps
    // BM25 well below 1 is that the distractors include other question types about the same X,
    // which share the topic words. Measured sensitivities that this band (±~0.02) catches: idf
    // replaced by 1 → 0.737, k1 = 0 (no tf) → 0.763, title not indexed → 0.745, b = 0 (no length
    // normalisation) → 0.804, text not indexed → 0.862. Disabling stemming only costs 0.003 here,
    // so the analyzer cases above guard that instead.
    expect(score).toBeGreaterThan(0.815);
    expect(score).toBeLessThan(0.86);
    expect(shuffled).toBeLessThan(0.02);
    expect(score - shuffled).toBeGreaterThan(0.7);
    // The answer is within the top 100 for nearly every question.
    const found = queries.filter((q) => runs.get(q.id)!.some((r) => qrels.get(q.id)?.has(r.docId))).length;
    expect(found / queries.length).toBeGreaterThan(0.97);
  });

  it('gives identical rankings after a serialize/deserialize round-trip', () => {
    const back = deserializeBm25(structuredClone(serializeBm25(index)));
    for (const q of queries) expect(searchBm25(back, q.text, 100)).toEqual(runs.get(q.id));
  });
});
