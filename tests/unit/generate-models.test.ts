// The model generator without the demo shards (LOUPE_DATA_DIR pointing at a user's own folder, no
// ../shared/data): it falls back to its built-in vocabulary text, deterministically, and the model loads.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { generateModels } from '../../scripts/generate-models';

const ID = 'loupe-test/bert-tiny-random';
const tmp = mkdtempSync(join(tmpdir(), 'loupe-gen-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function hashTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[relative(dir, p)] = createHash('sha256').update(readFileSync(p)).digest('hex');
    }
  };
  walk(dir);
  return out;
}

describe('generate-models without the demo shards', () => {
  it('uses the built-in vocabulary, says so, writes identical bytes twice, and the tokenizer loads', async () => {
    const empty = join(tmp, 'no-shards');
    const logs: string[] = [];
    const run = (out: string) =>
      generateModels({ models: [ID], out, dataDir: empty, cacheTokenizers: false, log: (l) => logs.push(l) });
    run(join(tmp, 'a'));
    run(join(tmp, 'b'));
    expect(logs.filter((l) => l.includes('using the built-in vocabulary text'))).toHaveLength(2);
    const a = hashTree(join(tmp, 'a', ID));
    expect(Object.keys(a)).toContain('onnx/model.onnx');
    expect(hashTree(join(tmp, 'b', ID))).toEqual(a);
    expect(readFileSync(join(tmp, 'a', ID, 'README.md'), 'utf8')).toContain('built-in deterministic text');

    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.localModelPath = `${join(tmp, 'a')}/`;
    const tok = await AutoTokenizer.from_pretrained(ID);
    const ids = tok.encode('What causes chest pain?');
    // [CLS] … [SEP], and common words are whole tokens in the built-in vocabulary.
    expect(ids[0]).toBe(101);
    expect(ids.at(-1)).toBe(102);
    expect(tok.decode(ids, { skip_special_tokens: true })).toBe('what causes chest pain?');
  });
});
