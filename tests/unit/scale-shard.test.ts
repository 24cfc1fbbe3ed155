// npm run make-scale-shard: the synthetic shard it writes is a valid shard for the project's own
// reader (every id, task, judgement and image checked), its precomputed vectors pass the same checks a
// real set does, its qrels are graded with several relevant documents for some queries, and a seed
// gives the same files again.
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

  it('refuses bad options with exit code 2 and a message', () => {
    let err: { status?: number; stderr?: Buffer } = {};
    try {
      make(join(tmp, 'bad'), '--vectors', 'maybe');
    } catch (e) {
      err = e as typeof err;
    }
    expect(err.status).toBe(2);
    expect(String(err.stderr)).toContain('--vectors must be "none" or "random"');
  });
});
