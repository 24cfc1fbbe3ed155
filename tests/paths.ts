import { resolve } from 'node:path';

/** Folder of the shared benchmark shards (never copied into the repo). Override with LOUPE_DATA_DIR. */
export const DATA_DIR = resolve(
  process.env.LOUPE_DATA_DIR ?? resolve(import.meta.dirname, '../../shared/data'),
);
/** Folder of the trec_eval golden vectors. Override with LOUPE_GOLDEN_DIR. */
export const GOLDEN_DIR = resolve(
  process.env.LOUPE_GOLDEN_DIR ?? resolve(import.meta.dirname, '../../shared/golden/metrics'),
);
/** Folder of the extra trec_eval golden vectors (bpref, infAP, ...). Override with LOUPE_GOLDEN_EXTRA_DIR. */
export const GOLDEN_EXTRA_DIR = resolve(
  process.env.LOUPE_GOLDEN_EXTRA_DIR ?? resolve(GOLDEN_DIR, '../metrics-extra'),
);
/** Folder of R's golden values for comparing many runs (ANOVA, Tukey HSD, ptukey). Override with LOUPE_GOLDEN_STATS_MULTI_DIR. */
export const GOLDEN_STATS_MULTI_DIR = resolve(
  process.env.LOUPE_GOLDEN_STATS_MULTI_DIR ?? resolve(GOLDEN_DIR, '../stats-multi'),
);
