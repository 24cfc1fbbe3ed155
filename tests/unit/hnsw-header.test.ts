// hnswlibHeader (core/retrieval/hnsw-header) against the layout hnswlib's HierarchicalNSW::saveIndex
// writes, field by field in its order, with wasm32 sizes (size_t, int and tableint 4 bytes, the
// level multiplier a double): the worker's check of a stored graph reads the right fields.
import { describe, expect, it } from 'vitest';
import { hnswlibHeader } from '../../src/lib/core/retrieval/hnsw-header';

/** saveIndex's header fields in the order it writes them, with their wasm32 sizes in bytes. */
const FIELDS: [name: string, bytes: 4 | 8][] = [
  ['offsetLevel0_', 4],
  ['max_elements_', 4],
  ['cur_element_count', 4],
  ['size_data_per_element_', 4],
  ['label_offset_', 4],
  ['offsetData_', 4],
  ['maxlevel_', 4],
  ['enterpoint_node_', 4],
  ['maxM_', 4],
  ['maxM0_', 4],
  ['M_', 4],
  ['mult_', 8],
  ['ef_construction_', 4],
];

/** A serialised header with `values` (little-endian), followed by `tail` bytes of graph data. */
function header(values: Record<string, number>, tail = 16): Uint8Array {
  const size = FIELDS.reduce((s, [, b]) => s + b, 0);
  const bytes = new Uint8Array(size + tail);
  const dv = new DataView(bytes.buffer);
  let at = 0;
  for (const [name, b] of FIELDS) {
    const v = values[name] ?? 0;
    if (b === 8) dv.setFloat64(at, v, true);
    else dv.setUint32(at, v, true);
    at += b;
  }
  return bytes;
}

describe('hnswlibHeader', () => {
  it('reads the element count, maxM0, M and ef_construction where saveIndex wrote them', () => {
    const bytes = header({
      max_elements_: 5000,
      cur_element_count: 4321,
      maxM_: 16,
      maxM0_: 32,
      M_: 16,
      mult_: 1 / Math.log(16),
      ef_construction_: 200,
      maxlevel_: 3,
    });
    expect(hnswlibHeader(bytes)).toEqual({ count: 4321, maxM0: 32, M: 16, efConstruction: 200 });
  });

  it('reads a header that starts inside a larger buffer (a view with a byte offset)', () => {
    const inner = header({ cur_element_count: 7, maxM0_: 8, M_: 4, ef_construction_: 40 });
    const outer = new Uint8Array(inner.length + 3);
    outer.set(inner, 3);
    expect(hnswlibHeader(outer.subarray(3))).toEqual({ count: 7, maxM0: 8, M: 4, efConstruction: 40 });
  });

  it('refuses bytes shorter than the header', () => {
    expect(() => hnswlibHeader(header({}, 0).subarray(0, 55))).toThrow(/shorter than hnswlib/);
    expect(hnswlibHeader(header({ M_: 12 }, 0)).M).toBe(12);
  });
});
