// Parses a DICOM file's data set (dicom-parser) into the image attributes Loupe needs. Patient- and
// institution-identifying attributes are read only when the caller opts in, and are kept apart.

import { dicomParser, type DataSet } from './dicom-parser';
import { inflateSync } from 'fflate';
import { describeSyntax, transferSyntax, type TransferSyntax } from './syntaxes';

/** A DICOM file that cannot be read or decoded; `message` says what and, when it matters, which syntax. */
export class DicomError extends Error {
  /** Stable code: `not-dicom`, `malformed`, `no-pixels`, `unsupported-syntax`, `unsupported-image`, `decode-failed`. */
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'DicomError';
    this.code = code;
  }
}

/** One VOI window from the file (Window Center / Width, with its explanation when given). */
export interface DicomWindow {
  center: number;
  width: number;
  explanation?: string;
}

/** The image attributes of a DICOM file: safe to show and store (no patient or institution data). */
export interface DicomInfo {
  transferSyntax: TransferSyntax;
  modality?: string;
  bodyPart?: string;
  rows: number;
  columns: number;
  frames: number;
  samplesPerPixel: number;
  bitsAllocated: number;
  bitsStored: number;
  highBit: number;
  /** 0 unsigned, 1 two's complement. */
  pixelRepresentation: number;
  photometric: string;
  /** 0 interleaved (RGBRGB…), 1 planar (RRR…GGG…BBB…). */
  planarConfiguration: number;
  rescaleSlope: number;
  rescaleIntercept: number;
  rescaleType?: string;
  /** Windows stored in the file, in file order (empty when none). */
  windows: DicomWindow[];
  /** VOI LUT Function: LINEAR (default), LINEAR_EXACT or SIGMOID. */
  voiLutFunction: string;
}

/**
 * Identifying attributes, returned only with `includeIdentifying: true`: keyword → value for each one
 * present. Never stored by Loupe.
 */
export type DicomIdentifying = Record<string, string>;

/** Keywords and tags of the identifying attributes that are withheld unless the caller opts in. */
export const IDENTIFYING_TAGS: Readonly<Record<string, string>> = {
  PatientName: 'x00100010',
  PatientID: 'x00100020',
  IssuerOfPatientID: 'x00100021',
  PatientBirthDate: 'x00100030',
  PatientBirthTime: 'x00100032',
  PatientSex: 'x00100040',
  OtherPatientIDs: 'x00101000',
  OtherPatientNames: 'x00101001',
  PatientBirthName: 'x00101005',
  PatientAge: 'x00101010',
  PatientAddress: 'x00101040',
  PatientMotherBirthName: 'x00101060',
  PatientTelephoneNumbers: 'x00102154',
  EthnicGroup: 'x00102160',
  PatientComments: 'x00104000',
  AccessionNumber: 'x00080050',
  InstitutionName: 'x00080080',
  InstitutionAddress: 'x00080081',
  InstitutionalDepartmentName: 'x00081040',
  ReferringPhysicianName: 'x00080090',
  PerformingPhysicianName: 'x00081050',
  OperatorsName: 'x00081070',
  StationName: 'x00081010',
  StudyDate: 'x00080020',
  StudyTime: 'x00080030',
  StudyID: 'x00200010',
  StudyInstanceUID: 'x0020000d',
  SeriesInstanceUID: 'x0020000e',
  SOPInstanceUID: 'x00080018',
  DeviceSerialNumber: 'x00181000',
};

/** A parsed file: its safe attributes, the dicom-parser data set, and identifying data if asked for. */
export interface ParsedDicom {
  info: DicomInfo;
  dataSet: DataSet;
  identifying?: DicomIdentifying;
}

/** True when the bytes carry the Part 10 preamble: "DICM" at offset 128. */
export function hasDicomPreamble(b: Uint8Array): boolean {
  return b.length >= 132 && b[128] === 0x44 && b[129] === 0x49 && b[130] === 0x43 && b[131] === 0x4d;
}

/** fflate stands in for dicom-parser's inflater (it would look for pako or Node's zlib). */
function inflater(arr: Uint8Array, position: number): Uint8Array {
  const inflated = inflateSync(arr.subarray(position));
  const full = new Uint8Array(position + inflated.length);
  full.set(arr.subarray(0, position));
  full.set(inflated, position);
  return full;
}

/** dicom-parser throws strings, Errors or `{ exception }` objects: make one readable message. */
export function parserMessage(e: unknown): string {
  let x: unknown = e;
  if (x && typeof x === 'object' && 'exception' in x) x = (x as { exception: unknown }).exception;
  const m = x instanceof Error ? x.message : String(x);
  const text = m.replace(/^dicomParser[.:][A-Za-z]+: /, '');
  return /buffer overrun/.test(text)
    ? `${text}: an element runs past the end of the file (truncated?)`
    : text;
}

/**
 * Parses a DICOM file (Part 10 with the "DICM" preamble, or a bare Implicit VR Little Endian data set)
 * and reads its image attributes. Throws {@link DicomError} for a file that is not DICOM, is malformed
 * or has no image.
 */
export function parseDicom(bytes: Uint8Array, opts: { includeIdentifying?: boolean } = {}): ParsedDicom {
  const part10 = hasDicomPreamble(bytes);
  let ds: DataSet;
  try {
    ds = dicomParser.parseDicom(
      bytes,
      part10 ? { inflater } : { TransferSyntaxUID: '1.2.840.10008.1.2', inflater },
    );
  } catch (e) {
    if (!part10)
      throw new DicomError('not-dicom', `not a DICOM file (no "DICM" at byte 128): ${parserMessage(e)}`);
    throw new DicomError('malformed', `malformed DICOM file: ${parserMessage(e)}`);
  }
  const tsUid = (ds.string('x00020010') ?? '1.2.840.10008.1.2').replace(/\0/g, '').trim();
  const syntax = transferSyntax(tsUid);
  const pixel = ds.elements.x7fe00010;
  if (!pixel) {
    const other = ds.elements.x7fe00008 ? 'float' : ds.elements.x7fe00009 ? 'double float' : null;
    throw other
      ? new DicomError('unsupported-image', `${other} pixel data is not supported (only integer Pixel Data)`)
      : new DicomError('no-pixels', 'the file has no Pixel Data (7FE0,0010): it is not an image');
  }
  const need = (tag: string, name: string): number => {
    const v = ds.uint16(tag);
    if (v === undefined || !(v > 0 || name === 'Pixel Representation'))
      throw new DicomError('malformed', `required attribute ${name} (${tagText(tag)}) is missing or zero`);
    return v;
  };
  const rows = need('x00280010', 'Rows');
  const columns = need('x00280011', 'Columns');
  const bitsAllocated = need('x00280100', 'Bits Allocated');
  const samplesPerPixel = ds.uint16('x00280002') ?? 1;
  const bitsStored = ds.uint16('x00280101') ?? bitsAllocated;
  const framesText = ds.string('x00280008');
  const frames = framesText === undefined ? 1 : Number.parseInt(framesText, 10);
  if (!Number.isInteger(frames) || frames < 1)
    throw new DicomError(
      'malformed',
      `Number of Frames (0028,0008) is ${JSON.stringify(framesText)}, not a positive integer`,
    );
  const photometric = (
    ds.string('x00280004') ?? (samplesPerPixel === 3 ? 'RGB' : 'MONOCHROME2')
  ).toUpperCase();
  const windows: DicomWindow[] = [];
  const nc = ds.numStringValues('x00281050') ?? 0;
  const nw = ds.numStringValues('x00281051') ?? 0;
  for (let i = 0; i < Math.min(nc, nw); i++) {
    const center = ds.floatString('x00281050', i);
    const width = ds.floatString('x00281051', i);
    if (center === undefined || width === undefined || !Number.isFinite(center) || !(width > 0)) continue;
    const explanation = ds.string('x00281055', i);
    windows.push(explanation ? { center, width, explanation } : { center, width });
  }
  const info: DicomInfo = {
    transferSyntax: syntax,
    modality: ds.string('x00080060') || undefined,
    bodyPart: ds.string('x00180015') || undefined,
    rows,
    columns,
    frames,
    samplesPerPixel,
    bitsAllocated,
    bitsStored,
    highBit: ds.uint16('x00280102') ?? bitsStored - 1,
    pixelRepresentation: ds.uint16('x00280103') ?? 0,
    photometric,
    planarConfiguration: ds.uint16('x00280006') ?? 0,
    rescaleSlope: finiteOr(ds.floatString('x00281053'), 1),
    rescaleIntercept: finiteOr(ds.floatString('x00281052'), 0),
    rescaleType: ds.string('x00281054') || undefined,
    windows,
    voiLutFunction: (ds.string('x00281056') ?? 'LINEAR').toUpperCase(),
  };
  const out: ParsedDicom = { info, dataSet: ds };
  if (opts.includeIdentifying) {
    const id: DicomIdentifying = {};
    for (const [k, tag] of Object.entries(IDENTIFYING_TAGS)) {
      const v = ds.elements[tag] ? ds.string(tag) : undefined;
      if (v) id[k] = v;
    }
    out.identifying = id;
  }
  return out;
}

/** Throws the clear per-file error for a transfer syntax Loupe does not decode. */
export function assertSupported(info: DicomInfo): void {
  const t = info.transferSyntax;
  if (t.encoding === 'unsupported')
    throw new DicomError(
      'unsupported-syntax',
      `transfer syntax ${describeSyntax(t)} is not supported: no decoder`,
    );
  if (t.encoding === 'jpeg-baseline' && info.bitsStored > 8)
    throw new DicomError(
      'unsupported-syntax',
      `transfer syntax ${describeSyntax(t)} with ${info.bitsStored}-bit samples is not supported: only 8-bit JPEG Baseline/Extended is decoded`,
    );
  if (info.photometric === 'PALETTE COLOR')
    throw new DicomError('unsupported-image', 'Photometric Interpretation PALETTE COLOR is not supported');
  if (![1, 3].includes(info.samplesPerPixel))
    throw new DicomError(
      'unsupported-image',
      `Samples per Pixel ${info.samplesPerPixel} is not supported (1 or 3)`,
    );
  if (![1, 8, 16, 32].includes(info.bitsAllocated))
    throw new DicomError(
      'unsupported-image',
      `Bits Allocated ${info.bitsAllocated} is not supported (1, 8, 16 or 32)`,
    );
  if (info.bitsStored > info.bitsAllocated || info.bitsStored < 1)
    throw new DicomError(
      'malformed',
      `Bits Stored ${info.bitsStored} does not fit Bits Allocated ${info.bitsAllocated}`,
    );
}

function finiteOr(v: number | undefined, fallback: number): number {
  return v !== undefined && Number.isFinite(v) ? v : fallback;
}

/** "x00280010" → "(0028,0010)". */
function tagText(tag: string): string {
  return `(${tag.slice(1, 5).toUpperCase()},${tag.slice(5).toUpperCase()})`;
}
