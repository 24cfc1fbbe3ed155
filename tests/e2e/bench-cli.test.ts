// The headless runner's (scripts/bench.ts) exit codes and messages: 2 and the validation issues (file,
// line, code, no stack trace) for an invalid shard; an empty run with TREC_EVAL set skips the cross-check
// with a note; a failing TREC_EVAL on a non-empty run is an internal failure (1) naming it; --semantics
// 9.0.8 reaches the metrics panel, the exports and the trec_eval call; the build it makes holds no data
// (a shard beside the one given never reaches dist/). The shards and the trec_eval stand-ins are written
// to a temp folder at test time; the browser cases share one build.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const tmp = mkdtempSync(join(tmpdir(), 'loupe-bench-cli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A one-task "BEIR + images" shard whose only query is `query`, in `tmp/<parent>/<name>`. */
function writeShard(name: string, query: string, corpus?: string, parent = 'shards'): string {
  const dir = join(tmp, parent, name);
  mkdirSync(join(dir, 'qrels'), { recursive: true });
  const manifest = {
    name,
    version: '1.0.0',
    format: 'beir+images',
    license: 'CC0-1.0',
    relevance: { '1': 'relevant' },
    tasks: [{ id: 't', query_modality: 'text', corpus_modality: 'text' }],
  };
  writeFileSync(join(dir, 'shard.json'), JSON.stringify(manifest));
  const docs = [
    { _id: 'd1', title: 'alpha', text: 'alpha beta' },
    { _id: 'd2', title: 'gamma', text: 'gamma delta' },
  ];
  writeFileSync(join(dir, 'corpus.jsonl'), corpus ?? docs.map((d) => JSON.stringify(d) + '\n').join(''));
  writeFileSync(join(dir, 'queries.jsonl'), JSON.stringify({ _id: 'q1', text: query, task: 't' }) + '\n');
  writeFileSync(join(dir, 'qrels/test.tsv'), 'query-id\tcorpus-id\tscore\nq1\td1\t1\n');
  return dir;
}

/** A stand-in for trec_eval: like the real one, it refuses an empty results file (exit 1). */
function writeScript(name: string, body: string): string {
  const path = join(tmp, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}
const FAKE_TREC_EVAL = writeScript(
  'trec_eval',
  'for f; do :; done\n' +
    'if [ ! -s "$f" ]; then echo "trec_eval.get_results: No results in $f" >&2; exit 1; fi\n' +
    'printf "ndcg_cut_10\\tall\\t1.0000\\nrecall_100\\tall\\t1.0000\\nrecip_rank\\tall\\t1.0000\\n"',
);
const BROKEN_TREC_EVAL = writeScript('broken_trec_eval', 'echo "trec_eval: cannot open qrels" >&2; exit 3');

function bench(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(join(ROOT, 'node_modules/.bin/tsx'), ['scripts/bench.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 300_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const STACK = /^\s+at .+:\d+:\d+\)?$/m;

/** Every file under `dir`, as paths relative to it with '/'. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((e) => {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    return e.isDirectory() ? filesUnder(dir, rel) : [rel];
  });
}

describe('headless runner exit codes', () => {
  it('invalid shard: exit 2, every issue as file:line [code] message, no stack trace', () => {
    const good = JSON.stringify({ _id: 'd1', title: 'alpha', text: 'alpha' });
    const bad = writeShard(
      'bad',
      'alpha',
      `${good}\n{"_id": "d2", "title": "x" "text": "y"}\n${good}\n`, // line 2 malformed, line 3 a duplicate
    );
    const r = bench(['--shard', bad, '--out', join(tmp, 'out')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`the shard ${bad} is invalid (2 issues)`);
    expect(r.stderr).toMatch(/corpus\.jsonl:2 \[malformed-json\] malformed JSON/);
    expect(r.stderr).toMatch(
      /corpus\.jsonl:3 \[duplicate-id\] duplicate document _id "d1" \(first on line 1\)/,
    );
    expect(r.stderr).not.toMatch(STACK);
    expect(r.stdout).not.toContain('building the site');
  });

  it('a shard beside the one given never reaches dist/: the build copies no data, the shard is served from where it is', () => {
    // Two shards side by side in the researcher's folder; the runner is given one of them.
    // Two documents with the same text: a tie at ranks 1-2, which the runner counts and exports.
    const twins = ['d1', 'd2'].map((id) => JSON.stringify({ _id: id, title: 'alpha', text: 'alpha beta' }));
    const given = writeShard('given', 'alpha', twins.join('\n') + '\n', 'side-by-side');
    const marker = 'heldoutprivatetext';
    const privateDocs = [{ _id: 'p1', title: marker, text: `${marker} alpha` }];
    writeShard(
      'private-neighbour',
      'alpha',
      privateDocs.map((d) => JSON.stringify(d) + '\n').join(''),
      'side-by-side',
    );
    const out = join(tmp, 'out-side');
    const r = bench(['--shard', given, '--out', out]);
    expect(r.stderr).not.toMatch(STACK);
    expect(r.status).toBe(0);
    // The run used the given shard, served from its folder; the tie is in trec_eval's order (id descending).
    expect(readFileSync(join(out, 'given-t-bm25/run.trec'), 'utf8')).toMatch(
      /^q1 Q0 d2 1 (\S+) \S+\nq1 Q0 d1 2 \1 /,
    );
    expect(r.stdout).toContain('ties: 1 of 1 queries have a tie in the top 10 (ordered by document id');
    const metrics = JSON.parse(readFileSync(join(out, 'given-t-bm25/metrics.json'), 'utf8'));
    expect(metrics.ties).toEqual({ topK: 10, queries: ['q1'] });
    const dist = join(ROOT, 'dist');
    // Nothing of the neighbour: no path that names it, no file that holds its text (models/ holds only
    // the generated models' weights and vocabularies, large and never built from shards).
    const files = filesUnder(dist);
    expect(files.length).toBeGreaterThan(0);
    expect(files.filter((f) => f.includes('private-neighbour'))).toEqual([]);
    const leaked = files
      .filter((f) => !f.startsWith('models/'))
      .filter((f) => readFileSync(join(dist, f)).includes(marker));
    expect(leaked).toEqual([]);
    // Nor of the given shard: dist/shards/ holds an empty list and no shard folder.
    expect(JSON.parse(readFileSync(join(dist, 'shards/index.json'), 'utf8'))).toEqual({ shards: [] });
    expect(readdirSync(join(dist, 'shards'))).toEqual(['index.json']);
    expect(existsSync(join(dist, 'shards/given'))).toBe(false);
  });

  it('empty run with TREC_EVAL set: the cross-check is skipped with a note, exit 0; a failing TREC_EVAL otherwise is exit 1', () => {
    const empty = writeShard('empty-run', 'zebra');
    const out = join(tmp, 'out');
    const r = bench(['--shard', empty, '--out', out], { TREC_EVAL: FAKE_TREC_EVAL });
    expect(r.stderr).not.toMatch(STACK);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('trec_eval skipped: the run is empty (no query retrieved anything)');
    expect(r.stdout).toContain('ties: 0 of 1 queries have a tie in the top 10\n');
    // The runner wrote its results before the (skipped) check.
    expect(readFileSync(join(out, 'empty-run-t-bm25/run.trec'), 'utf8').trim()).toBe('');

    // The same build: a non-empty run, and TREC_EVAL fails: an internal failure that names the binary.
    const hit = writeShard('hit', 'alpha');
    const r2 = bench(['--shard', hit, '--out', out, '--no-build'], { TREC_EVAL: BROKEN_TREC_EVAL });
    expect(r2.status).toBe(1);
    expect(r2.stderr).toContain(`TREC_EVAL=${BROKEN_TREC_EVAL} failed`);
    expect(r2.stderr).toContain('(exit 3): trec_eval: cannot open qrels');
    expect(readFileSync(join(out, 'hit-t-bm25/run.trec'), 'utf8')).toMatch(/^q1 Q0 d1 1 /);
  });

  it('--semantics 9.0.8: chosen in the metrics panel, named in metrics.json, trec_eval run without -c; the note gives the decimals trec_eval printed', () => {
    // A trec_eval built to print 17 significant digits; it records its arguments. Shares the build above.
    const argsFile = join(tmp, 'wide-args.txt');
    const wide = writeScript(
      'trec_eval_17',
      `echo "$@" > ${argsFile}\n` +
        'printf "ndcg_cut_10\\tall\\t0.99999999999999989\\nrecall_100\\tall\\t1\\nrecip_rank\\tall\\t1\\n"',
    );
    const hit = writeShard('hit9', 'alpha');
    const out = join(tmp, 'out9');
    const r = bench(['--shard', hit, '--out', out, '--no-build', '--semantics', '9.0.8'], {
      TREC_EVAL: wide,
    });
    expect(r.stderr).not.toMatch(STACK);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('trec_eval 9.0.8 / pytrec_eval');
    expect(r.stdout).toContain('trec_eval: max |diff| 1.1e-16 (compared at the 17 decimals it printed)');
    expect(readFileSync(argsFile, 'utf8')).not.toMatch(/(^| )-c( |$)/);
    const metrics = JSON.parse(readFileSync(join(out, 'hit9-t-bm25/metrics.json'), 'utf8'));
    expect(metrics.semantics).toBe('9.0.8');
    expect(readFileSync(join(out, 'hit9-t-bm25/metrics.csv'), 'utf8').trimEnd().split('\n')[1]).toMatch(
      /,trec_eval 9\.0\.8 \/ pytrec_eval$/,
    );
    const bad = bench(['--shard', hit, '--out', out, '--no-build', '--semantics', '8']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("unknown semantics '8'");
  });
});
