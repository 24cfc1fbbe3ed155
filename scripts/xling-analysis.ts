// BM25 on a cross-lingual shard under three ways a query can be analysed, per task and language:
// with the documents' analyzer alone; with the documents' analyzer after the query language's stop
// words are dropped (what Loupe does: terms match only when both sides went through the same
// analysis, and foreign function words match only noise); with the query's own language's analyzer.
// Also prints the cross-lingual gap (English minus each language) with paired bootstrap CIs where
// the task's queries are parallel across languages. Runs the core code in Node (no browser).
//
//   npx tsx scripts/xling-analysis.ts [--shard ../shared/data/xling-med] [--depth 100]
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { analyzerIdForLanguage } from '../src/lib/core/retrieval/analyzers';
import { bm25Doc, buildBm25Index, searchBm25 } from '../src/lib/core/retrieval/bm25';
import { crossLingualGap, languageName } from '../src/lib/core/eval/languages';
import { measureLabel } from '../src/lib/core/eval/metrics';
import { buildTaskReport } from '../src/lib/core/eval/report';
import { readShard } from '../src/lib/core/shard/read-shard';
import type { Run } from '../src/lib/core/types';
import { FsSource } from './lib/fs-source';

const { values: args } = parseArgs({
  options: {
    shard: { type: 'string', default: '../shared/data/xling-med' },
    depth: { type: 'string', default: '100' },
  },
});
const depth = Number(args.depth);
const shard = await readShard(new FsSource(resolve(args.shard!)));
const language = shard.manifest.language;
const index = await buildBm25Index(shard.docs.map(bm25Doc), {}, { language });
const measures = ['ndcg_cut_10', 'recall_100', 'recip_rank'];
console.log(
  `${shard.manifest.name}: ${shard.docs.length} documents, analyzers ${index.analyzers.join(', ')}`,
);

for (const task of shard.manifest.tasks) {
  const queries = shard.queries.filter((q) => q.task === task.id);
  // document: the documents' analyzer alone; stops: after the query language's stop words (Loupe);
  // query: the query language's analyzer.
  const reports = (['document', 'stops', 'query'] as const).map((mode) => {
    const run: Run = new Map();
    for (const q of queries) {
      const lang = typeof q.meta.language === 'string' ? q.meta.language : undefined;
      const queryAnalyzer = mode === 'query' ? analyzerIdForLanguage(lang) : undefined;
      run.set(
        q.id,
        searchBm25(index, q.text, depth, {
          exclude: q.excludeIds,
          queryAnalyzer,
          queryLanguage: mode === 'stops' ? lang : undefined,
        }),
      );
    }
    return buildTaskReport({ taskId: task.id, queries, docs: shard.docs, qrels: shard.qrels, run, measures });
  });
  const facet = (i: number) => reports[i].facets.find((f) => f.key === 'language')?.values ?? [];
  console.log(`\n${task.id} (${queries.length} queries), nDCG@10 by how the query is analysed`);
  console.log(
    'language'.padEnd(22) +
      'queries'.padStart(8) +
      "documents'".padStart(12) +
      '+ stops'.padStart(10) +
      'its own'.padStart(10) +
      '  own analyzer',
  );
  for (const v of facet(0)) {
    const at = (i: number) =>
      facet(i)
        .find((w) => w.value === v.value)!
        .means.ndcg_cut_10.toFixed(4);
    console.log(
      `${languageName(v.value)} (${v.value})`.padEnd(22) +
        String(v.queries).padStart(8) +
        at(0).padStart(12) +
        at(1).padStart(10) +
        at(2).padStart(10) +
        `  ${analyzerIdForLanguage(v.value)}`,
    );
  }
  const gaps = crossLingualGap({
    queries: queries.map((q) => ({ id: q.id, language: String(q.meta.language ?? '') })),
    perQuery: reports[1].perQuery,
    qrels: shard.qrels,
    measures,
  });
  console.log(`cross-lingual gap, English minus language (Loupe's analysis; 95% paired bootstrap CI):`);
  for (const g of gaps) {
    const cells = measures.map((m) => {
      const x = g.byMeasure[m];
      const ci = x.ci ? ` [${x.ci.lower.toFixed(3)}, ${x.ci.upper.toFixed(3)}]` : '';
      return `${measureLabel(m)} ${x.gap.toFixed(3)}${ci}`;
    });
    console.log(`  ${g.language} (${g.paired ? `${g.paired} pairs` : 'unpaired'}): ${cells.join(' · ')}`);
  }
}
