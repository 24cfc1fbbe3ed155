// Chunk framing against the real tokenizers of the generated models (WordPiece BERT and the
// SentencePiece XLM-R shape), in Node: a window framed with the special tokens found by probing is
// exactly what the tokenizer itself gives a text that fits, so a short text embeds the same chunked
// or not, and a long text's windows cover all its tokens.
import { beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { AutoTokenizer, env, type PreTrainedTokenizer } from '@huggingface/transformers';
import { chunkWindows, frameWindow, specialFrame, windowSize } from '../../src/lib/core/retrieval/chunking';

const MODELS = resolve(import.meta.dirname, '../../models/generated');
const TEXTS = [
  'A 25-year-old woman who wishes to become pregnant asks about folic acid.',
  'Гипертония и диабет',
  'hypertension and diabetes, 2 years',
];

beforeAll(() => {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = `${MODELS}/`;
});

const ids = (t: PreTrainedTokenizer, text: string, special: boolean) =>
  (t(text, { add_special_tokens: special, return_tensor: false }) as unknown as { input_ids: number[] })
    .input_ids;

describe.each(['loupe-test/bert-tiny-random', 'loupe-test/xlmr-tiny-random'])('%s', (model) => {
  it.skipIf(!existsSync(resolve(MODELS, model)))(
    'framed windows equal the tokenizer output for texts that fit; long texts are covered window by window',
    async () => {
      const tok = await AutoTokenizer.from_pretrained(model);
      const frame = specialFrame(ids(tok, 'chunk probe', true), ids(tok, 'chunk probe', false));
      expect(frame.head.length + frame.tail.length).toBe(2);
      for (const text of TEXTS) {
        const bare = ids(tok, text, false);
        const [w] = chunkWindows(bare.length, 1000, 0);
        expect(frameWindow(bare, w, { ...frame, prefix: [] })).toEqual(ids(tok, text, true));
      }
      // A prefix tokenized on its own (trailing space trimmed, as the worker does), then the text: the
      // same ids as prefix + text tokenized together (SentencePiece would add a lone '▁' otherwise).
      for (const text of TEXTS)
        expect([...ids(tok, 'query: '.trimEnd(), false), ...ids(tok, text, false)]).toEqual(
          ids(tok, `query: ${text}`, false),
        );
      // A long text: every window is at most the model's 128 tokens with its special tokens.
      const long = TEXTS.join(' ').repeat(12);
      const bare = ids(tok, long, false);
      const size = windowSize(128, 2);
      const ws = chunkWindows(bare.length, size, 32);
      expect(ws.length).toBeGreaterThan(2);
      const rows = ws.map((w) => frameWindow(bare, w, { ...frame, prefix: [] }));
      for (const r of rows) {
        expect(r.length).toBeLessThanOrEqual(128);
        expect(r[0]).toBe(frame.head[0]);
        expect(r.at(-1)).toBe(frame.tail[0]);
      }
      expect(rows.at(-1)!.slice(1, -1)).toEqual(bare.slice(-size));
    },
  );
});
