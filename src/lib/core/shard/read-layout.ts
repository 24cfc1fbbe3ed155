// Which shard format a folder holds, from the files present: "BEIR + images" (shard.json), plain BEIR
// (corpus.jsonl + queries.jsonl + qrels/<split>.tsv) or R2MED (corpus.jsonl + query.jsonl +
// qrels.jsonl); and the manifest the two upstream formats lack.

import { ShardValidationError } from './source';
import type { ShardFormat, ShardManifest, TaskInfo } from '../types';
import type { ShardReadContext } from './read-context';

/** The splits a plain BEIR folder is searched for, in this order. */
const BEIR_SPLITS = ['test', 'dev', 'train'];

/** A shard's format and the paths of its three record files. */
export interface Layout {
  format: ShardFormat;
  corpus: string;
  queries: string;
  qrels: string;
  split?: string;
}

/** Detects the format (probing with `open()` when the source cannot list); stops with issues when none fits. */
export async function detectLayout(ctx: ShardReadContext): Promise<Layout> {
  if (await ctx.exists('shard.json')) {
    const layout: Layout = {
      format: 'beir+images',
      corpus: 'corpus.jsonl',
      queries: 'queries.jsonl',
      qrels: 'qrels/test.tsv',
    };
    let missing = false;
    for (const f of [layout.corpus, layout.queries, layout.qrels]) {
      if (!(await ctx.exists(f))) {
        missing = true;
        ctx.issue({
          file: f,
          code: 'missing-file',
          message: `${f} is missing (shard.json is present, so this is a "BEIR + images" shard)`,
        });
      }
    }
    if (missing) throw new ShardValidationError(ctx.issues);
    return layout;
  }
  const hasCorpus = await ctx.exists('corpus.jsonl');
  if (hasCorpus && (await ctx.exists('queries.jsonl'))) {
    for (const split of BEIR_SPLITS) {
      const qrels = `qrels/${split}.tsv`;
      if (await ctx.exists(qrels))
        return { format: 'beir', corpus: 'corpus.jsonl', queries: 'queries.jsonl', qrels, split };
    }
    ctx.fatal({
      file: 'qrels/test.tsv',
      code: 'missing-file',
      message:
        'BEIR layout (corpus.jsonl + queries.jsonl) without judgements: add qrels/test.tsv (or qrels/dev.tsv, qrels/train.tsv)',
    });
  }
  if (hasCorpus && (await ctx.exists('query.jsonl'))) {
    if (await ctx.exists('qrels.jsonl'))
      return { format: 'r2med', corpus: 'corpus.jsonl', queries: 'query.jsonl', qrels: 'qrels.jsonl' };
    ctx.fatal({
      file: 'qrels.jsonl',
      code: 'missing-file',
      message: 'R2MED layout (corpus.jsonl + query.jsonl) without qrels.jsonl',
    });
  }
  const remote = /^https?:\/\//.test(ctx.source.label);
  ctx.fatal({
    file: 'shard.json',
    code: hasCorpus || !remote ? 'unknown-format' : 'not-found',
    message:
      !hasCorpus && remote
        ? `nothing found at ${ctx.source.label}: the server has neither shard.json nor corpus.jsonl there ` +
          '(HTTP 404). Check the address: it must be the shard folder, ending in /'
        : `${ctx.source.label} is not a shard: expected shard.json ("BEIR + images"), corpus.jsonl + queries.jsonl + ` +
          'qrels/<split>.tsv (BEIR) or corpus.jsonl + query.jsonl + qrels.jsonl (R2MED)',
  });
}

/** The manifest of an upstream (BEIR or R2MED) folder: one text-to-text task, named after the source. */
export function synthesiseManifest(label: string, layout: Layout): ShardManifest {
  const task: TaskInfo =
    layout.format === 'beir'
      ? {
          id: layout.split!,
          queryModality: 'text',
          corpusModality: 'text',
          description: `Queries judged in ${layout.qrels}`,
        }
      : {
          id: 'test',
          queryModality: 'text',
          corpusModality: 'text',
          description: 'R2MED queries judged in qrels.jsonl',
        };
  return {
    name: label,
    format: layout.format,
    description:
      layout.format === 'beir'
        ? `Plain BEIR folder (judgements from ${layout.qrels})`
        : 'R2MED-format folder',
    tasks: [task],
  };
}
