import { describe, expect, it } from 'vitest';
import { denseLoadOptions, parseSetKeys, setDtypesOf } from '../../src/lib/state/dense-sets';
import { precomputedKey } from '../../src/lib/core/shard/precomputed';
import type { ModelSpec } from '../../src/lib/core/retrieval/models';

const spec = { id: 'org/model', dtypes: ['q8', 'fp32', 'fp16'] } as unknown as ModelSpec;

describe("the dtypes of a shard's sets", () => {
  it('reads model and dtype from set keys, skipping stored pieces; keeps the model’s order', () => {
    const keys = [
      precomputedKey('org/model', 'fp32', 'text'),
      `${precomputedKey('org/model', 'fp32', 'text')}#rows0`,
      precomputedKey('org/model', 'fp16', 'image'),
      precomputedKey('org/other', 'q8', 'text'),
      precomputedKey('org/model', 'int8', 'text'),
    ];
    expect(parseSetKeys(keys)).toEqual([
      { model_id: 'org/model', dtype: 'fp32' },
      { model_id: 'org/model', dtype: 'fp16' },
      { model_id: 'org/other', dtype: 'q8' },
      { model_id: 'org/model', dtype: 'int8' },
    ]);
    // Only this model's, only dtypes it offers (int8 is not), in its own order, each once.
    expect(setDtypesOf(parseSetKeys(keys), spec)).toEqual(['fp32', 'fp16']);
    expect(setDtypesOf([{ model_id: 'org/other', dtype: 'q8' }], spec)).toEqual([]);
  });

  it('load options carry the set dtypes only at dtype auto, in one shape', () => {
    const s = { device: 'auto' as const, dtype: 'auto' as const };
    expect(denseLoadOptions(s, ['fp32'])).toEqual({
      device: 'auto',
      dtype: 'auto',
      simulateWebGpuFailure: undefined,
      simulateParityMismatch: undefined,
      setDtypes: ['fp32'],
    });
    expect(denseLoadOptions({ ...s, dtype: 'q8' }, ['fp32'])).not.toHaveProperty('setDtypes');
    expect(denseLoadOptions(s, [])).not.toHaveProperty('setDtypes');
    // The same settings give the same key (the encoder client keys a loaded model by JSON).
    expect(JSON.stringify(denseLoadOptions(s, ['fp32']))).toBe(
      JSON.stringify(denseLoadOptions({ ...s, simulateWebGpuFailure: undefined }, ['fp32'])),
    );
  });
});
