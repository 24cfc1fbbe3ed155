// Packs a Range-readable IVF-int8 index beside each precomputed set of a shard (see
// src/lib/core/retrieval/ivf.ts for the layout and README "Vector index" for its use):
//
//   npm run pack-ivf -- --shard DIR [--model ID] [--nlist N] [--sample 20000] [--iterations 8] [--seed 1]
//
// DIR/embeddings/index.json lists the sets (written by npm run pack-shard, or by make-scale-shard
// --vectors random); every set (or those of --model) gets embeddings/<model>/<dtype>/ivf-<part>.bin.
// `npm run pack-shard -- … --index ivf` runs the same after embedding.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { PRECOMPUTED_INDEX, parsePrecomputedIndex } from '../src/lib/core/shard/precomputed';
import { packIvf } from './lib/pack-ivf';

const { values: args } = parseArgs({
  options: {
    shard: { type: 'string' },
    model: { type: 'string', multiple: true },
    nlist: { type: 'string' },
    sample: { type: 'string' },
    iterations: { type: 'string' },
    seed: { type: 'string' },
  },
});

function fail(msg: string): never {
  console.error(`pack-ivf: ${msg}`);
  process.exit(1);
}

function whole(name: string, v: string | undefined, min: number): number | undefined {
  if (v === undefined) return undefined;
  const x = Number(v);
  if (!Number.isInteger(x) || x < min)
    fail(`--${name} must be a whole number ≥ ${min}, got ${JSON.stringify(v)}`);
  return x;
}

if (!args.shard)
  fail('usage: --shard DIR [--model ID…] [--nlist N] [--sample N] [--iterations N] [--seed N]');
const dir = resolve(args.shard);
const indexFile = join(dir, PRECOMPUTED_INDEX);
let sets;
try {
  sets = parsePrecomputedIndex(JSON.parse(readFileSync(indexFile, 'utf8')), indexFile);
} catch (e) {
  fail(`${(e as Error).message} (pack the embeddings first: npm run pack-shard)`);
}
const opts = {
  nlist: whole('nlist', args.nlist, 1),
  sample: whole('sample', args.sample, 1),
  iterations: whole('iterations', args.iterations, 1),
  seed: whole('seed', args.seed, 0),
};
let packed = 0;
for (const s of sets) {
  if (args.model?.length && !args.model.includes(s.model_id)) continue;
  for (const part of ['text', 'image'] as const) {
    let r;
    try {
      r = packIvf(join(dir, 'embeddings', s.path), part, opts);
    } catch (e) {
      fail((e as Error).message);
    }
    if (!r) continue;
    packed++;
    console.log(
      `${s.model_id} ${s.dtype} ${part}: ${r.n} × ${r.dim} in ${r.nlist} lists → ${r.file} ` +
        `(${(r.bytes / 2 ** 20).toFixed(1)} MiB, header ${(r.headerBytes / 1024).toFixed(0)} KiB, ${r.seconds.toFixed(1)} s)`,
    );
  }
}
if (!packed) fail(`no set${args.model?.length ? ` of ${args.model.join(', ')}` : ''} in ${indexFile}`);
