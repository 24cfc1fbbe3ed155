// DICOM conformance: files Loupe has never seen, made now from vqa-rad pictures by dcmtk, pydicom and
// GDCM (tests/fixtures/dicom/conformance.py, into a temp folder), decoded in Node through the codecs the
// browser bundles. Every transfer syntax Loupe decodes; 8/12/16-bit, signed, MONOCHROME1/2, RGB planar
// 0/1, JPEG-LS interleave 0/1/2, JPEG lossless predictors 1-7. Stored values equal an independent
// decoder's (dcmtk, GDCM, pydicom) exactly for lossless syntaxes; the displayed 8-bit image equals
// pydicom's modality + VOI LUT (or the documented min-max / colour scaling). Corrupt pixel data fails
// with what the codec said.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadNodeDicomCodecs } from '../../scripts/lib/node-dicom-codecs';
import {
  DicomError,
  TRANSFER_SYNTAXES,
  decodeDicomImage,
  decodeFrame,
  parseDicom,
  type DicomCodecs,
} from '../../src/lib/core/media/dicom/image';
import { MemorySource } from '../../src/lib/core/shard/memory-source';
import { readShard } from '../../src/lib/core/shard/read-shard';
import { ShardValidationError } from '../../src/lib/core/shard/source';
import { DATA_DIR } from '../paths';

interface Entry {
  file: string;
  path: string;
  base: string;
  variant: string;
  tool: string;
  ts: string;
  lossless: boolean;
  bitsStored: number;
  photometric: string;
  filePhotometric: string;
  ref: string;
  refMatchesSource: boolean;
  display: string;
  displayRef: string;
  expectError?: string;
}
interface Corrupt {
  file: string;
  path: string;
  codec: string;
  reference: string;
  referenceFailed?: boolean;
  said: string[];
}

const dir = mkdtempSync(join(tmpdir(), 'loupe-dicom-conformance-'));
execFileSync(
  '/usr/bin/python3',
  [join(import.meta.dirname, '../fixtures/dicom/conformance.py'), join(DATA_DIR, 'vqa-rad/images'), dir],
  { stdio: 'pipe', maxBuffer: 64 << 20 },
);
const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as {
  pydicom: string;
  dcmtk: string;
  files: Entry[];
  corrupt: Corrupt[];
};
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const codecs: DicomCodecs = await loadNodeDicomCodecs();
const bytes = (p: string): Uint8Array => new Uint8Array(readFileSync(p));
const i32 = (f: string): Int32Array => {
  const b = readFileSync(join(dir, f));
  return new Int32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
};
const f64 = (f: string): Float64Array => {
  const b = readFileSync(join(dir, f));
  return new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
};

/** Largest |a − b| and how many samples differ. */
function diff(a: ArrayLike<number>, b: ArrayLike<number>): { max: number; count: number } {
  expect(a.length).toBe(b.length);
  let max = 0;
  let count = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (d) count++;
    if (d > max) max = d;
  }
  return { max, count };
}

/**
 * Largest |Loupe's 8-bit display − round(reference level × 255)| over all samples. A reference level
 * within 1e-9 of a rounding tie may round either way in different float arithmetic: there 1 is allowed.
 */
function displayDiff(rgba: Uint8ClampedArray, levels: Float64Array, samples: number): number {
  let max = 0;
  for (let i = 0; i < levels.length; i++) {
    const x = levels[i] * 255;
    const want = Math.floor(x + 0.5);
    const got = rgba[Math.floor(i / samples) * 4 + (i % samples)];
    let d = Math.abs(got - want);
    if (d === 1 && Math.abs(x - Math.floor(x) - 0.5) < 1e-9) d = 0;
    max = Math.max(max, d);
  }
  return max;
}

/**
 * Bounds for lossy syntaxes, against the reference decoder's output of the same file: another
 * implementation of the same standard may round differently (measured: 0 for all of them with Debian
 * 12's dcmtk 3.6.7 and GDCM 3.0.21).
 */
const LOSSY_STORED: Record<string, number> = {
  // JPEG baseline/extended: libjpeg-turbo vs dcmtk's IJG libjpeg (IDCT and upsampling rounding).
  '1.2.840.10008.1.2.4.50': 1,
  '1.2.840.10008.1.2.4.51': 1,
  // JPEG-LS near-lossless decoding is fully specified: both CharLS builds must agree exactly.
  '1.2.840.10008.1.2.4.81': 0,
  // JPEG 2000 irreversible: OpenJPEG (cornerstonejs build) vs GDCM's OpenJPEG (inverse ICT/DWT rounding).
  '1.2.840.10008.1.2.4.91': 1,
};

const decodable = manifest.files.filter((e) => !e.expectError);

describe(`DICOM conformance set (${manifest.files.length} files; references: ${manifest.dcmtk}, pydicom ${manifest.pydicom}, GDCM)`, () => {
  it('covers every transfer syntax Loupe decodes, and the variants the README lists', () => {
    const seen = new Set(decodable.map((e) => e.ts));
    const claimed = TRANSFER_SYNTAXES.filter((t) => t.encoding !== 'unsupported').map((t) => t.uid);
    expect(claimed.length).toBe(13);
    for (const uid of claimed) expect(seen.has(uid), uid).toBe(true);
    const variants = new Set(decodable.map((e) => e.variant));
    for (const v of [
      'dcmconv +tb',
      'dcmconv +td',
      'dcmconv +ti',
      'dcmcrle',
      'dcmcjpeg +e1',
      'dcmcjpeg +eb',
      'dcmcjpeg +ee',
      'dcmcjpls +in (interleave none)',
      'dcmcjpls +il (interleave line)',
      'dcmcjpls +is (interleave sample)',
      'dcmcjpls +en +md 2 (near-lossless)',
      'GDCM JPEG 2000 lossless',
      'GDCM JPEG 2000 lossy (rate 8)',
      'img2dcm',
      ...[1, 2, 3, 4, 5, 6, 7].map((sv) => `dcmcjpeg +el +sv ${sv}`),
    ])
      expect(variants.has(v), v).toBe(true);
    const bases = new Set(decodable.map((e) => e.base));
    for (const b of [
      'grey8',
      'grey8-OB',
      'rgb8',
      'rgb8-planar1',
      'grey12',
      'grey16',
      'signed12',
      'signed16',
      'mono1',
    ])
      expect(bases.has(b), b).toBe(true);
    // Every base in every lossless syntax.
    for (const b of [...bases].filter((x) => x !== 'grey8-OB'))
      for (const uid of claimed.filter((u) => !(u in LOSSY_STORED)))
        expect(
          decodable.some((e) => e.base === b && e.ts === uid),
          `${b} in ${uid}`,
        ).toBe(true);
  });

  it.each(decodable.map((e) => [e.file, e.variant, e] as const))('%s (%s)', (_, __, e) => {
    const file = bytes(e.path);
    const parsed = parseDicom(file);
    expect(parsed.info.transferSyntax.uid).toBe(e.ts);
    const frame = decodeFrame(parsed, 0, codecs);
    const stored = diff(frame.values, i32(e.ref));
    const img = decodeDicomImage(file, { codecs });
    const shown = displayDiff(img.rgba, f64(e.display), frame.samples);
    if (e.lossless) {
      // The reference decoder gave the lossless source back, and so must Loupe.
      expect(e.refMatchesSource, 'reference decoder returns the source').toBe(true);
      expect(stored, 'stored values').toEqual({ max: 0, count: 0 });
      expect(shown, `displayed 8-bit image vs ${e.displayRef}`).toBe(0);
    } else {
      const bound = LOSSY_STORED[e.ts];
      expect(stored.max, 'stored values').toBeLessThanOrEqual(bound);
      expect(shown, `displayed 8-bit image vs ${e.displayRef}`).toBeLessThanOrEqual(bound);
    }
  });

  it.each(manifest.files.filter((e) => e.expectError).map((e) => [e.file, e] as const))(
    '%s is refused with a clear error',
    (_, e) => {
      const err = (() => {
        try {
          decodeDicomImage(bytes(e.path), { codecs });
        } catch (x) {
          return x;
        }
      })();
      expect(err).toBeInstanceOf(DicomError);
      expect((err as DicomError).code).toBe('unsupported-syntax');
      expect((err as Error).message).toContain(e.expectError!);
      expect((err as Error).message).toContain(e.ts);
    },
  );
});

describe('corrupt pixel data: the codec says what is wrong', () => {
  const fail = (path: string): DicomError => {
    try {
      decodeDicomImage(bytes(path), { codecs });
    } catch (x) {
      expect(x).toBeInstanceOf(DicomError);
      return x as DicomError;
    }
    throw new Error(`${path} decoded`);
  };

  it.each(manifest.corrupt.map((c) => [c.file, c.codec, c] as const))('%s (%s)', (_, __, c) => {
    const err = fail(c.path);
    expect(err.code).toBe('decode-failed');
    expect(err.message).toMatch(new RegExp(`pixel data of frame 0 could not be decoded: ${c.codec}: `));
    // Never a bare number (a wasm exception pointer), and the same words as the reference decoder.
    expect(err.message).not.toMatch(/decoded: \S+: \d+$/);
    for (const s of c.said) expect(err.message, `${c.reference} said "${s}"`).toContain(s);
    if (c.codec === 'CharLS') {
      expect(c.referenceFailed, 'dcmdjpls refuses it too').toBe(true);
      expect(err.message).toMatch(/CharLS: .*JPEG-LS/);
    }
    // The same message on a second call (a pointer would change).
    expect(fail(c.path).message).toBe(err.message);
  });

  it('a codec stays usable after many failures (no leaked wasm stack)', () => {
    // Before decodes ran under ccall, CharLS corrupted its memory after ~520 failed calls.
    const bad = bytes(manifest.corrupt.find((c) => c.codec === 'CharLS')!.path);
    const parsedBad = parseDicom(bad);
    for (let i = 0; i < 700; i++) expect(() => decodeFrame(parsedBad, 0, codecs)).toThrow(DicomError);
    const good = decodable.find((e) => e.variant === 'dcmcjpls +il (interleave line)' && e.base === 'rgb8')!;
    expect(diff(decodeFrame(parseDicom(bytes(good.path)), 0, codecs).values, i32(good.ref)).max).toBe(0);
  });

  it('a shard import names the file, the line that uses it, the frame and what the codec said', async () => {
    const c = manifest.corrupt.find((x) => x.codec === 'libjpeg-turbo')!;
    const enc = (t: string) => new TextEncoder().encode(t);
    const files = new Map<string, Uint8Array>([
      [
        'shard.json',
        enc(
          JSON.stringify({
            name: 'corrupt-dicom',
            version: '1',
            format: 'beir+images',
            license: 'CC0-1.0',
            tasks: [{ id: 'i2t', query_modality: 'image', corpus_modality: 'text' }],
          }),
        ),
      ],
      ['corpus.jsonl', enc(JSON.stringify({ _id: 'd1', title: '', text: 'a radiograph' }) + '\n')],
      [
        'queries.jsonl',
        enc(JSON.stringify({ _id: 'q1', text: '', image: 'images/q1.dcm', task: 'i2t' }) + '\n'),
      ],
      ['qrels/test.tsv', enc('query-id\tcorpus-id\tscore\nq1\td1\t1\n')],
      ['images/q1.dcm', bytes(c.path)],
    ]);
    const err = await readShard(new MemorySource(files), { loadDicomCodecs: async () => codecs }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ShardValidationError);
    const [issue] = (err as ShardValidationError).issues;
    expect(issue).toMatchObject({ file: 'images/q1.dcm', code: 'bad-dicom' });
    expect(issue.message).toContain('referenced on queries.jsonl:1');
    expect(issue.message).toContain(
      `pixel data of frame 0 could not be decoded: libjpeg-turbo: ${c.said[0]}`,
    );
  });
});

describe('codec output', () => {
  it("OpenJPEG's [INFO] lines stay out of a Node process's stdout (as in npm run bench's validation)", () => {
    // A child process: emscripten binds console.log when a module loads, so a spy here would miss it.
    const e = decodable.find((x) => x.ts === '1.2.840.10008.1.2.4.90' && x.photometric === 'RGB')!;
    const root = join(import.meta.dirname, '../..');
    const code = [
      `import { readFileSync } from 'node:fs';`,
      `import { loadNodeDicomCodecs } from ${JSON.stringify(join(root, 'scripts/lib/node-dicom-codecs.ts'))};`,
      `import { decodeDicomImage } from ${JSON.stringify(join(root, 'src/lib/core/media/dicom/image.ts'))};`,
      `const codecs = await loadNodeDicomCodecs();`,
      `const img = decodeDicomImage(new Uint8Array(readFileSync(${JSON.stringify(e.path)})), { codecs });`,
      `console.log('decoded', img.width, img.height);`,
    ].join('\n');
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(out).toMatch(/^decoded \d+ \d+\n$/);
  });
});
