// The fields of hnswlib's own serialised header (HierarchicalNSW::saveIndex) that the index worker
// checks against its stored header and build parameters before trusting a saved graph. Pure.

/**
 * Fields of hnswlib's own binary header that must agree with ours (wasm32: size_t is 4 bytes):
 * offset 8 cur_element_count, 36 maxM0_, 40 M_, 52 ef_construction_.
 */
export function hnswlibHeader(bytes: Uint8Array): {
  count: number;
  maxM0: number;
  M: number;
  efConstruction: number;
} {
  if (bytes.length < 56) throw new Error('index bytes are shorter than hnswlib’s header');
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return {
    count: dv.getUint32(8, true),
    maxM0: dv.getUint32(36, true),
    M: dv.getUint32(40, true),
    efConstruction: dv.getUint32(52, true),
  };
}
