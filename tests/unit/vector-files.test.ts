import { describe, expect, it } from 'vitest';
import {
  VectorFileError,
  checkSidecar,
  f16ToF32,
  f32ToF16,
  parseNpy,
  parseSafetensors,
  parseSidecar,
  parseVectorFile,
  permuteRows,
  writeNpy,
  type EmbeddingSidecar,
} from '../../src/lib/core/shard/vector-files';

const enc = new TextEncoder();

/** A .npy file byte by byte: magic, version, little-endian header length, header text, data. */
function npy(header: string, data: Uint8Array, major = 1): Uint8Array {
  const lenBytes = major === 1 ? 2 : 4;
  const h = enc.encode(header);
  const out = new Uint8Array(8 + lenBytes + h.length + data.length);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, major, 0]);
  const dv = new DataView(out.buffer);
  if (major === 1) dv.setUint16(8, h.length, true);
  else dv.setUint32(8, h.length, true);
  out.set(h, 8 + lenBytes);
  out.set(data, 8 + lenBytes + h.length);
  return out;
}

const f32Bytes = (xs: number[]) => new Uint8Array(new Float32Array(xs).buffer);
const f16Bytes = (bits: number[]) => new Uint8Array(new Uint16Array(bits).buffer);

/** A safetensors file: u64 little-endian header length, JSON header, data. */
function safetensors(header: object, data: Uint8Array, pad = 0): Uint8Array {
  const h = enc.encode(JSON.stringify(header) + ' '.repeat(pad));
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setUint32(0, h.length, true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

describe('float16', () => {
  it('converts the interesting bit patterns exactly', () => {
    expect(f16ToF32(0x3c00)).toBe(1);
    expect(f16ToF32(0xc000)).toBe(-2);
    expect(f16ToF32(0x3555)).toBe(0.333251953125);
    expect(f16ToF32(0x7bff)).toBe(65504); // largest normal
    expect(f16ToF32(0x0400)).toBe(2 ** -14); // smallest normal
    expect(f16ToF32(0x0001)).toBe(2 ** -24); // smallest subnormal
    expect(f16ToF32(0x03ff)).toBe(1023 * 2 ** -24); // largest subnormal
    expect(f16ToF32(0x8000)).toBe(-0);
    expect(f16ToF32(0x7c00)).toBe(Infinity);
    expect(f16ToF32(0xfc00)).toBe(-Infinity);
    expect(f16ToF32(0x7e00)).toBeNaN();
  });

  it('round-trips every finite half through f32ToF16', () => {
    const wrong: number[] = [];
    for (let h = 0; h < 0x10000; h++)
      if ((h & 0x7c00) !== 0x7c00 && f32ToF16(f16ToF32(h)) !== h) wrong.push(h);
    expect(wrong).toEqual([]);
    expect(f32ToF16(1e6)).toBe(0x7c00);
    expect(f32ToF16(1 + 2 ** -11)).toBe(0x3c00); // a tie rounds to even
    expect(f32ToF16(1 + 3 * 2 ** -11)).toBe(0x3c02);
  });
});

describe('parseNpy', () => {
  it('reads a version 1.0 <f4 (2, 3) array', () => {
    const m = parseNpy(
      npy(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }        \n",
        f32Bytes([1, 2, 3, 4, 5, 6]),
      ),
    );
    expect(m).toMatchObject({ n: 2, dim: 3, sourceDtype: 'f32' });
    expect(Array.from(m.data)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('reads versions 2.0 and 3.0 (4-byte header length; UTF-8 header) and <f2 data', () => {
    const h = "{'descr': '<f2', 'fortran_order': False, 'shape': (1, 4)}\n";
    const data = f16Bytes([0x3c00, 0xc000, 0x0001, 0x7bff]);
    for (const major of [2, 3]) {
      const m = parseNpy(npy(h, data, major));
      expect(m).toMatchObject({ n: 1, dim: 4, sourceDtype: 'f16' });
      expect(Array.from(m.data)).toEqual([1, -2, 2 ** -24, 65504]);
    }
  });

  it('copies when the data is not 4-byte aligned, and views it when it is', () => {
    // Header length 9 + 10 = 19 bytes: data starts at an odd offset.
    const odd = npy("{'descr':'<f4','fortran_order':False,'shape':(1,2)}", f32Bytes([7, 8]));
    expect(Array.from(parseNpy(odd).data)).toEqual([7, 8]);
    const written = writeNpy(new Float32Array([1, 2, 3, 4]), 2, 2);
    expect(written.length % 64).toBe(16); // 64-byte header, then 16 bytes of data
    const m = parseNpy(written);
    expect(m.data.buffer).toBe(written.buffer);
    expect(Array.from(m.data)).toEqual([1, 2, 3, 4]);
  });

  it('rejects what it cannot read, saying why', () => {
    const data = f32Bytes([1, 2, 3, 4]);
    const bad =
      (header: string, d = data) =>
      () =>
        parseNpy(npy(header, d), 'e.npy');
    expect(() => parseNpy(enc.encode('not numpy at all'), 'e.npy')).toThrow(/e\.npy: not a \.npy file/);
    expect(bad("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }")).toThrow(
      /big-endian dtype '>f4'/,
    );
    expect(bad("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }")).toThrow(
      /dtype '<f8' is not supported/,
    );
    expect(bad("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }")).toThrow(/Fortran/);
    expect(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }")).toThrow(
      /shape \(4\) is not 2-D/,
    );
    expect(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }")).toThrow(
      /data is 16 bytes, shape \(3, 2\) of <f4 needs 24 \(truncated file\?\)/,
    );
    expect(bad("{'descr': '<f4', 'shape': (2, 2), }")).toThrow(/no 'fortran_order'/);
    expect(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }")).toThrow(/bad \.npy header/);
    expect(bad("['descr']")).toThrow(/expected '\{'/);
    const v9 = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", data);
    v9[6] = 9;
    expect(() => parseNpy(v9)).toThrow(/unsupported \.npy format version 9\.0/);
    const long = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", data);
    new DataView(long.buffer).setUint16(8, 60000, true);
    expect(() => parseNpy(long)).toThrow(/runs past the end/);
    expect(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }")).not.toThrow();
    try {
      bad("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }")();
    } catch (e) {
      expect(e).toBeInstanceOf(VectorFileError);
      expect((e as VectorFileError).file).toBe('e.npy');
    }
  });
});

describe('parseSafetensors', () => {
  it('reads the only 2-D F32 tensor, ignoring __metadata__ and 1-D tensors', () => {
    const data = new Uint8Array([...f32Bytes([1, 2, 3, 4, 5, 6]), ...f32Bytes([9])]);
    const file = safetensors(
      {
        __metadata__: { format: 'pt' },
        embeddings: { dtype: 'F32', shape: [3, 2], data_offsets: [0, 24] },
        bias: { dtype: 'F32', shape: [1], data_offsets: [24, 28] },
      },
      data,
      3,
    );
    const m = parseSafetensors(file);
    expect(m).toMatchObject({ n: 3, dim: 2, sourceDtype: 'f32' });
    expect(Array.from(m.data)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(Array.from(parseVectorFile(file, 'x.SAFETENSORS').data)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('converts F16 and BF16, and picks a tensor by name', () => {
    const half = f16Bytes([0x3c00, 0x3800, 0xbc00, 0x0000]);
    const bf = f16Bytes([0x3f80, 0xc000, 0x4049, 0x0000]); // 1, -2, 3.140625, 0
    const file = safetensors(
      {
        a: { dtype: 'F16', shape: [2, 2], data_offsets: [0, 8] },
        b: { dtype: 'BF16', shape: [1, 4], data_offsets: [8, 16] },
      },
      new Uint8Array([...half, ...bf]),
    );
    expect(() => parseSafetensors(file, 'two.safetensors')).toThrow(
      /several 2-D tensors \(a, b\); name the one/,
    );
    expect(Array.from(parseSafetensors(file, 'f', 'a').data)).toEqual([1, 0.5, -1, 0]);
    const b = parseSafetensors(file, 'f', 'b');
    expect(b.sourceDtype).toBe('bf16');
    expect(Array.from(b.data)).toEqual([1, -2, 3.140625, 0]);
    expect(() => parseSafetensors(file, 'f', 'c')).toThrow(/no tensor named 'c' \(tensors: a, b\)/);
  });

  it('rejects malformed files precisely', () => {
    const d = f32Bytes([1, 2]);
    const ok = { t: { dtype: 'F32', shape: [1, 2], data_offsets: [0, 8] } };
    expect(() => parseSafetensors(new Uint8Array(4), 's')).toThrow(/s: too short/);
    const huge = safetensors(ok, d);
    new DataView(huge.buffer).setUint32(0, 1e6, true);
    expect(() => parseSafetensors(huge, 's')).toThrow(/header length 1000000 is larger than the file/);
    const notJson = safetensors(ok, d);
    notJson[8] = 0x7b + 1;
    expect(() => parseSafetensors(notJson, 's')).toThrow(/header is not valid JSON/);
    expect(() =>
      parseSafetensors(safetensors({ t: { dtype: 'I64', shape: [1, 2], data_offsets: [0, 16] } }, d)),
    ).toThrow(/dtype I64; F32, F16 and BF16 are supported/);
    expect(() =>
      parseSafetensors(safetensors({ t: { dtype: 'F32', shape: [1, 2], data_offsets: [0, 12] } }, d)),
    ).toThrow(/runs past the end/);
    expect(() =>
      parseSafetensors(safetensors({ t: { dtype: 'F32', shape: [2, 2], data_offsets: [0, 8] } }, d)),
    ).toThrow(/holds 8 bytes, shape \[2, 2\] of F32 needs 16/);
    expect(() => parseSafetensors(safetensors({ t: { dtype: 'F32', shape: [2] } }, d))).toThrow(
      /malformed entry/,
    );
    expect(() =>
      parseSafetensors(safetensors({ t: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } }, d)),
    ).toThrow(/no 2-D tensor/);
    expect(() => parseVectorFile(d, 'x.bin')).toThrow(/unknown vector file type/);
  });
});

describe('sidecar', () => {
  const sidecar: EmbeddingSidecar = {
    model_id: 'org/model',
    revision: 'abc123',
    dtype: 'fp32',
    pooling: 'mean',
    normalize: true,
    dim: 4,
    doc_ids: ['d1', 'd2', 'd3'],
  };

  it('parses and type-checks, naming every bad field', () => {
    expect(parseSidecar(JSON.stringify(sidecar))).toEqual(sidecar);
    expect(() => parseSidecar('{', 'side.json')).toThrow(/side\.json: not valid JSON/);
    expect(() => parseSidecar({ ...sidecar, dim: 0, normalize: 'yes', model_id: '' }, 'side.json')).toThrow(
      "side.json: 'model_id' must be a non-empty string; 'normalize' must be true or false; 'dim' must be a positive integer",
    );
    expect(() => parseSidecar({ ...sidecar, doc_ids: ['a', 3] })).toThrow(/'doc_ids'\[1\] is not a string/);
    expect(() => parseSidecar([])).toThrow(/not a JSON object/);
  });

  it('accepts the same ids in the same order', () => {
    expect(checkSidecar(sidecar, { n: 3, dim: 4 }, ['d1', 'd2', 'd3'], { modelId: 'org/model' })).toEqual({
      ok: true,
    });
  });

  it('names every difference', () => {
    const r = checkSidecar(sidecar, { n: 2, dim: 8 }, ['d1', 'd2', 'd4', 'd5'], { modelId: 'other/model' });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.map((p) => p.message)).toEqual([
      'the matrix has 2 rows but the sidecar lists 3 document ids',
      'the matrix has dimension 8 but the sidecar says 4',
      'embeddings are from model "org/model", expected "other/model"',
      'the sidecar has 3 document ids, the shard has 4 documents',
      'ids not in the shard: "d3"',
      'shard documents without a vector: "d4", "d5"',
    ]);
    const dup = checkSidecar({ ...sidecar, doc_ids: ['d1', 'd1', 'd2'] }, { n: 3, dim: 4 }, [
      'd1',
      'd2',
      'd3',
    ]);
    expect(dup.ok === false && dup.problems.map((p) => p.code)).toEqual(['duplicate-id', 'missing-ids']);
    const rev = checkSidecar(sidecar, { n: 3, dim: 4 }, ['d1', 'd2', 'd3'], { revision: 'def', dim: 384 });
    expect(rev.ok === false && rev.problems.map((p) => p.message)).toEqual([
      'dimension 4 differs from the 384 this index expects',
      'embeddings are from revision "abc123" of org/model, expected "def"',
    ]);
  });

  it('reports a different order with the permutation that fixes it', () => {
    const r = checkSidecar({ ...sidecar, doc_ids: ['d3', 'd1', 'd2'] }, { n: 3, dim: 4 }, ['d1', 'd2', 'd3']);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toEqual([
      {
        code: 'order',
        message: 'same documents in a different order: row 0 is "d3", the shard\'s document 0 is "d1"',
      },
    ]);
    expect(Array.from(r.permutation!)).toEqual([1, 2, 0]);
    const rows = new Float32Array([30, 31, 10, 11, 20, 21]); // rows of d3, d1, d2
    expect(Array.from(permuteRows(rows, 2, r.permutation!))).toEqual([10, 11, 20, 21, 30, 31]);
  });
});
