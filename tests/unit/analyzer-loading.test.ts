// Snowball's stemmers load only for the analyzers that need them, and a stemmer used before it is
// loaded fails with a message saying what to do (rather than stemming nothing).
import { expect, it } from 'vitest';
import { getAnalyzer, loadAnalyzers } from '../../src/lib/core/retrieval/analyzers';
import { bm25Doc, buildBm25Index, searchBm25 } from '../../src/lib/core/retrieval/bm25';

it('loads Snowball with the first analyzer that needs it; building an index loads it', async () => {
  // English and German do not use Snowball: analyzing with them needs nothing loaded.
  await loadAnalyzers(['english', 'german', 'cjk']);
  expect(getAnalyzer('german').analyze('Häuser')).toEqual(['haus']);
  expect(() => getAnalyzer('french').analyze('les maisons')).toThrow(
    'the french analyzer is not loaded: await loadAnalyzers() first',
  );
  const index = await buildBm25Index(
    [bm25Doc({ id: 'd1', title: '', text: 'les maisons blanches', meta: {} })],
    {},
    {
      language: 'fr',
    },
  );
  expect(index.analyzers).toEqual(['french']);
  expect(getAnalyzer('french').analyze('les maisons')).toEqual(['maison']);
  expect(searchBm25(index, 'maison', 10).map((h) => h.docId)).toEqual(['d1']);
});
