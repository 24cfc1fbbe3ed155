// Lucene's one-byte document-length norm (SmallFloat.intToByte4 / byte4ToInt), which BM25 scores with
// when it reproduces Anserini bit for bit, implemented from the algorithm: a tiny float with 3
// explicit mantissa bits; byte values below 24 encode themselves.
/** Encodes a non-negative int as a tiny float: exact below 16, then 4 significant bits. */
function longToInt4(v: number): number {
  const numBits = 32 - Math.clz32(v);
  if (numBits < 4) return v;
  const shift = numBits - 4;
  // Keep the 4 most significant bits, drop the implicit leading 1, store shift + 1 above them.
  return ((v >>> shift) & 0x07) | ((shift + 1) << 3);
}

function int4ToLong(i: number): number {
  const bits = i & 0x07;
  const shift = (i >>> 3) - 1;
  return shift === -1 ? bits : (bits | 0x08) * 2 ** shift;
}

// The byte values left over after encoding the whole non-negative int range as int4 are used to
// store the smallest lengths exactly: 255 − int4(2^31 − 1) = 24.
const NUM_FREE_VALUES = 255 - longToInt4(0x7fffffff);

/** Lucene's SmallFloat.intToByte4: a document length (non-negative int) to its one-byte norm. */
export function intToByte4(length: number): number {
  if (!Number.isInteger(length) || length < 0 || length > 0x7fffffff)
    throw new RangeError(`bad length ${length}`);
  return length < NUM_FREE_VALUES ? length : NUM_FREE_VALUES + longToInt4(length - NUM_FREE_VALUES);
}

/** Lucene's SmallFloat.byte4ToInt: a one-byte norm (0–255) back to the length it stands for. */
export function byte4ToInt(b: number): number {
  const i = b & 0xff;
  return i < NUM_FREE_VALUES ? i : NUM_FREE_VALUES + int4ToLong(i - NUM_FREE_VALUES);
}
