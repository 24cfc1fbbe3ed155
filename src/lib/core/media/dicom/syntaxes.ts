// DICOM transfer syntaxes Loupe knows by name, and how each one's pixel data is decoded.

/** How a transfer syntax stores its pixels. `native` is uncompressed; the rest are encapsulated. */
export type PixelEncoding =
  'native' | 'rle' | 'jpeg-baseline' | 'jpeg-lossless' | 'jpeg-ls' | 'jpeg2000' | 'unsupported';

/** One transfer syntax: its name, whether Loupe decodes it, and how. */
export interface TransferSyntax {
  uid: string;
  name: string;
  encoding: PixelEncoding;
  /** true when the compression loses information (comparisons with a reference are then bounded). */
  lossy: boolean;
  /** Data set byte order (only Explicit VR Big Endian is big). */
  bigEndian?: boolean;
  /** Data set compressed with deflate after the file meta group. */
  deflated?: boolean;
}

const T = (
  uid: string,
  name: string,
  encoding: PixelEncoding,
  lossy = false,
  extra: Partial<TransferSyntax> = {},
): TransferSyntax => ({ uid, name, encoding, lossy, ...extra });

/** Every transfer syntax Loupe names; `encoding: 'unsupported'` ones fail with a clear per-file error. */
export const TRANSFER_SYNTAXES: readonly TransferSyntax[] = [
  T('1.2.840.10008.1.2', 'Implicit VR Little Endian', 'native'),
  T('1.2.840.10008.1.2.1', 'Explicit VR Little Endian', 'native'),
  T('1.2.840.10008.1.2.1.99', 'Deflated Explicit VR Little Endian', 'native', false, { deflated: true }),
  T('1.2.840.10008.1.2.2', 'Explicit VR Big Endian', 'native', false, { bigEndian: true }),
  T('1.2.840.10008.1.2.5', 'RLE Lossless', 'rle'),
  T('1.2.840.10008.1.2.4.50', 'JPEG Baseline (Process 1)', 'jpeg-baseline', true),
  // 8-bit only: 12-bit JPEG Extended needs a 12-bit libjpeg, which no maintained npm codec ships.
  T('1.2.840.10008.1.2.4.51', 'JPEG Extended (Process 2 & 4)', 'jpeg-baseline', true),
  T('1.2.840.10008.1.2.4.57', 'JPEG Lossless, Non-Hierarchical (Process 14)', 'jpeg-lossless'),
  T(
    '1.2.840.10008.1.2.4.70',
    'JPEG Lossless, Non-Hierarchical, First-Order Prediction (Process 14 SV1)',
    'jpeg-lossless',
  ),
  T('1.2.840.10008.1.2.4.80', 'JPEG-LS Lossless', 'jpeg-ls'),
  T('1.2.840.10008.1.2.4.81', 'JPEG-LS Lossy (Near-Lossless)', 'jpeg-ls', true),
  T('1.2.840.10008.1.2.4.90', 'JPEG 2000 (Lossless Only)', 'jpeg2000'),
  T('1.2.840.10008.1.2.4.91', 'JPEG 2000', 'jpeg2000', true),
  T('1.2.840.10008.1.2.4.92', 'JPEG 2000 Part 2 Multi-component (Lossless Only)', 'unsupported'),
  T('1.2.840.10008.1.2.4.93', 'JPEG 2000 Part 2 Multi-component', 'unsupported', true),
  T('1.2.840.10008.1.2.4.94', 'JPIP Referenced', 'unsupported'),
  T('1.2.840.10008.1.2.4.95', 'JPIP Referenced Deflate', 'unsupported'),
  T('1.2.840.10008.1.2.4.100', 'MPEG2 Main Profile / Main Level', 'unsupported', true),
  T('1.2.840.10008.1.2.4.101', 'MPEG2 Main Profile / High Level', 'unsupported', true),
  T('1.2.840.10008.1.2.4.102', 'MPEG-4 AVC/H.264 High Profile / Level 4.1', 'unsupported', true),
  T(
    '1.2.840.10008.1.2.4.103',
    'MPEG-4 AVC/H.264 BD-compatible High Profile / Level 4.1',
    'unsupported',
    true,
  ),
  T('1.2.840.10008.1.2.4.104', 'MPEG-4 AVC/H.264 High Profile / Level 4.2 For 2D Video', 'unsupported', true),
  T('1.2.840.10008.1.2.4.105', 'MPEG-4 AVC/H.264 High Profile / Level 4.2 For 3D Video', 'unsupported', true),
  T('1.2.840.10008.1.2.4.106', 'MPEG-4 AVC/H.264 Stereo High Profile / Level 4.2', 'unsupported', true),
  T('1.2.840.10008.1.2.4.107', 'HEVC/H.265 Main Profile / Level 5.1', 'unsupported', true),
  T('1.2.840.10008.1.2.4.108', 'HEVC/H.265 Main 10 Profile / Level 5.1', 'unsupported', true),
  T('1.2.840.10008.1.2.4.201', 'High-Throughput JPEG 2000 (Lossless Only)', 'unsupported'),
  T('1.2.840.10008.1.2.4.202', 'High-Throughput JPEG 2000 with RPCL Options (Lossless Only)', 'unsupported'),
  T('1.2.840.10008.1.2.4.203', 'High-Throughput JPEG 2000', 'unsupported', true),
];

const BY_UID = new Map(TRANSFER_SYNTAXES.map((t) => [t.uid, t]));

/** The transfer syntax of a UID; an unknown UID is reported as unsupported under its own UID. */
export function transferSyntax(uid: string): TransferSyntax {
  return BY_UID.get(uid) ?? T(uid, 'unknown transfer syntax', 'unsupported');
}

/** "1.2.840.10008.1.2.4.50 (JPEG Baseline (Process 1))": how messages name a transfer syntax. */
export function describeSyntax(t: TransferSyntax): string {
  return `${t.uid} (${t.name})`;
}
