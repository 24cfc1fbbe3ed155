// Token streams of each analyzer against the examples in Lucene's analysis-common tests
// (TestGermanAnalyzer, TestCJKAnalyzer, TestThaiAnalyzer…). Where Loupe knowingly differs from
// Lucene (French and Portuguese stem with Snowball, not Savoy's light stemmers) the test says so.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ANALYZER_IDS,
  analyzerForLanguage,
  analyzerIdForLanguage,
  cjkBigrams,
  dropQueryStopWords,
  foldDigits,
  germanLightStem,
  germanNormalize,
  getAnalyzer,
  loadAnalyzers,
  italianLightStem,
  spanishLightStem,
  thaiBigramsFallback,
  turkishLowerCase,
  withoutSegmenter,
  type AnalyzerId,
} from '../../src/lib/core/retrieval/analyzers';
import { analyze as analyzeEnglish } from '../../src/lib/core/retrieval/analyzer';

const a = (id: AnalyzerId, text: string) => getAnalyzer(id).analyze(text);

// Snowball's stemmers load on demand (tests/unit/analyzer-loading.test.ts checks that they must).
beforeAll(() => loadAnalyzers(ANALYZER_IDS));

describe('analyzer choice', () => {
  it('maps language tags to the analyzer Lucene/Anserini use for them', () => {
    expect(analyzerIdForLanguage(undefined)).toBe('english');
    expect(analyzerIdForLanguage('')).toBe('english');
    expect(analyzerIdForLanguage('en')).toBe('english');
    expect(analyzerIdForLanguage('de')).toBe('german');
    expect(analyzerIdForLanguage('pt-BR')).toBe('portuguese');
    expect(analyzerIdForLanguage('ZH_Hant')).toBe('cjk');
    expect(analyzerIdForLanguage('ja')).toBe('cjk');
    expect(analyzerIdForLanguage('ko')).toBe('cjk');
    expect(analyzerIdForLanguage('th')).toBe('thai');
    expect(analyzerIdForLanguage('sw')).toBe('standard');
    expect(analyzerForLanguage('fi').lucene).toBe('FinnishAnalyzer');
    for (const id of ANALYZER_IDS) expect(getAnalyzer(id).id).toBe(id);
    expect(() => getAnalyzer('klingon' as AnalyzerId)).toThrow(/unknown analyzer 'klingon'/);
  });

  it('keeps the English analyzer exactly as before', () => {
    const text =
      "The patient's hemorrhages were treated; running relational generalizations, U.S.A. 3.5 covid-19";
    expect(a('english', text)).toEqual(analyzeEnglish(text));
    expect(a('english', 'The treatment of the disease is not known')).toEqual([
      'treatment',
      'diseas',
      'known',
    ]);
  });
});

describe('GermanAnalyzer', () => {
  it('follows TestGermanAnalyzer', () => {
    expect(a('german', 'Tisch')).toEqual(['tisch']);
    expect(a('german', 'Tische')).toEqual(['tisch']);
    expect(a('german', 'Tischen')).toEqual(['tisch']);
    // GermanNormalizationFilter: the umlaut and its transliteration meet.
    expect(a('german', 'Schaltflächen')).toEqual(['schaltflach']);
    expect(a('german', 'Schaltflaechen')).toEqual(['schaltflach']);
  });

  it('removes Snowball stop words and normalises ß and ae/oe/ue', () => {
    expect(a('german', 'der die das und mit einer Fußballspiele')).toEqual(['fussballspiel']);
    expect(germanNormalize('straße')).toBe('strasse');
    expect(germanNormalize('moeglich')).toBe('moglich');
    expect(germanNormalize('müde')).toBe('mude');
    // ue after q or a vowel is not an umlaut.
    expect(germanNormalize('quelle')).toBe('quelle');
    expect(germanNormalize('aue')).toBe('aue');
    expect(germanLightStem('häuser')).toBe('haus');
    expect(germanLightStem('kindern')).toBe('kind');
  });
});

describe('SpanishAnalyzer', () => {
  it('follows TestSpanishAnalyzer and the light stemmer', () => {
    expect(a('spanish', 'chicana')).toEqual(['chican']);
    expect(a('spanish', 'chicano')).toEqual(['chican']);
    expect(a('spanish', 'los')).toEqual([]);
    expect(spanishLightStem('luces')).toBe('luz');
    expect(spanishLightStem('meses')).toBe('mes');
    expect(spanishLightStem('médicos')).toBe('medic');
    // Words shorter than five letters are left alone, accents included.
    expect(spanishLightStem('café')).toBe('café');
  });
});

describe('ItalianAnalyzer', () => {
  it('follows TestItalianAnalyzer, with elision', () => {
    expect(a('italian', 'abbandonata')).toEqual(['abbandonat']);
    expect(a('italian', 'abbandonati')).toEqual(['abbandonat']);
    expect(a('italian', 'dallo')).toEqual([]);
    expect(a('italian', "dell'Arte l'ospedale")).toEqual(['arte', 'ospedal']);
    expect(italianLightStem('amiche')).toBe('amic');
    expect(italianLightStem('farmacie')).toBe('farmac');
  });
});

describe('FrenchAnalyzer', () => {
  it('follows TestFrenchAnalyzer where Snowball and the light stemmer agree', () => {
    expect(a('french', 'chien CHAT CHEVAL')).toEqual(['chien', 'chat', 'cheval']);
    expect(a('french', '  chien  ,? + = -  CHAT /: > CHEVAL')).toEqual(['chien', 'chat', 'cheval']);
    expect(a('french', 'le la chien les aux chat du des à cheval')).toEqual(['chien', 'chat', 'cheval']);
    expect(a('french', 'Votre')).toEqual([]);
    expect(a('french', 'lances chismes chiste captifs')).toEqual(['lanc', 'chism', 'chist', 'captif']);
    // ElisionFilter.
    expect(a('french', "voir l'embrouille")[0]).toBe('voir');
    expect(a('french', "l'hôpital d'urgence qu'il")).toEqual(['hôpital', 'urgenc']);
  });

  it('differs from Lucene where Lucene uses FrenchLightStemFilter (documented)', () => {
    // Lucene: "habitabl", "element", "securitair" (its light stemmer also folds accents).
    expect(a('french', 'habitable éléments sécuritaires')).toEqual(['habit', 'élément', 'sécuritair']);
  });
});

describe('PortugueseAnalyzer', () => {
  it('removes stop words and stems plural and gender forms together', () => {
    expect(a('portuguese', 'não')).toEqual([]);
    const [f, m] = a('portuguese', 'quilométricas quilométricos');
    // Lucene's light stemmer gives "quilometric" for both; Snowball conflates them too.
    expect(f).toBe(m);
    expect(a('portuguese', 'doenças doença')).toEqual(['doenc', 'doenc']);
  });
});

describe('RussianAnalyzer', () => {
  it('follows TestRussianAnalyzer', () => {
    expect(a('russian', 'Вместе с тем о силе электромагнитной энергии имели представление еще')).toEqual([
      'вмест',
      'сил',
      'электромагнитн',
      'энерг',
      'имел',
      'представлен',
    ]);
  });
});

describe('FinnishAnalyzer', () => {
  it('follows TestFinnishAnalyzer', () => {
    expect(a('finnish', 'edeltäjiinsä')).toEqual(['edeltäj']);
    expect(a('finnish', 'edeltäjistään')).toEqual(['edeltäj']);
    expect(a('finnish', 'olla')).toEqual([]);
  });
});

describe('TurkishAnalyzer', () => {
  it('follows TestTurkishAnalyzer', () => {
    expect(a('turkish', 'ağacı')).toEqual(['ağaç']);
    expect(a('turkish', 'ağaç')).toEqual(['ağaç']);
    expect(a('turkish', 'dolayı')).toEqual([]);
    // ApostropheFilter.
    expect(a('turkish', "Kıbrıs'ta")).toEqual(['kıbrıs']);
    expect(a('turkish', "Van Gölü'ne")).toEqual(['van', 'göl']);
  });

  it('lowercases the Turkish way (TestTurkishLowerCaseFilter)', () => {
    expect(turkishLowerCase('İSTANBUL')).toBe('istanbul');
    expect(turkishLowerCase('ISPARTA')).toBe('ısparta');
    expect(turkishLowerCase('I\u0307STANBUL')).toBe('ı\u0307stanbul');
    expect(turkishLowerCase('İ\u0307STANBUL')).toBe('istanbul');
  });
});

describe('CJKAnalyzer', () => {
  it('follows TestCJKAnalyzer', () => {
    expect(a('cjk', '一二三四五六七八九十')).toEqual([
      '一二',
      '二三',
      '三四',
      '四五',
      '五六',
      '六七',
      '七八',
      '八九',
      '九十',
    ]);
    expect(a('cjk', '一 二三四 五六七八九 十')).toEqual([
      '一',
      '二三',
      '三四',
      '五六',
      '六七',
      '七八',
      '八九',
      '十',
    ]);
    expect(a('cjk', 'abc defgh ijklmn opqrstu vwxy z')).toEqual([
      'abc',
      'defgh',
      'ijklmn',
      'opqrstu',
      'vwxy',
      'z',
    ]);
    expect(a('cjk', 'あい   ')).toEqual(['あい']);
    expect(a('cjk', 'あいtest')).toEqual(['あい', 'test']);
    expect(a('cjk', 'testあい    ')).toEqual(['test', 'あい']);
    expect(a('cjk', 'あいうえおabcかきくけこ')).toEqual([
      'あい',
      'いう',
      'うえ',
      'えお',
      'abc',
      'かき',
      'きく',
      'くけ',
      'けこ',
    ]);
    expect(a('cjk', 'あいうえおabんcかきくけ こ')).toEqual([
      'あい',
      'いう',
      'うえ',
      'えお',
      'ab',
      'ん',
      'c',
      'かき',
      'きく',
      'くけ',
      'こ', // prettier-ignore
    ]);
    expect(a('cjk', '一 روبرت موير')).toEqual(['一', 'روبرت', 'موير']);
    expect(a('cjk', '一 رُوبرت موير')).toEqual(['一', 'رُوبرت', 'موير']);
    expect(a('cjk', '𩬅艱鍟䇹愯瀛')).toEqual(['𩬅艱', '艱鍟', '鍟䇹', '䇹愯', '愯瀛']);
    expect(a('cjk', '一')).toEqual(['一']);
    expect(a('cjk', '一丁丂')).toEqual(['一丁', '丁丂']);
    expect(a('cjk', '')).toEqual([]);
  });

  it('bigrams Hangul, folds widths (CJKWidthFilter) and removes its English stop words', () => {
    expect(a('cjk', '안녕하세요 한글입니다')).toEqual([
      '안녕',
      '녕하',
      '하세',
      '세요',
      '한글',
      '글입',
      '입니',
      '니다',
    ]);
    // Half-width katakana become full-width; full-width Latin becomes ASCII.
    expect(a('cjk', 'ｱｲｳｴｵ ＴＥＳＴ')).toEqual(['アイ', 'イウ', 'ウエ', 'エオ', 'test']);
    // Voiced half-width kana: the sound mark joins its base (ｶﾞ → ガ).
    expect(a('cjk', 'ｶﾞｲﾄﾞ')).toEqual(['ガイ', 'イド']);
    expect(a('cjk', 'the 糖尿病 and www')).toEqual(['糖尿', '尿病']);
    const out: string[] = [];
    cjkBigrams('糖', out);
    expect(out).toEqual(['糖']);
  });
});

describe('ThaiAnalyzer', () => {
  it('follows TestThaiAnalyzer (without its stop set)', () => {
    expect(a('thai', 'การที่ได้ต้องแสดงว่างานดี')).toEqual(['การ', 'ที่', 'ได้', 'ต้อง', 'แสดง', 'ว่า', 'งาน', 'ดี']);
    expect(a('thai', '')).toEqual([]);
    expect(a('thai', 'บริษัทชื่อ XY&Z - คุยกับ xyz@demo.com')).toEqual([
      'บริษัท',
      'ชื่อ',
      'xy',
      'z',
      'คุย',
      'กับ',
      'xyz',
      'demo.com', // prettier-ignore
    ]);
    expect(a('thai', 'ภาษาไทย')).toEqual(['ภาษา', 'ไทย']);
    expect(a('thai', 'This is a test. การที่ได้ต้องแสดงว่างานดี')).toEqual([
      'this',
      'is',
      'a',
      'test',
      'การ',
      'ที่',
      'ได้',
      'ต้อง',
      'แสดง',
      'ว่า',
      'งาน',
      'ดี', // prettier-ignore
    ]);
    // testDigits: DecimalDigitFilter.
    expect(a('thai', '๑๒๓๔')).toEqual(['1234']);
    expect(foldDigits('٣٤x')).toBe('34x');
    expect(foldDigits('\u{1D7D9}')).toBe('1');
  });

  it('falls back to character bigrams of Thai runs without a segmenter', () => {
    expect(withoutSegmenter.thai().analyze('ภาษาไทย Hello')).toEqual(thaiBigramsFallback('ภาษาไทย Hello'));
    expect(thaiBigramsFallback('ไทย ok')).toEqual(['ไท', 'ทย', 'ok']);
  });
});

describe('language-neutral default', () => {
  it('segments Unicode words and lowercases, without stemming or stop words', () => {
    expect(a('standard', 'The Running Dogs, 42 times')).toEqual(['the', 'running', 'dogs', '42', 'times']);
    // Dictionary segmentation of scripts without spaces (ICU), unlike a run-of-letters tokenizer.
    expect(a('standard', 'ภาษาไทย').length).toBe(2);
    expect(withoutSegmenter.standard().analyze('The Running Dogs')).toEqual(['the', 'running', 'dogs']);
  });
});

describe('stop lists', () => {
  it("are Lucene's current Snowball lists, including their later additions", () => {
    // Words in Lucene's files that older copies of the Snowball lists lack.
    expect(a('german', 'unse unsem unsen unses')).toEqual([]);
    expect(a('french', 'cela ceci cette ils sans')).toEqual([]);
    expect(a('russian', 'человек жизнь сказал')).toEqual([]);
    expect(a('finnish', 'tällä tuota')).toEqual([]);
    expect(a('portuguese', 'você isso aquilo')).toEqual([]);
    expect(a('italian', 'degli sullo stessero')).toEqual([]);
  });
});

describe('dropQueryStopWords', () => {
  it("removes the query language's stop words before another language's analyzer reads it", () => {
    expect(dropQueryStopWords('El paciente de la clínica con fiebre', 'es')).toBe('paciente clínica fiebre');
    // Elided articles count as the stop word they hide; the rest keeps its elision for the analyzer.
    expect(dropQueryStopWords("Le traitement de l'infection et d'un", 'fr')).toBe("traitement l'infection");
    expect(dropQueryStopWords('The patient and the doctor', 'en')).toBe('patient doctor');
    // Unspaced scripts and languages without a stop list are left as they are.
    expect(dropQueryStopWords('糖尿病の患者', 'ja')).toBe('糖尿病の患者');
    expect(dropQueryStopWords('ภาษาไทย', 'th')).toBe('ภาษาไทย');
    expect(dropQueryStopWords('habari ya leo', 'sw')).toBe('habari ya leo');
    expect(dropQueryStopWords('El paciente', undefined)).toBe('El paciente');
  });
});
