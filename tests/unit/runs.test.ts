import { describe, expect, test } from 'vitest';
import {
  configKey,
  configUsesTestModel,
  isTestModel,
  decodeRun,
  describeConfig,
  deviceNote,
  encodeRun,
  runTag,
  type RunMeta,
} from '../../src/lib/core/retrieval/runs';
import type { Run } from '../../src/lib/core/types';

const meta: RunMeta = {
  id: 'run-1',
  name: 'bm25',
  shardHash: 'abc',
  shardName: 'medquad',
  taskId: 't',
  config: { kind: 'bm25', k1: 0.9, b: 0.4, lossyLengths: true },
  depth: 3,
  createdAt: '2026-11-23T00:00:00.000Z',
  ms: 12,
  tag: 'loupe-bm25-k1_0.9-b_0.4',
};

describe('stored runs', () => {
  test('encode → structured clone → decode gives the same run, including empty lists and exact scores', () => {
    const run: Run = new Map([
      [
        'q2',
        [
          { docId: 'd1', score: 0.1 + 0.2 },
          { docId: 'd9', score: -0 },
        ],
      ],
      ['q1', []],
      ['q3', [{ docId: 'd3', score: 1e-300 }]],
    ]);
    const back = decodeRun(structuredClone(encodeRun(meta, run)));
    expect(back.meta).toEqual(meta);
    expect([...back.run.keys()]).toEqual(['q2', 'q1', 'q3']);
    expect(back.run.get('q2')).toEqual(run.get('q2'));
    expect(Object.is(back.run.get('q2')![1].score, -0)).toBe(true);
    expect(back.run.get('q1')).toEqual([]);
  });

  test('an inconsistent or old record is refused', () => {
    const good = encodeRun(meta, new Map([['q', [{ docId: 'd', score: 1 }]]]));
    expect(() => decodeRun({ ...good, docIds: [] })).toThrow(/inconsistent/);
    expect(() => decodeRun({ ...good, version: 0 })).toThrow(/format/);
  });

  test('tags have no whitespace (a TREC run column)', () => {
    expect(runTag({ kind: 'import', fileName: 'x', tag: 'my run' })).toBe('my_run');
    expect(
      runTag({ kind: 'dense', modelId: 'Xenova/all MiniLM', revision: 'main', dtype: 'q8', device: 'wasm' }),
    ).not.toMatch(/\s/);
  });

  test('a dense run is described with the reason for its device', () => {
    const c = { kind: 'dense', modelId: 'm', revision: 'main', dtype: 'q8', device: 'wasm' } as const;
    expect(describeConfig(c)).toBe('m (q8, wasm)');
    expect(describeConfig({ ...c, deviceReason: 'software WebGPU adapter (SwiftShader) — using WASM' })).toBe(
      'm (q8, wasm) · software WebGPU adapter (SwiftShader) — using WASM',
    );
    expect(deviceNote({ kind: 'bm25', k1: 0.9, b: 0.4, lossyLengths: true })).toBeUndefined();
  });

  test('configKey finds the same configuration, ignoring measured side data and input order', () => {
    const dense = { kind: 'dense', modelId: 'm', revision: 'main', dtype: 'q8', device: 'wasm' } as const;
    const ann = { kind: 'hnsw', M: 16, efConstruction: 200, efSearch: 384, recallAt10: 0.99 } as const;
    expect(configKey({ ...dense, ann }, 't', 100)).toBe(
      configKey({ ...dense, ann: { ...ann, recallAt10: 0.5, curve: [] }, deviceReason: 'why' }, 't', 100),
    );
    expect(configKey({ ...dense, ann }, 't', 100)).not.toBe(configKey(dense, 't', 100));
    expect(configKey(dense, 't', 100)).not.toBe(configKey(dense, 'u', 100));
    expect(configKey(dense, 't', 100)).not.toBe(configKey(dense, 't', 1000));
    expect(configKey({ ...dense, dtype: 'fp32' }, 't', 100)).not.toBe(configKey(dense, 't', 100));
    const f = { kind: 'fusion', method: 'rrf', params: { k: 60 } } as const;
    expect(configKey({ ...f, inputs: ['a', 'b'] }, 't', 100)).toBe(
      configKey({ ...f, inputs: ['b', 'a'] }, 't', 100),
    );
    expect(configKey({ ...f, inputs: ['a', 'b'] }, 't', 100)).not.toBe(
      configKey({ ...f, inputs: ['a', 'c'] }, 't', 100),
    );
  });

  test('generated test models are recognised by their id', () => {
    expect(isTestModel('loupe-test/clip-tiny-random')).toBe(true);
    expect(isTestModel('Xenova/clip-vit-base-patch16')).toBe(false);
    const c = {
      kind: 'dense',
      modelId: 'loupe-test/bert-tiny-random',
      revision: 'main',
      dtype: 'q8',
      device: 'wasm',
    } as const;
    expect(configUsesTestModel(c)).toBe(true);
    expect(configUsesTestModel({ kind: 'bm25', k1: 0.9, b: 0.4, lossyLengths: true })).toBe(false);
  });
});
