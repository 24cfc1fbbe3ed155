// Multi-image scoring helpers: paths of an item, run names, and the fused rows of max-sim.
import { describe, expect, it } from 'vitest';
import { fuseFeatures } from '../../src/lib/core/dense';
import {
  describeMultiImage,
  fusedItemRows,
  hasMultiImageItems,
  itemImagePaths,
} from '../../src/lib/core/multi-image';

describe('multi-image items', () => {
  it('lists an item’s images in order', () => {
    expect(itemImagePaths({ image: 'a.jpg' })).toEqual(['a.jpg']);
    expect(
      itemImagePaths({ image: 'a.jpg', images: [{ path: 'a.jpg' }, { path: 'b.jpg', role: 'lateral' }] }),
    ).toEqual(['a.jpg', 'b.jpg']);
    expect(itemImagePaths({})).toEqual([]);
    expect(hasMultiImageItems([{}, { images: [{ path: 'a' }] }])).toBe(false);
    expect(hasMultiImageItems([{ images: [{ path: 'a' }, { path: 'b' }] }])).toBe(true);
    expect(describeMultiImage('max')).toBe('images max-sim');
    expect(describeMultiImage('mean')).toBe('images mean');
    expect(describeMultiImage(undefined)).toBe('');
  });

  it('fuses every image row with its document’s text; text-only documents keep one row; empty ones none', () => {
    const dim = 2;
    // Doc 0: text + 2 images; doc 1: text only; doc 2: nothing; doc 3: 1 image, no text.
    const text = Float32Array.from([1, 0, 0, 1, 0, 0, 0, 0]);
    const textMissing = Uint8Array.from([0, 0, 1, 1]);
    const imageRows = Float32Array.from([0, 1, 1, 1, 3, 4]);
    const imageRowDoc = Uint32Array.from([0, 0, 3]);
    const { rows, rowDoc } = fusedItemRows(text, textMissing, imageRows, imageRowDoc, 4, dim);
    expect([...rowDoc]).toEqual([0, 0, 1, 3]);
    const row = (i: number) => [...rows.subarray(i * dim, (i + 1) * dim)];
    expect(row(0)).toEqual([...fuseFeatures([1, 0], [0, 1])]);
    expect(row(1)).toEqual([...fuseFeatures([1, 0], [1, 1])]);
    expect(row(2)).toEqual([0, 1]);
    expect(row(3)).toEqual([3, 4]);
    expect(() => fusedItemRows(text, textMissing, imageRows, Uint32Array.from([0]), 4, dim)).toThrow(
      /3 image rows for 1/,
    );
  });
});
