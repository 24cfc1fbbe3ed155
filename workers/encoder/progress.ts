// Progress as the encoder worker reports it: throttled, with the edges of each phase sent at once,
// and transformers.js's download callbacks turned into Loupe's Progress ticks.
import type { ProgressInfo } from '@huggingface/transformers';
import type { Progress } from '../../src/lib/core/types';
import { throttle } from '../../src/lib/core/throttle';
import type { OnProgress } from './types';

/**
 * Throttled progress that forwards at once the first tick of each kind, the first and last tick of
 * each downloaded file and every status message, so short phases (a small local file) are still seen.
 */
export function phased(fn?: OnProgress) {
  const throttled = throttle(fn);
  let last: Progress | null = null;
  const report = (p: Progress) => {
    if (!fn) return;
    const prev = last;
    last = p;
    const edge =
      !prev ||
      p.kind !== prev.kind ||
      p.kind === 'status' ||
      (p.kind === 'download' && prev.kind === 'download' && (p.file !== prev.file || p.loaded === p.total));
    if (edge) {
      throttled.flush();
      fn(p);
    } else throttled(p);
  };
  report.flush = () => throttled.flush();
  return report;
}

/** The line while a model's files are turned into a tokenizer and ONNX sessions. */
export const PREPARING = 'Preparing the model (tokenizer, ONNX session)';

/** transformers.js's progress_callback, reporting downloads and file starts through `report`. */
export function progressCallback(report: OnProgress) {
  return (info: ProgressInfo) => {
    if (info.status === 'progress')
      report({ kind: 'download', file: info.file, loaded: info.loaded, total: info.total || undefined });
    else if (info.status === 'initiate') report({ kind: 'status', message: `Loading ${info.file}` });
    // A file is in: what follows until the next file or the first run is building (the tokenizer,
    // the ONNX session), not downloading.
    else if (info.status === 'done') report({ kind: 'status', message: PREPARING });
  };
}
