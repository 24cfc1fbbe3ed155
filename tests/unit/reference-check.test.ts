// Reference vectors checked (core/retrieval/reference-check.ts): the probe's rows, the comparison
// with its thresholds per dtype, the norms, the likely causes and the words of the run's details.
import { describe, expect, it } from 'vitest';
import {
  PROBE_SIZE,
  compareRows,
  describeReference,
  referenceBytes,
  judgeReference,
  probeRows,
  referenceCheckKey,
  referenceThreshold,
  type ReferencePartCheck,
} from '../../src/lib/core/retrieval/reference-check';

const model = { id: 'm', revision: 'main', pooling: 'mean', normalize: true, docPrefix: '' };
const run = { dtype: 'fp32', device: 'wasm' };
const part = (cosines: number[], storedNorm = 1, probedNorm = 1): ReferencePartCheck => ({
  part: 'text',
  set: 'embeddings/m/fp32/text.npy',
  docIds: cosines.map((_, i) => `d${i}`),
  cosines,
  storedNorm,
  probedNorm,
});

describe('the probe', () => {
  it('takes every row of a small set, and 16 distinct seeded rows of a large one, ascending', () => {
    expect(probeRows(5)).toEqual([0, 1, 2, 3, 4]);
    const a = probeRows(10_000);
    expect(a).toHaveLength(PROBE_SIZE);
    expect(new Set(a).size).toBe(PROBE_SIZE);
    expect([...a].sort((x, y) => x - y)).toEqual(a);
    expect(a.every((r) => r >= 0 && r < 10_000)).toBe(true);
    // Fixed: the same rows on every visit; another seed, other rows.
    expect(probeRows(10_000)).toEqual(a);
    expect(probeRows(10_000, PROBE_SIZE, 1)).not.toEqual(a);
    // Beyond 2^21 rows (a float draw) still distinct and in range.
    const big = probeRows(10_000_000);
    expect(new Set(big).size).toBe(PROBE_SIZE);
    expect(big.every((r) => r < 10_000_000)).toBe(true);
    expect(() => probeRows(-1)).toThrow(RangeError);
  });
});

describe('the comparison', () => {
  it('gives the cosine of each row and the mean norms', () => {
    const stored = Float32Array.from([1, 0, 0, 1, 3, 4]);
    const probed = Float32Array.from([1, 0, 1, 0, 3, 4]);
    const r = compareRows(stored, probed, 2);
    expect(r.cosines[0]).toBeCloseTo(1, 12);
    expect(r.cosines[1]).toBeCloseTo(0, 12);
    expect(r.cosines[2]).toBeCloseTo(1, 12);
    expect(r.storedNorm).toBeCloseTo(7 / 3, 12);
    expect(() => compareRows(stored, probed.subarray(2), 2)).toThrow(RangeError);
  });

  it('thresholds per dtype: 0.999 at fp32, 0.99 at q8 and fp16', () => {
    expect(referenceThreshold('fp32')).toBe(0.999);
    expect(referenceThreshold('q8')).toBe(0.99);
    expect(referenceThreshold('fp16')).toBe(0.99);
    expect(judgeReference(model, run, [part([1, 0.9995])], 5).status).toBe('passed');
    const q8 = judgeReference(model, { dtype: 'q8', device: 'wasm' }, [part([1, 0.995])], 5);
    expect(q8.status).toBe('passed');
    const fp32 = judgeReference(model, run, [part([1, 0.995])], 5);
    expect(fp32).toMatchObject({ status: 'failed', min: 0.995, threshold: 0.999 });
    // Close but not equal: at fp32 a prefix first (a set made at fp16 is within ~1e-4), at q8 the precision.
    expect(fp32.causes[0]).toMatch(/^document prefix/);
    expect(fp32.causes[1]).toMatch(/^dtype/);
    const q8Low = judgeReference(model, { dtype: 'q8', device: 'wasm' }, [part([1, 0.96])], 5);
    expect(q8Low.causes[0]).toMatch(/^dtype: the set was made at another precision than q8 on wasm/);
  });

  it('names the likely causes from the values: unrelated vectors → another model; related → prefix, pooling', () => {
    const other = judgeReference(model, run, [part([0.05, -0.1, 0.2])], 5);
    expect(other.status).toBe('failed');
    expect(other.causes[0]).toMatch(/^another model or revision/);
    expect(other.causes.map((c) => c.split(':')[0])).toEqual([
      'another model or revision',
      'pooling',
      'document prefix',
      'dtype',
    ]);
    // Half-related (mean 0.45): another pooling first.
    const pooled = judgeReference(model, run, [part([0.45, 0.5, 0.4])], 5);
    expect(pooled.causes[0]).toMatch(/^pooling: the model pools by mean/);
    const related = judgeReference(model, run, [part([0.93, 0.8, 0.97])], 5);
    expect(related.causes[0]).toMatch(/^document prefix: the model puts none/);
    expect(related.causes[1]).toMatch(/^pooling: the model pools by mean/);
    // An image–text model pools by its own output: said in words, not as "pools by model".
    const clip = judgeReference({ ...model, pooling: 'model' }, run, [part([0.5])], 1);
    expect(clip.causes.find((c) => c.startsWith('pooling'))).toMatch(
      /^pooling: the model takes its own pooled, projected output \(CLIP, SigLIP\);/,
    );
    expect(related.min).toBe(0.8);
  });

  it('refuses rows with the right directions but other norms (a dot product ranks them otherwise)', () => {
    const r = judgeReference(model, run, [part([1, 1], 0.5, 1)], 5);
    expect(r.status).toBe('failed');
    expect(r.causes).toHaveLength(1);
    expect(r.causes[0]).toMatch(/^normalisation: the stored rows have norm 0\.500/);
    // Within 1 %: float16 rounding, not a cause.
    expect(judgeReference(model, run, [part([1], 0.999, 1)], 5).status).toBe('passed');
  });

  it('takes the minimum over every part, and says what it found in words', () => {
    const r = judgeReference(
      model,
      run,
      [part([1, 0.9999]), { ...part([0.5]), part: 'image', set: 'img.npy' }],
      12,
    );
    expect(r.min).toBe(0.5);
    expect(r.status).toBe('failed');
    const words = describeReference(r);
    expect(words[0]).toBe(
      'Refused: the stored rows do not match this model here (fp32 on wasm); lowest cosine 0.5000 < 0.999 over 3 documents.',
    );
    expect(words[1]).toContain('text: embeddings/m/fp32/text.npy; image: img.npy');
    expect(describeReference({ ...r, status: 'unchecked' })[0]).toMatch(/^Unchecked: run anyway/);
    expect(describeReference(judgeReference(model, run, [part([1])], 1))[0]).toMatch(/^Passed/);
    expect(referenceCheckKey('h', ['a', 'b'], 'm', 'fp32', 'wasm')).toBe('h|a+b|m|fp32|wasm');
  });

  it('says what a packed index’s rows cost to read from the host, and nothing for stored sets', () => {
    const stored = judgeReference(model, run, [part([1])], 3);
    expect(referenceBytes(stored)).toBeNull();
    expect(describeReference(stored)[1]).toMatch(/; 3 ms\.$/);
    const packed = judgeReference(
      model,
      run,
      [
        { ...part([1]), bytes: 4096 },
        { ...part([1]), bytes: 96 },
      ],
      3,
    );
    expect(referenceBytes(packed)).toBe(4192);
    expect(describeReference(packed)[1]).toMatch(/; 3 ms; it read 4\.1 KiB from the shard's host\.$/);
    // The same check for a later run in the tab: its time and bytes were spent then.
    const later = { ...packed, earlier: true };
    expect(referenceBytes(later)).toBeNull();
    expect(describeReference(later)[1]).toMatch(/seed 37; checked earlier in this tab\.$/);
  });
});

describe('a set that says its rows are synthetic', () => {
  it('keeps the flag from its sidecar (the check skips such a set), and rejects a flag that is not a boolean', async () => {
    const { parsePrecomputedSidecar } = await import('../../src/lib/core/shard/precomputed');
    const base = {
      format: 'loupe-embeddings/1',
      model_id: 'm',
      hub_id: 'm',
      revision: 'main',
      dtype: 'fp32',
      pooling: 'mean',
      normalize: true,
      query_prefix: '',
      doc_prefix: '',
      dim: 4,
      part: 'text',
      vectors: 'text.npy',
      missing: [],
      doc_ids: ['a'],
    };
    expect(parsePrecomputedSidecar({ ...base, synthetic: true }, 's.json').synthetic).toBe(true);
    expect(parsePrecomputedSidecar(base, 's.json').synthetic).toBeUndefined();
    expect(() => parsePrecomputedSidecar({ ...base, synthetic: 'yes' }, 's.json')).toThrow(
      /'synthetic' must be true or false/,
    );
  });
});
