// The encoder worker's shapes: how a model is loaded (LoadOptions), what the page learns of it
// (LoadedEncoder), the loaded model files themselves (Encoder) and the per-stage timing of a query.
import type { PreTrainedModel, PreTrainedTokenizer, Processor } from '@huggingface/transformers';
import type { Dtype, ModelSpec } from '../../src/lib/core/retrieval/models';
import type { Progress } from '../../src/lib/core/types';
import type { Device, OrtBuild } from '../../src/lib/platform/gpu/backend';
import type {
  DeviceVerdict,
  ParityVerdict,
  QueryDeviceChoice,
} from '../../src/lib/platform/gpu/device-policy';

/** A progress callback (proxied from the page). */
export type OnProgress = (p: Progress) => void;

/** How to load a model. */
export interface LoadOptions {
  /** `auto`: WebGPU on a hardware adapter, else WASM (a software adapter such as SwiftShader is not used). */
  device?: 'auto' | Device;
  /** `auto` (default): fp16 on WebGPU with shader-f16, fp32 on WebGPU without, the model's first dtype on WASM. */
  dtype?: Dtype | 'auto';
  /** Fetch from the Hugging Face hub when a file is not under /models/ (default: true unless the spec is local). */
  allowRemoteModels?: boolean;
  /**
   * Look under the app's models/ folder first (default: true). The page sets false for a hub model
   * that models/index.json does not list, so its load asks the hub directly (no 404 per file).
   */
  allowLocalModels?: boolean;
  /**
   * URL path of the app's models/ folder (`/course/loupe/models/`); default: `models/` beside the
   * folder this worker's script is in (dev: /workers/, build: assets/), i.e. the app's root.
   */
  modelsBase?: string;
  /**
   * Benchmarks: single text queries stay on the model's device (a WebGPU row times WebGPU) instead of
   * the device measured faster at load.
   */
  pinQueries?: boolean;
  /**
   * Device verdicts (parity, query device) measured by an earlier worker of this page, by key: the
   * client passes them back so that a restarted worker does not check again.
   */
  knownVerdicts?: [string, DeviceVerdict][];
  /**
   * With `dtype` auto: the dtypes the open shard has embeddings of this model for (precomputed sets,
   * packed indexes); the worker takes one of them over the device's default (platform/gpu/backend.ts).
   */
  setDtypes?: Dtype[];
  /** Why `dtype` was set, for the device reason (the worker's own fp16 → fp32 retry after a failed check). */
  dtypeWhy?: string;
  /** Test only (URL `simulate-parity-mismatch=1`): perturb the WebGPU vectors of the parity check. */
  simulateParityMismatch?: boolean;
  /** Test only: make the WebGPU attempt fail as a real session error would. */
  simulateWebGpuFailure?: boolean;
  /**
   * Set by the client when it restarted the worker after a WebGPU failure: the reason, reported as
   * `fallbackReason` (with `device: 'wasm'`).
   */
  priorFailure?: string;
}

/** The loaded model and where it runs. */
export interface LoadedEncoder {
  modelId: string;
  device: Device;
  dtype: Dtype;
  /** ORT WASM threads. */
  threads: number;
  dim: number;
  /** The onnxruntime-web WASM build this worker runs (backend.ts, ortBuildFor). */
  ortBuild: OrtBuild;
  /** Why the model is not on WebGPU although WebGPU was tried (it runs on WASM instead). */
  fallbackReason?: string;
  /**
   * Why the model runs on `device`, in one line, for a run's description: e.g. "software WebGPU
   * adapter (SwiftShader) — using WASM", "WASM as requested", "WebGPU on …", or the fallback reason.
   */
  deviceReason: string;
  /** What the backend probe chose and why (deviceReason plus threads and dtype). */
  reason: string;
  /** WebGPU loads: the parity check against WASM (`cached`: this worker's earlier verdict). */
  parity?: ParityVerdict & { cached: boolean; key: string };
  /** WebGPU loads whose parity held: where single text queries run, from timings at load. */
  queryDevice?: QueryDeviceChoice;
  /** Load + warm-up time in ms (0 when it came from this worker's cache). */
  loadMs: number;
  cached: boolean;
  /** Model files this worker downloaded and has not written to the browser cache yet (model-cache.ts). */
  cacheQueued: number;
}

/** Loaded model files. Pooling, prefixes and lengths come from the spec of each call, not from here. */
export interface Encoder {
  /** The spec it was loaded for (its files: hub id, revision, kind). */
  spec: ModelSpec;
  device: Device;
  dtype: Dtype;
  threads: number;
  /** Vector size; for a cross-encoder, logits per pair. */
  dim: number;
  tokenizer: PreTrainedTokenizer;
  /** The text tower; for a cross-encoder, its sequence-classification model. */
  textModel: PreTrainedModel;
  /** Cross-encoders: the token an untruncated pair ends with (its template's last special token). */
  pairEnd?: bigint;
  visionModel?: PreTrainedModel;
  processor?: Processor;
  /** Set when the GPU device behind this encoder was lost: it must not be used again. */
  lost?: string;
}

/** Time an ad-hoc query spent in each stage here, in ms (what the page's performance marks cannot see). */
export interface QueryStages {
  /** Text to token ids. */
  tokenizeMs: number;
  /** Image decode, resize and normalisation (the image processor). */
  preprocessMs: number;
  /** The text and vision models' forward passes. */
  encodeMs: number;
}
