// npm run make-scale-shard: the synthetic shard it writes is a valid shard for the project's own
// reader (every id, task, judgement and image checked), its precomputed vectors pass the same checks a
// real set does, its qrels are graded with several relevant documents for some queries, and a seed
// gives the same files again. --tasks N deals the queries to N tasks over the same corpus.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readShard } from '../../src/lib/core/shard/read-shard';
import { readPrecomputed, setBits } from '../../src/lib/core/shard/precomputed';
import { FsSource } from '../../scripts/lib/fs-source';
import { loadNodeDicomCodecs } from '../../scripts/lib/node-dicom-codecs';
import { DATA_DIR } from '../paths';

const ROOT = resolve(__dirname, '../..');
const tmp = mkdtempSync(join(tmpdir(), 'loupe-scale-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function make(out: string, ...extra: string[]) {
  execFileSync(
    process.execPath,
    [
      join(ROOT, 'node_modules/tsx/dist/cli.mjs'),
      'scripts/make-scale-shard.ts',
      '--docs',
      '600',
      '--queries',
      '80',
      '--out',
      out,
      ...extra,
    ],
    { cwd: ROOT, env: { ...process.env, LOUPE_DATA_DIR: DATA_DIR }, stdio: 'pipe' },
  );
}

describe('make-scale-shard', () => {
  it('writes a shard the reader accepts, with graded qrels, images and a precomputed set', async () => {
    const out = join(tmp, 'a');
    make(out, '--images', '--vectors', 'random', '--seed', '7');
    const shard = await readShard(new FsSource(out), { loadDicomCodecs: loadNodeDicomCodecs });
    expect(shard.docs).toHaveLength(600);
    expect(shard.queries).toHaveLength(80);
    expect(shard.manifest.tasks.map((t) => t.id)).toEqual(['scale-qa']);
    expect(shard.images.length).toBeGreaterThan(0);
    // Every query has its target at grade 2; some have grade-1 documents too.
    const perQuery = new Map<string, number[]>();
    for (const line of readFileSync(join(out, 'qrels/test.tsv'), 'utf8').trim().split('\n').slice(1)) {
      const [q, , score] = line.split('\t');
      perQuery.set(q, [...(perQuery.get(q) ?? []), Number(score)]);
    }
    expect(perQuery.size).toBe(80);
    for (const grades of perQuery.values()) expect(grades.filter((g) => g === 2)).toHaveLength(1);
    expect([...perQuery.values()].some((g) => g.includes(1))).toBe(true);
    // Documents look like the seeds: several sentences, not one.
    const meanLength = shard.docs.reduce((n, d) => n + d.text.length, 0) / shard.docs.length;
    expect(meanLength).toBeGreaterThan(200);
    const pre = await readPrecomputed(new FsSource(out), shard.docs);
    expect(pre.problems).toEqual([]);
    expect(pre.sets).toHaveLength(1);
    expect(pre.sets[0].sidecar).toMatchObject({
      model_id: 'loupe-test/minilm-l6-random',
      dim: 384,
      part: 'text',
    });
    expect((await setBits(pre.sets[0])).length).toBe(600 * 384);
  });

  it('gives the same files for the same seed, other files for another', () => {
    make(join(tmp, 'b1'), '--seed', '3');
    make(join(tmp, 'b2'), '--seed', '3');
    make(join(tmp, 'c'), '--seed', '4');
    const read = (d: string) =>
      readFileSync(join(tmp, d, 'corpus.jsonl'), 'utf8') +
      readFileSync(join(tmp, d, 'qrels/test.tsv'), 'utf8');
    expect(read('b1')).toBe(read('b2'));
    expect(read('c')).not.toBe(read('b1'));
  });

  it('--tasks 3 deals the queries to three tasks over the same corpus; --tasks 1 is the default', async () => {
    make(join(tmp, 'd1'), '--seed', '5');
    make(join(tmp, 'd1x'), '--seed', '5', '--tasks', '1');
    make(join(tmp, 'd3'), '--seed', '5', '--tasks', '3');
    const file = (d: string, f: string) => readFileSync(join(tmp, d, f), 'utf8');
    // --tasks 1 writes what no --tasks writes, byte for byte.
    for (const f of ['shard.json', 'corpus.jsonl', 'queries.jsonl', 'qrels/test.tsv', 'NOTICE.md'])
      expect(file('d1x', f)).toBe(file('d1', f));
    // Three tasks: the same documents, queries and judgements; only each query's task differs.
    expect(file('d3', 'corpus.jsonl')).toBe(file('d1', 'corpus.jsonl'));
    expect(file('d3', 'qrels/test.tsv')).toBe(file('d1', 'qrels/test.tsv'));
    const one = await readShard(new FsSource(join(tmp, 'd1')));
    const three = await readShard(new FsSource(join(tmp, 'd3')));
    expect(one.warnings).toEqual([]);
    // The reader checks every query's task is declared, each task has queries and the stated
    // per-task counts match the files (a mismatch or an empty task would be a warning).
    expect(three.warnings).toEqual([]);
    const ids = ['scale-qa-1', 'scale-qa-2', 'scale-qa-3'];
    expect(three.manifest.tasks.map((t) => t.id)).toEqual(ids);
    expect(new Set(three.manifest.tasks.map((t) => t.description)).size).toBe(3);
    expect(three.queries.map(({ task, ...q }) => q)).toEqual(one.queries.map(({ task, ...q }) => q));
    expect(three.queries.map((q) => q.task)).toEqual(three.queries.map((_, i) => ids[i % 3]));
    // Each task's qrels are its queries' rows: together exactly the one-task shard's, none shared.
    const counts = JSON.parse(file('d3', 'shard.json')).counts.tasks as Record<
      string,
      { queries: number; qrels: number }
    >;
    let rows = 0;
    for (const id of ids) {
      const qs = three.queries.filter((q) => q.task === id);
      const judged = qs.reduce((n, q) => n + three.qrels.get(q.id)!.size, 0);
      expect(counts[id]).toEqual({ queries: qs.length, qrels: judged });
      expect(qs.length).toBeGreaterThanOrEqual(26);
      rows += judged;
    }
    expect(rows).toBe(file('d1', 'qrels/test.tsv').trim().split('\n').length - 1);
    expect(three.qrels).toEqual(one.qrels);
  });

  it('refuses bad options with exit code 2 and a message', () => {
    let err: { status?: number; stderr?: Buffer } = {};
    try {
      make(join(tmp, 'bad'), '--vectors', 'maybe');
    } catch (e) {
      err = e as typeof err;
    }
    expect(err.status).toBe(2);
    expect(String(err.stderr)).toContain('--vectors must be "none" or "random"');
    try {
      make(join(tmp, 'bad-tasks'), '--tasks', '81');
    } catch (e) {
      err = e as typeof err;
    }
    expect(err.status).toBe(2);
    expect(String(err.stderr)).toContain(
      '--tasks must be a whole number from 1 to 100, and at most --queries',
    );
  });
});
