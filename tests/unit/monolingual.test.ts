// Monolingual retrieval check: shards whose queries and documents share a non-English language,
// written by scripts/make-monolingual-shards.ts into a temporary folder, read through the real shard
// reader (the language comes from shard.json), and searched with BM25 twice: with the language's
// analyzer (what Loupe does) and with the English analyzer (what it did before). The language's
// analyzer must find what the English one misses.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bm25Doc, buildBm25Index, explainBm25, searchBm25 } from '../../src/lib/core/retrieval/bm25';
import { evaluate } from '../../src/lib/core/eval/metrics';
import { readShard } from '../../src/lib/core/shard/read-shard';
import type { ParsedShard, Run } from '../../src/lib/core/types';
import { FsSource } from '../../scripts/lib/fs-source';
import { MONOLINGUAL_SPECS, writeMonolingualShards } from '../../scripts/make-monolingual-shards';

const dir = mkdtempSync(join(tmpdir(), 'loupe-mono-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const folders = writeMonolingualShards(dir);

async function ndcg10(shard: ParsedShard, language: string): Promise<number> {
  // Documents without their own language take `language` (the shard's, or English to compare).
  const index = await buildBm25Index(shard.docs.map(bm25Doc), {}, { language });
  const run: Run = new Map();
  for (const q of shard.queries) run.set(q.id, searchBm25(index, q.text, 10));
  return evaluate(shard.qrels, run, ['ndcg_cut_10'], { complete: true }).all.ndcg_cut_10;
}

describe('monolingual shards: the language analyzer against the English one', () => {
  const byFamily = new Map<string, { own: number[]; english: number[] }>();

  it.each(MONOLINGUAL_SPECS.map((s, i) => [s.language, s.family, folders[i]] as const))(
    '%s (%s)',
    async (language, family, folder) => {
      const shard = await readShard(new FsSource(folder));
      expect(shard.manifest.language).toBe(language);
      const own = await ndcg10(shard, shard.manifest.language!);
      const english = await ndcg10(shard, 'en');
      console.log(
        `${language}: nDCG@10 ${own.toFixed(3)} with its analyzer, ${english.toFixed(3)} with English`,
      );
      const f = byFamily.get(family) ?? { own: [], english: [] };
      f.own.push(own);
      f.english.push(english);
      byFamily.set(family, f);
      // Nearly every concept found at the top with the language's analyzer (a stemmer leaves the
      // odd pair apart, see the generator); a clear loss with English.
      expect(own).toBeGreaterThanOrEqual(0.8);
      expect(own - english).toBeGreaterThanOrEqual(0.3);
    },
  );

  it('improves every language family on average', () => {
    expect([...byFamily.keys()].sort()).toEqual([
      'CJK',
      'Germanic',
      'Romance',
      'Slavic',
      'Thai',
      'Turkic',
      'Uralic',
    ]);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    for (const [family, f] of byFamily) {
      console.log(`${family}: nDCG@10 ${mean(f.own).toFixed(3)} vs English ${mean(f.english).toFixed(3)}`);
      expect(mean(f.own) - mean(f.english), family).toBeGreaterThanOrEqual(0.3);
    }
  });

  it('explains a German match with the German analyzer', async () => {
    const shard = await readShard(new FsSource(folders[0]));
    const index = await buildBm25Index(shard.docs.map(bm25Doc), {}, { language: shard.manifest.language });
    expect(index.analyzers).toEqual(['german']);
    const why = explainBm25(index, 'Knochenbruch', 'd01')!;
    expect(why.analyzer).toBe('german');
    expect(why.terms.map((t) => [t.term, t.tf])).toEqual([['knochenbruch', 1]]);
    expect(why.score).toBe(searchBm25(index, 'Knochenbruch', 1)[0].score);
  });
});
