// DICOM decoding against Debian's pydicom: every test file whose transfer syntax Loupe supports must
// give pydicom's pixel_array (exactly for lossless syntaxes, within a bound for lossy ones), every
// unsupported one its clear error, and windowing / MONOCHROME1 pydicom's apply_modality_lut +
// apply_voi_lut. The references are computed now by tests/fixtures/dicom/reference.py into a temp folder.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadNodeDicomCodecs } from '../../scripts/lib/node-dicom-codecs';
import {
  DicomError,
  decodeDicomImage,
  decodeFrame,
  greyLevels,
  modalityValues,
  parseDicom,
  type DicomCodecs,
} from '../../src/lib/core/media/dicom/image';
import { MemorySource } from '../../src/lib/core/shard/memory-source';
import { readShard } from '../../src/lib/core/shard/read-shard';
import { ShardValidationError } from '../../src/lib/core/shard/source';

interface Entry {
  file: string;
  path: string;
  ts?: string | null;
  photometric?: string;
  frames?: number;
  bins?: string[];
  rgbBins?: string[];
  voi?: string[];
  modality?: string;
  pydicomError?: string;
  readError?: string;
}

const PYTHON = '/usr/bin/python3';
const dir = mkdtempSync(join(tmpdir(), 'loupe-dicom-'));
execFileSync(PYTHON, [join(import.meta.dirname, '../fixtures/dicom/reference.py'), dir], { stdio: 'pipe' });
const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as {
  pydicom: string;
  files: Entry[];
  variants: Entry[];
};
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const codecs: DicomCodecs = await loadNodeDicomCodecs();

const ref = (f: string): Float64Array => {
  const b = readFileSync(join(dir, f));
  return new Float64Array(b.buffer, b.byteOffset, b.byteLength / 8);
};
const bytes = (p: string): Uint8Array => new Uint8Array(readFileSync(p));

/** Largest absolute difference. */
function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** Transfer syntaxes Loupe decodes; 12-bit JPEG Extended is refused with a clear error. */
function supported(e: Entry, bitsStored: number): boolean {
  if (!e.ts) return true;
  if (e.ts === '1.2.840.10008.1.2.4.51' || e.ts === '1.2.840.10008.1.2.4.50') return bitsStored <= 8;
  return true;
}
const LOSSY = new Set([
  '1.2.840.10008.1.2.4.50',
  '1.2.840.10008.1.2.4.51',
  '1.2.840.10008.1.2.4.91',
  '1.2.840.10008.1.2.4.81',
]);

/**
 * Files pydicom decodes and Loupe does not, each a clear DicomError rather than pixels: limits of
 * dicom-parser's encapsulated pixel data reader (reported in the README).
 */
const DICOM_PARSER_LIMITS: Record<string, string> = {
  'SC_rgb_jpeg.dcm': 'dicom-parser: buffer overrun reading the data set',
  'JPEG2000-embedded-sequence-delimiter.dcm': 'a fragment holding the sequence delimiter bytes is cut short',
};

const decodable = manifest.files.filter((e) => e.bins);
const refused = manifest.files.filter((e) => !e.bins);

describe(`pixel data vs pydicom ${manifest.pydicom}`, () => {
  it('covers the transfer syntaxes the issue names', () => {
    const ts = new Set(decodable.map((e) => e.ts));
    for (const uid of [
      '1.2.840.10008.1.2',
      '1.2.840.10008.1.2.1',
      '1.2.840.10008.1.2.2',
      '1.2.840.10008.1.2.5',
      '1.2.840.10008.1.2.4.50',
      '1.2.840.10008.1.2.4.70',
      '1.2.840.10008.1.2.4.80',
      '1.2.840.10008.1.2.4.90',
      '1.2.840.10008.1.2.4.91',
    ])
      expect(ts.has(uid), uid).toBe(true);
    expect(decodable.length).toBeGreaterThan(40);
  });

  it.each(decodable.filter((e) => !(e.file in DICOM_PARSER_LIMITS)).map((e) => [e.file, e] as const))(
    '%s',
    (_, e) => {
      const parsed = parseDicom(bytes(e.path));
      if (!supported(e, parsed.info.bitsStored)) {
        expect(() => decodeFrame(parsed, 0, codecs)).toThrow(DicomError);
        try {
          decodeFrame(parsed, 0, codecs);
        } catch (err) {
          expect((err as DicomError).code).toBe('unsupported-syntax');
          expect((err as Error).message).toContain(e.ts!);
          expect((err as Error).message).toContain(parsed.info.transferSyntax.name);
        }
        return;
      }
      expect(parsed.info.frames).toBe(e.frames);
      const lossy = LOSSY.has(e.ts ?? '');
      for (let k = 0; k < e.frames!; k++) {
        const f = decodeFrame(parsed, k, codecs);
        let d = maxDiff(f.values, ref(e.bins![k]));
        // A colour JPEG: pydicom's pixel_array may still be YCbCr; then its YCbCr -> RGB is the reference.
        if (e.rgbBins) d = Math.min(d, maxDiff(f.values, ref(e.rgbBins[k])));
        // Lossy: a different IDCT / wavelet implementation may round differently, never by much.
        if (lossy) expect(d, `frame ${k}`).toBeLessThanOrEqual(2 ** (parsed.info.bitsStored - 7));
        else expect(d, `frame ${k}`).toBe(0);
      }
      for (const [i, f] of (e.voi ?? []).entries()) {
        const frame = decodeFrame(parsed, 0, codecs);
        const { levels } = greyLevels(parsed.info, frame, i);
        expect(maxDiff(levels, ref(f)), `window ${i}`).toBeLessThan(lossy ? 0.02 : 1e-9);
      }
    },
  );
});

describe('files Loupe or pydicom refuse', () => {
  it.each(Object.entries(DICOM_PARSER_LIMITS))(
    '%s: pydicom decodes it, Loupe gives a clear error (%s)',
    (file, why) => {
      const e = decodable.find((x) => x.file === file)!;
      expect(e, 'pydicom decodes it').toBeDefined();
      expect(() => decodeDicomImage(bytes(e.path), { codecs })).toThrow(DicomError);
      expect(why).toBeTruthy();
    },
  );

  it.each(refused.map((e) => [e.file, e] as const))('%s: a DicomError or pixels, never a crash', (_, e) => {
    let err: unknown;
    try {
      decodeDicomImage(bytes(e.path), { codecs });
    } catch (x) {
      err = x;
    }
    // pydicom cannot decode these either; Loupe must name the problem.
    if (e.file === 'MR_truncated.dcm') {
      expect(err).toBeInstanceOf(DicomError);
      expect((err as DicomError).message).toMatch(/malformed DICOM file: .*runs past the end of the file/);
    }
    if (err) expect(err, String(err)).toBeInstanceOf(DicomError);
  });

  it('an unknown or codec-less transfer syntax names its UID and name', () => {
    const e = manifest.files.find((x) => x.file === 'JPEG2000.dcm')!;
    const parsed = parseDicom(bytes(e.path));
    expect(() => decodeFrame(parsed, 0, {})).toThrow(
      'transfer syntax 1.2.840.10008.1.2.4.91 (JPEG 2000) needs a codec that is not loaded here',
    );
  });
});

describe('window / level and MONOCHROME1 vs pydicom apply_modality_lut + apply_voi_lut', () => {
  it.each(manifest.variants.map((e) => [e.file, e] as const))('%s', (_, e) => {
    const parsed = parseDicom(bytes(e.path));
    const frame = decodeFrame(parsed, 0, codecs);
    expect(maxDiff(modalityValues(parsed.info, frame), ref(e.modality!))).toBe(0);
    expect(e.voi!.length).toBe(parsed.info.windows.length);
    for (const [i, f] of e.voi!.entries()) {
      const { levels, window } = greyLevels(parsed.info, frame, i);
      const expected = ref(f);
      const mono1 = parsed.info.photometric === 'MONOCHROME1';
      // pydicom's VOI output is not inverted: MONOCHROME1 display is 1 − it.
      const want = mono1 ? expected.map((v) => 1 - v) : expected;
      expect(maxDiff(levels, want), `window ${i}`).toBeLessThan(1e-9);
      expect(window.source).toBe('file');
      const img = decodeDicomImage(bytes(e.path), { window: i, codecs });
      expect(img.rgba[0]).toBe(Math.round(want[0] * 255));
    }
  });

  it('defaults to min-max of the modality values when the file has no window', () => {
    const e = manifest.files.find((x) => x.file === 'CT_small.dcm')!;
    const parsed = parseDicom(bytes(e.path));
    expect(parsed.info.windows).toEqual([]);
    const img = decodeDicomImage(bytes(e.path), { codecs });
    expect(img.window?.source).toBe('min-max');
    const mv = modalityValues(parsed.info, decodeFrame(parsed, 0, codecs));
    const lo = Math.min(...mv);
    const hi = Math.max(...mv);
    expect(img.window).toMatchObject({ center: (lo + hi) / 2, width: hi - lo });
    const grey = Array.from({ length: mv.length }, (_, i) => img.rgba[i * 4]);
    expect(Math.min(...grey)).toBe(0);
    expect(Math.max(...grey)).toBe(255);
  });
});

describe('privacy', () => {
  const path = manifest.files.find((x) => x.file === 'CT_small.dcm')!.path;
  it('never returns identifying attributes unless asked', () => {
    const img = decodeDicomImage(bytes(path), { codecs });
    expect(img.identifying).toBeUndefined();
    const text = JSON.stringify({ ...img, rgba: undefined });
    const id = parseDicom(bytes(path), { includeIdentifying: true }).identifying!;
    expect(id.PatientName).toBeTruthy();
    for (const v of Object.values(id).filter((x) => x.length >= 4)) expect(text).not.toContain(v);
    expect(img.info).toMatchObject({ modality: 'CT', rows: 128, columns: 128, frames: 1, bitsStored: 16 });
  });
});

describe('DICOM images in a shard (readShard)', () => {
  const jsonl = (rows: unknown[]): string => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
  const enc = (s: string) => new TextEncoder().encode(s);
  const shard = (image: Uint8Array, name = 'images/ct.dcm') =>
    new Map<string, Uint8Array>([
      [
        'shard.json',
        enc(
          JSON.stringify({
            name: 'dicom',
            version: '1',
            format: 'beir+images',
            license: 'CC0-1.0',
            tasks: [{ id: 'i2t', query_modality: 'image', corpus_modality: 'text' }],
          }),
        ),
      ],
      ['corpus.jsonl', enc(jsonl([{ _id: 'd1', title: '', text: 'a CT slice' }]))],
      ['queries.jsonl', enc(jsonl([{ _id: 'q1', text: '', image: name, task: 'i2t' }]))],
      ['qrels/test.tsv', enc('query-id\tcorpus-id\tscore\nq1\td1\t1\n')],
      [name, image],
    ]);
  const path = (f: string) => manifest.files.find((x) => x.file === f)!.path;

  it('accepts a decodable DICOM image (compressed ones through the injected codecs)', async () => {
    for (const f of ['CT_small.dcm', 'MR_small_jp2klossless.dcm', 'MR_small_RLE.dcm']) {
      const kept: string[] = [];
      await readShard(new MemorySource(shard(bytes(path(f)))), {
        loadDicomCodecs: async () => codecs,
        onImage: (p) => void kept.push(p),
      });
      expect(kept).toEqual(['images/ct.dcm']);
    }
  });

  it('rejects a broken or unsupported one with its file, the line that references it and the reason', async () => {
    const cases: [string, RegExp][] = [
      ['MR_truncated.dcm', /runs past the end of the file/],
      [
        'JPGExtended.dcm',
        /1\.2\.840\.10008\.1\.2\.4\.51 \(JPEG Extended \(Process 2 & 4\)\) with 12-bit samples/,
      ],
    ];
    for (const [f, why] of cases) {
      const err = await readShard(new MemorySource(shard(bytes(path(f)))), {
        loadDicomCodecs: async () => codecs,
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ShardValidationError);
      const [issue] = (err as ShardValidationError).issues;
      expect(issue).toMatchObject({ file: 'images/ct.dcm', code: 'bad-dicom' });
      expect(issue.message).toContain('referenced on queries.jsonl:1');
      expect(issue.message).toMatch(why);
      expect(issue.message).toContain('is not a usable DICOM image');
    }
  });

  it('without codecs a compressed image is refused, not crashed on', async () => {
    const err = await readShard(new MemorySource(shard(bytes(path('MR_small_jp2klossless.dcm'))))).catch(
      (e: unknown) => e,
    );
    expect((err as ShardValidationError).issues[0].message).toContain(
      'needs a codec that is not loaded here',
    );
  });
});
