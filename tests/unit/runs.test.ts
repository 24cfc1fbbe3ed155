import { describe, expect, test } from 'vitest';
import {
  decodeRun,
  describeConfig,
  deviceNote,
  encodeRun,
  runTag,
  type RunMeta,
} from '../../src/lib/core/runs';
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
});
