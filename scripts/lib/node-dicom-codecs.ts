// The DICOM wasm codecs in Node (scripts and unit tests): the same cornerstonejs builds the site
// bundles, whose emscripten loaders find their .wasm beside them when run under Node.
import { createRequire } from 'node:module';
import {
  codecsFromModules,
  newCodecOutputs,
  type CodecModules,
} from '../../src/lib/platform/media/dicom-codecs';
import type { DicomCodecs } from '../../src/lib/core/media/dicom/image';

const require = createRequire(import.meta.url);
let cached: Promise<DicomCodecs> | null = null;

/** Loads libjpeg-turbo, CharLS and OpenJPEG once per process. */
export function loadNodeDicomCodecs(): Promise<DicomCodecs> {
  cached ??= (async () => {
    // Their printed lines (OpenJPEG's [INFO] …) go into error messages, never to stdout.
    const out = newCodecOutputs();
    type Factory = (arg: { print: (t: unknown) => void; printErr: (t: unknown) => void }) => Promise<unknown>;
    const load = (m: string, o: { print: (t: unknown) => void }) =>
      (require(m) as Factory)({ print: o.print, printErr: o.print });
    const [libjpegTurbo, charls, openjpeg] = await Promise.all([
      load('@cornerstonejs/codec-libjpeg-turbo-8bit/decodewasmjs', out.libjpegTurbo),
      load('@cornerstonejs/codec-charls/decodewasmjs', out.charls),
      load('@cornerstonejs/codec-openjpeg/decodewasmjs', out.openjpeg),
    ]);
    return codecsFromModules({ libjpegTurbo, charls, openjpeg } as CodecModules, out);
  })();
  return cached;
}
