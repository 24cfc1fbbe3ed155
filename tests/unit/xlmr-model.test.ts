// The generated XLM-R-shaped model (SentencePiece/Unigram vocabulary) loads through the same
// transformers.js path as the hub's multilingual encoders and tokenizes Thai, CJK and Cyrillic text
// into pieces (not <unk>), then embeds it (fp32 and q8).
import { beforeAll, describe, expect, it } from 'vitest';
import { AutoTokenizer, env, pipeline } from '@huggingface/transformers';
import { DEFAULT_OUT, SETS, generateModels } from '../../scripts/generate-models';
import { DATA_DIR } from '../paths';

const XLMR = 'loupe-test/xlmr-tiny-random';
const TEXTS = {
  th: 'โรคเบาหวานชนิดที่ 2',
  zh: '高血压和糖尿病',
  ja: '心筋梗塞のリスク',
  ru: 'Гипертония и диабет',
  en: 'hypertension and diabetes',
};

beforeAll(() => {
  expect(SETS.ci).toContain(XLMR);
  generateModels({ models: [XLMR], dataDir: DATA_DIR, log: () => {} });
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = `${DEFAULT_OUT}/`;
});

describe('xlmr-tiny-random (SentencePiece Unigram)', () => {
  it('has the XLM-R tokenizer shape and splits non-Latin scripts into pieces without <unk>', async () => {
    const tok = await AutoTokenizer.from_pretrained(XLMR);
    expect(tok.constructor.name).toBe('XLMRobertaTokenizer');
    for (const [lang, text] of Object.entries(TEXTS)) {
      const pieces = tok.tokenize(text);
      expect(pieces.length, lang).toBeGreaterThan(1);
      expect(pieces, lang).not.toContain('<unk>');
      // Metaspace: the first piece of each word carries ▁; pieces join back to the text.
      expect(pieces[0].startsWith('\u2581'), lang).toBe(true);
      expect(pieces.join('').replaceAll('\u2581', ' ').trim(), lang).toBe(text);
    }
    // Frequent English words from the vocabulary source are whole pieces, as SentencePiece would learn.
    expect(tok.tokenize('hypertension')).toEqual(['\u2581hypertension']);
    const ids = tok(TEXTS.ru).input_ids.tolist()[0] as bigint[];
    expect(Number(ids[0])).toBe(0); // <s>
    expect(Number(ids.at(-1))).toBe(2); // </s>
    expect(ids.map(Number)).not.toContain(3); // <unk>
  });

  it.each(['fp32', 'q8', 'fp16'] as const)('embeds Thai, CJK and Cyrillic text (%s)', async (dtype) => {
    const extract = await pipeline('feature-extraction', XLMR, { dtype });
    const texts = Object.values(TEXTS);
    const out = await extract(texts, { pooling: 'mean', normalize: true });
    expect(out.dims).toEqual([texts.length, 32]);
    const data = Array.from(out.data as Float32Array);
    expect(data.every(Number.isFinite)).toBe(true);
    // Different texts give different vectors (the random weights still see different pieces).
    const rows = texts.map((_, i) => data.slice(i * 32, (i + 1) * 32));
    for (let i = 1; i < rows.length; i++) expect(rows[i]).not.toEqual(rows[0]);
  });
});
