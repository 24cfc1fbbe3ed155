// The batched BM25 build (bm25-build.ts): whatever the batch size, it produces the same arrays and
// the same scores as building in one batch, and its compact postings decode to exactly the term
// frequencies of the analysed documents (counted here independently, with a Map).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyzerIdForLanguage, getAnalyzer, loadAnalyzers } from '../../src/lib/core/retrieval/analyzers';
import {
  Bm25Builder,
  buildBm25Index,
  docIdAt,
  docPosition,
  explainBm25,
  searchBm25,
  termId,
  type Bm25Doc,
  type Bm25Index,
} from '../../src/lib/core/retrieval/bm25';
import { forEachPosting, packedAt } from '../../src/lib/core/retrieval/bm25-index';
import { deserializeBm25, serializeBm25 } from '../../src/lib/core/retrieval/bm25-store';
import { DATA_DIR } from '../paths';

const readJsonl = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);

function shardDocs(name: string): Bm25Doc[] {
  return readJsonl(join(DATA_DIR, name, 'corpus.jsonl')).map((d) => {
    const meta = (d.metadata ?? {}) as Record<string, unknown>;
    const language = typeof d.language === 'string' ? d.language : meta.language;
    return {
      id: String(d._id),
      title: String(d.title ?? ''),
      text: String(d.text ?? ''),
      ...(typeof language === 'string' && language ? { language } : {}),
    };
  });
}

const shardQueries = (name: string) =>
  readJsonl(join(DATA_DIR, name, 'queries.jsonl')).map((q) => String(q.text ?? ''));

/** Every stored array of the index, as plain arrays, for deep equality. */
function arrays(index: Bm25Index) {
  return {
    docIds: [index.docIds.bytes, index.docIds.offsets],
    terms: [index.terms.bytes, index.terms.offsets],
    termDf: index.termDf,
    postingOffsets: index.postingOffsets,
    postings: index.postings,
    docLengths: index.docLengths,
    docAnalyzer: index.docAnalyzer,
    analyzers: index.analyzers,
    groupLanguages: index.groupLanguages,
    norms: index.norms,
    idRank: index.idRank,
    lengthFactors: index.lengthFactors,
    counts: [index.docCount, index.indexedDocCount, index.sumDocLength, index.termCount, index.postingCount],
    avgdl: index.avgdl,
  };
}

/** Fails unless the two indexes hold the same arrays, byte for byte. */
function expectSameArrays(a: Bm25Index, b: Bm25Index): void {
  const x = arrays(a);
  const y = arrays(b);
  const bytes = (v: unknown) =>
    ArrayBuffer.isView(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') : v;
  for (const key of Object.keys(x) as (keyof typeof x)[]) {
    const [u, v] = [x[key], y[key]];
    if (Array.isArray(u) && Array.isArray(v)) expect(u.map(bytes), key).toEqual(v.map(bytes));
    else expect(bytes(u), key).toEqual(bytes(v));
  }
}

/** term → (document position → tf), decoded from the index. */
function decoded(index: Bm25Index): Map<string, Map<number, number>> {
  const out = new Map<string, Map<number, number>>();
  for (let t = 0; t < index.termCount; t++) {
    const row = new Map<number, number>();
    forEachPosting(index, t, (d, tf) => void row.set(d, tf));
    expect(row.size).toBe(index.termDf[t]);
    out.set(packedAt(index.terms, t), row);
  }
  return out;
}

/** The same, counted straight from the analyzers' tokens. */
async function counted(docs: readonly Bm25Doc[], language?: string) {
  await loadAnalyzers(docs.map((d) => analyzerIdForLanguage(d.language || language)));
  const out = new Map<string, Map<number, number>>();
  docs.forEach((doc, d) => {
    const analyzer = getAnalyzer(analyzerIdForLanguage(doc.language || language));
    for (const tok of analyzer.analyze(`${doc.title} ${doc.text}`)) {
      let row = out.get(tok);
      if (!row) out.set(tok, (row = new Map()));
      row.set(d, (row.get(d) ?? 0) + 1);
    }
  });
  return out;
}

const SMALL: Bm25Doc[] = [
  { id: 'd1', title: 'Heart attack', text: 'heart heart pain' },
  { id: 'd2', title: 'Lung', text: 'lung cancer and heart' },
  { id: 'd3', title: '', text: 'cancer cancer cancer treatment' },
  { id: 'd4', title: '', text: '' },
  { id: 'd5', title: 'The', text: 'and of' },
  { id: 'big', title: '', text: 'beat '.repeat(300) + 'heart' },
  { id: 'de1', title: 'Knochenbrüche', text: 'Knochenbrüche heilen langsam', language: 'de' },
  { id: 'Ärzte', title: '', text: 'cancer' },
  { id: 'a', title: '', text: 'pain pain' },
];

describe('batched BM25 build', () => {
  it.each([
    ['small, mixed languages', () => SMALL, ['heart cancer', 'beat', 'Knochenbruch', 'pain', 'nothing']],
    ['medquad', () => shardDocs('medquad'), () => shardQueries('medquad').slice(0, 200)],
    ['xling-med', () => shardDocs('xling-med'), () => shardQueries('xling-med').slice(0, 200)],
  ] as const)(
    '%s: every batch size gives the same arrays and scores',
    async (_, getDocs, getQueries) => {
      const docs = getDocs();
      const queries = typeof getQueries === 'function' ? getQueries() : getQueries;
      const one = await buildBm25Index(docs, {}, { batchSize: docs.length + 1 });
      const exact = await buildBm25Index(docs, { lossyLengths: false }, { batchSize: docs.length + 1 });
      // The postings hold exactly the analysed term frequencies.
      expect(decoded(one)).toEqual(await counted(docs));
      for (const batchSize of [1, 7, 1000, docs.length]) {
        const batched = await buildBm25Index(docs, {}, { batchSize });
        expectSameArrays(batched, one);
        for (const q of queries) expect(searchBm25(batched, q, 50)).toEqual(searchBm25(one, q, 50));
      }
      const batchedExact = await buildBm25Index(docs, { lossyLengths: false }, { batchSize: 1 });
      expectSameArrays(batchedExact, exact);
      for (const q of queries) expect(searchBm25(batchedExact, q, 50)).toEqual(searchBm25(exact, q, 50));
    },
    120_000,
  );

  it('accepts uneven and empty batches through Bm25Builder', async () => {
    const builder = new Bm25Builder({}, { total: SMALL.length });
    await builder.add([]);
    await builder.add(SMALL.slice(0, 4));
    await builder.add([]);
    await builder.add(SMALL.slice(4, 5));
    await builder.add(SMALL.slice(5));
    expect(builder.docCount).toBe(SMALL.length);
    const index = builder.finish();
    expectSameArrays(index, await buildBm25Index(SMALL));
    expect(() => builder.finish()).toThrow(/already finished/);
    await expect(builder.add(SMALL)).rejects.toThrow(/already finished/);
  });

  it('looks terms and document ids up without maps, and rejects duplicate ids', async () => {
    const index = await buildBm25Index(SMALL);
    for (let d = 0; d < SMALL.length; d++) {
      expect(docIdAt(index, d)).toBe(SMALL[d].id);
      expect(docPosition(index, SMALL[d].id)).toBe(d);
    }
    expect(docPosition(index, 'd6')).toBe(-1);
    expect(docPosition(index, '')).toBe(-1);
    // Terms are stored in UTF-8 byte order.
    const terms = Array.from({ length: index.termCount }, (_, t) => packedAt(index.terms, t));
    expect(terms).toEqual([...terms].sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1)));
    for (const [t, term] of terms.entries()) expect(termId(index, term)).toBe(t);
    expect(termId(index, 'zzz')).toBe(-1);
    expect(explainBm25(index, 'beat', 'big')!.terms[0].tf).toBe(300);
    await expect(buildBm25Index([...SMALL, { id: 'd2', title: '', text: 'x' }])).rejects.toThrow(
      /duplicate document id "d2"/,
    );
  });

  it('round-trips through serialization with the arrays unchanged', async () => {
    const docs = shardDocs('xling-med');
    const index = await buildBm25Index(docs, {}, { batchSize: 333 });
    const back = deserializeBm25(structuredClone(serializeBm25(index)));
    expectSameArrays(back, index);
    // An index whose group languages now map to another analyzer is stale.
    const data = structuredClone(serializeBm25(index));
    data.meta.groupLanguages[0] = [...data.meta.groupLanguages[0], 'de'];
    expect(() => deserializeBm25(data)).toThrow(/now german analyses them/);
  });
});
