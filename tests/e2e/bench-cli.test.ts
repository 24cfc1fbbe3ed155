// The headless runner's (scripts/bench.ts) exit codes and messages: 2 and the validation issues (file,
// line, code, no stack trace) for an invalid shard; an empty run with TREC_EVAL set skips the cross-check
// with a note; a failing TREC_EVAL on a non-empty run is an internal failure (1) naming it; --semantics
// 9.0.8 reaches the metrics panel, the exports and the trec_eval call. The shards and the trec_eval
// stand-ins are written to a temp folder at test time; the browser cases share one build.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const tmp = mkdtempSync(join(tmpdir(), 'loupe-bench-cli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A one-task "BEIR + images" shard whose only query is `query`. */
function writeShard(name: string, query: string, corpus?: string): string {
  const dir = join(tmp, 'shards', name);
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

  it('empty run with TREC_EVAL set: the cross-check is skipped with a note, exit 0; a failing TREC_EVAL otherwise is exit 1', () => {
    const empty = writeShard('empty-run', 'zebra');
    const out = join(tmp, 'out');
    const r = bench(['--shard', empty, '--out', out], { TREC_EVAL: FAKE_TREC_EVAL });
    expect(r.stderr).not.toMatch(STACK);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('trec_eval skipped: the run is empty (no query retrieved anything)');
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
