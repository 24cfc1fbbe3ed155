// Shard folders made by e2e tests: a smaller copy of a shard for tests whose point is not its size
// (some of its queries with their qrels, every document those judge and then the first others up to a
// count; the manifest without its stated counts), so that tests embedding a whole corpus in Chromium
// stay in seconds; and packing one as a user does (`npm run pack-shard`).
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

type Json = Record<string, unknown>;

export interface SubsetOptions {
  /** Documents to keep (the judged ones first, then the first others in shard order). */
  docs: number;
  /** Keep the first this many queries (default: every query with a judged document kept). */
  queries?: number;
  /** The manifest's name (default: the source's). */
  name?: string;
}

/** Writes the subset of the shard folder `src` into `out`; returns its document and query counts. */
export function writeSubset(
  src: string,
  out: string,
  opts: SubsetOptions,
): { docs: number; queries: number } {
  const lines = (p: string) => readFileSync(p, 'utf8').split('\n').filter(Boolean);
  const [head, ...qrels] = lines(join(src, 'qrels/test.tsv'));
  let queries = lines(join(src, 'queries.jsonl'));
  if (opts.queries !== undefined) queries = queries.slice(0, opts.queries);
  const qids = new Set(queries.map((l) => (JSON.parse(l) as Json)._id as string));
  const judged = new Set(qrels.flatMap((l) => (qids.has(l.split('\t')[0]) ? [l.split('\t')[1]] : [])));
  let others = opts.docs - judged.size;
  const corpus = lines(join(src, 'corpus.jsonl'));
  const kept = corpus.filter((l) => judged.has((JSON.parse(l) as Json)._id as string) || others-- > 0);
  const docIds = new Set(kept.map((l) => (JSON.parse(l) as Json)._id as string));
  const keptQrels = qrels.filter((l) => qids.has(l.split('\t')[0]) && docIds.has(l.split('\t')[1]));
  const withQrels = new Set(keptQrels.map((l) => l.split('\t')[0]));
  queries = queries.filter((l) => withQrels.has((JSON.parse(l) as Json)._id as string));
  const manifest = JSON.parse(readFileSync(join(src, 'shard.json'), 'utf8')) as Json;
  delete manifest.counts;
  mkdirSync(join(out, 'qrels'), { recursive: true });
  writeFileSync(
    join(out, 'shard.json'),
    JSON.stringify({ ...manifest, name: opts.name ?? manifest.name }, null, 2),
  );
  writeFileSync(join(out, 'corpus.jsonl'), kept.join('\n') + '\n');
  writeFileSync(join(out, 'queries.jsonl'), queries.join('\n') + '\n');
  writeFileSync(join(out, 'qrels/test.tsv'), [head, ...keptQrels].join('\n') + '\n');
  return { docs: kept.length, queries: queries.length };
}

/**
 * A synthetic scale shard (scripts/make-scale-shard.ts: `docs` documents, `queries` queries dealt to
 * `tasks` tasks (default 1), random unit vectors as `model`'s precomputed corpus embeddings where a
 * model is named) in a new folder `<prefix>…` under the gitignored generated-shards/, which the site
 * serves at /generated-shards/<folder>/, or in `out` where given. Returns the folder.
 */
export function makeScaleShard(
  prefix: string,
  opts: { docs: number; queries: number; model?: string; tasks?: number; out?: string },
): string {
  mkdirSync(join(ROOT, 'generated-shards'), { recursive: true });
  const dir = opts.out ?? mkdtempSync(join(ROOT, 'generated-shards', prefix));
  execFileSync(
    'npx',
    [
      'tsx',
      'scripts/make-scale-shard.ts',
      ...['--docs', String(opts.docs), '--queries', String(opts.queries)],
      ...(opts.model ? ['--vectors', 'random', '--model', opts.model] : []),
      ...(opts.tasks ? ['--tasks', String(opts.tasks)] : []),
      ...['--out', dir],
    ],
    { cwd: ROOT, stdio: 'pipe' },
  );
  return dir;
}

/** Runs `npm run pack-shard -- --shard dir …args` (embeddings, and what args ask for beside them). */
export function packShard(dir: string, args: string[]): void {
  execFileSync('npx', ['tsx', 'scripts/pack-shard.ts', '--shard', dir, ...args], {
    cwd: ROOT,
    stdio: 'pipe',
  });
}

/**
 * Writes a subset of the image shard folder `src` (vqa-rad) into `out` (emptied first): its first
 * `docs` documents and those named in `include`, with their images; the queries that judge one of them
 * and whose image (if any) is kept, with their qrels; the manifest without its stated counts, named
 * `name`. Returns the number of queries kept per task.
 */
export function writeImageSubset(
  src: string,
  out: string,
  opts: { docs: number; include?: string[]; name: string },
): Record<string, number> {
  const lines = (p: string) => readFileSync(p, 'utf8').split('\n').filter(Boolean);
  const id = (l: string) => (JSON.parse(l) as Json)._id as string;
  const include = new Set(opts.include ?? []);
  const kept = lines(join(src, 'corpus.jsonl')).filter((l, i) => i < opts.docs || include.has(id(l)));
  const docIds = new Set(kept.map(id));
  const images = new Set(kept.flatMap((l) => ((JSON.parse(l) as Json).image as string | undefined) ?? []));
  const [head, ...qrels] = lines(join(src, 'qrels/test.tsv'));
  const judging = new Set(qrels.filter((l) => docIds.has(l.split('\t')[1])).map((l) => l.split('\t')[0]));
  const queries = lines(join(src, 'queries.jsonl')).filter((l) => {
    const q = JSON.parse(l) as Json;
    return judging.has(q._id as string) && (q.image === undefined || images.has(q.image as string));
  });
  const qids = new Set(queries.map(id));
  const keptQrels = qrels.filter((l) => qids.has(l.split('\t')[0]) && docIds.has(l.split('\t')[1]));
  const manifest = JSON.parse(readFileSync(join(src, 'shard.json'), 'utf8')) as Json;
  delete manifest.counts;
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, 'qrels'), { recursive: true });
  mkdirSync(join(out, 'images'));
  for (const im of images) copyFileSync(join(src, im), join(out, im));
  copyFileSync(join(src, 'NOTICE.md'), join(out, 'NOTICE.md'));
  writeFileSync(join(out, 'shard.json'), JSON.stringify({ ...manifest, name: opts.name }, null, 2));
  writeFileSync(join(out, 'corpus.jsonl'), kept.join('\n') + '\n');
  writeFileSync(join(out, 'queries.jsonl'), queries.join('\n') + '\n');
  writeFileSync(join(out, 'qrels/test.tsv'), [head, ...keptQrels].join('\n') + '\n');
  const perTask: Record<string, number> = {};
  for (const l of queries) {
    const t = (JSON.parse(l) as Json).task as string;
    perTask[t] = (perTask[t] ?? 0) + 1;
  }
  return perTask;
}
