// Page-side helpers for tests/e2e/dicom.test.ts (called through page.evaluate): the Search view's
// DICOM entry points (openDicomFile, displayableImage) and the encoder on .dcm vs .jpg query files.
// Served by the Vite dev server at /tests/browser/dicom-harness.html; never part of the app build.
import { displayableImage, openDicomFile } from '../../src/lib/platform/media/dicom-image';
import { embedImages, loadEncoder, registryModel } from '../../src/lib/clients/encoder-client';
import type { WindowChoice } from '../../src/lib/core/media/dicom/image';

/** A served file as a File with its name (what a drop or a file picker gives the page). */
async function file(url: string): Promise<File> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`HTTP ${res.status} for ${url}`);
  const blob = await res.blob();
  return new File([blob], url.slice(url.lastIndexOf('/') + 1), { type: blob.type });
}

/** RGBA of an image blob as the browser decodes it. */
async function pixels(blob: Blob): Promise<{ width: number; height: number; rgba: Uint8ClampedArray }> {
  const bmp = await createImageBitmap(blob);
  const c = new OffscreenCanvas(bmp.width, bmp.height);
  const ctx = c.getContext('2d')!;
  ctx.drawImage(bmp, 0, 0);
  return { width: bmp.width, height: bmp.height, rgba: ctx.getImageData(0, 0, bmp.width, bmp.height).data };
}

const dicomHarness = {
  /** Opens a .dcm as the Search view would; checks its PNG against the decoded pixels. */
  async open(url: string, window?: WindowChoice, frame?: number) {
    try {
      const { image, png } = await openDicomFile(await file(url), { window, frame });
      const shown = await pixels(png);
      let diff = 0;
      for (let i = 0; i < image.rgba.length; i++)
        diff = Math.max(diff, Math.abs(shown.rgba[i] - image.rgba[i]));
      return {
        ok: true as const,
        info: image.info,
        window: image.window,
        identifying: image.identifying,
        png: { type: png.type, width: shown.width, height: shown.height, maxDiff: diff },
      };
    } catch (e) {
      return { ok: false as const, name: (e as Error).name, message: (e as Error).message };
    }
  },

  /** displayableImage: a PNG for DICOM, the blob itself otherwise. */
  async displayable(url: string) {
    const f = await file(url);
    const out = await displayableImage(f);
    return { same: out === f, type: out.type };
  },

  /** Loads the generated CLIP (fp32, wasm) and embeds the given files (as Files) with it. */
  async embed(urls: string[]): Promise<number[][]> {
    const spec = registryModel('loupe-test/clip-tiny-random')!;
    await loadEncoder(spec, { device: 'wasm', dtype: 'fp32', allowRemoteModels: false });
    const files = await Promise.all(urls.map(file));
    const m = await embedImages(files, { batchSize: 4 });
    const dim = m.length / urls.length;
    return urls.map((_, i) => Array.from(m.subarray(i * dim, (i + 1) * dim)));
  },
};

/** The harness's API, for harnessCaller. */
export type DicomHarness = typeof dicomHarness;

declare global {
  interface Window {
    dicomHarness: DicomHarness;
  }
}

window.dicomHarness = dicomHarness;
document.getElementById('status')!.textContent = 'ready';
