import { describe, expect, it } from 'vitest';
import {
  buildDocDirectory,
  factCounter,
  findDocRow,
  isDocDirectory,
} from '../../src/lib/core/shard/doc-directory';
import type { Doc } from '../../src/lib/core/types';

describe('document directory', () => {
  it('finds every id at its corpus row, and nothing else', () => {
    // Ids that sort differently as numbers, by code unit and with shared prefixes.
    const ids = ['10', '9', 'a', 'ab', 'é', '中', '😀', '', 'A', 'a b', 'aa', '1'];
    const dir = buildDocDirectory(ids);
    expect(isDocDirectory(dir, ids.length)).toBe(true);
    ids.forEach((id, row) => expect(findDocRow(dir, id)).toBe(row));
    for (const absent of ['b', '0', 'ab ', 'a\u0000', '中文', '100'])
      expect(findDocRow(dir, absent)).toBe(-1);
  });

  it('gives the first row of a repeated id', () => {
    const dir = buildDocDirectory(['x', 'y', 'x']);
    expect(findDocRow(dir, 'x')).toBe(0);
    expect(findDocRow(dir, 'y')).toBe(1);
  });

  it('agrees with a Map over 20,000 random ids', () => {
    let seed = 7;
    const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    const ids = Array.from(
      { length: 20_000 },
      (_, i) => `${Math.floor(rand() * 1e6).toString(36)}-${i % 97}`,
    );
    const dir = buildDocDirectory(ids);
    const first = new Map<string, number>();
    ids.forEach((id, r) => first.has(id) || first.set(id, r));
    for (const [id, r] of first) expect(findDocRow(dir, id)).toBe(r);
    expect(findDocRow(dir, 'zzzz-1')).toBe(-1);
  });

  it('rejects a stored directory of another size or a damaged one', () => {
    const dir = buildDocDirectory(['a', 'b']);
    expect(isDocDirectory(dir, 3)).toBe(false);
    expect(isDocDirectory({ ...dir, ids: 'a' }, 2)).toBe(false);
    expect(isDocDirectory(undefined, 0)).toBe(false);
    expect(isDocDirectory(buildDocDirectory([]), 0)).toBe(true);
  });

  it('counts the facts the panels show', () => {
    const doc = (id: string, more: Partial<Doc>): Doc => ({ id, title: '', text: 't', meta: {}, ...more });
    const c = factCounter(new Set(['images/q.png', 'images/none.png']));
    const docs = [
      doc('d1', { image: 'images/q.png', meta: { organ: 'lung' } }),
      doc('d2', {
        text: '',
        image: 'images/x.png',
        images: [{ path: 'images/x.png' }, { path: 'images/y.png' }],
      }),
      doc('d3', {}),
      doc('d4', { image: 'images/q.png', meta: { organ: 'heart' } }),
    ];
    for (const d of docs) c.add(d);
    expect(c.facts()).toEqual({
      docs: 4,
      imageDocs: 3,
      textlessDocs: 1,
      multiImageDocs: 1,
      queryImageDocs: [['images/q.png', 'd4', { organ: 'heart' }]],
    });
  });
});
