// The DICOM wasm codecs in Node (scripts and unit tests): the same cornerstonejs builds the site
// bundles, whose emscripten loaders find their .wasm beside them when run under Node.
import { createRequire } from 'node:module';
import { codecsFromModules, type CodecModules } from '../../src/lib/platform/dicom-codecs';
import type { DicomCodecs } from '../../src/lib/core/media/dicom/image';

const require = createRequire(import.meta.url);
let cached: Promise<DicomCodecs> | null = null;

/** Loads libjpeg-turbo, CharLS and OpenJPEG once per process. */
export function loadNodeDicomCodecs(): Promise<DicomCodecs> {
  cached ??= (async () => {
    const [libjpegTurbo, charls, openjpeg] = await Promise.all(
      [
        '@cornerstonejs/codec-libjpeg-turbo-8bit/decodewasmjs',
        '@cornerstonejs/codec-charls/decodewasmjs',
        '@cornerstonejs/codec-openjpeg/decodewasmjs',
      ].map((m) => (require(m) as () => Promise<unknown>)()),
    );
    return codecsFromModules({ libjpegTurbo, charls, openjpeg } as CodecModules);
  })();
  return cached;
}
