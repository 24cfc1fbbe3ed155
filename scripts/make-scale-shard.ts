// A synthetic shard of any size in the "BEIR + images" layout, for the scale ladder (10k, 100k, 1M
// documents; up to 100k queries). Generated at run time from the demo corpora's sentences (never
// committed): each document recombines sentences of its topic with sentences from anywhere, with the
// sentence-count mix of the real documents, so text length and vocabulary look like the seeds'.
//
//   npm run make-scale-shard -- --docs 10000 --queries 1000 --out generated-shards/scale-10k
//     [--images] [--vectors random] [--model loupe-test/minilm-l6-random] [--tasks 1] [--seed 1]
//     [--data DIR]
//
// Topics: documents are grouped in topics (about 100 documents each), each with a title and a pool
// of sentences taken from one source document and its neighbours. A query is a 5–10 word window of
// one sentence of its target document, phrased as a question. Qrels are graded: the target scores 2,
// and every other document of the topic that contains the same sentence scores 1 (several relevant
// documents for some queries, as in R2MED and M3Retrieve). Retrieval is non-trivial: topic documents
// share most of their sentences, and the window is a fragment, not the whole sentence.
//
// --tasks N (default 1: one task, 'scale-qa') deals the queries in turn to N tasks 'scale-qa-1' …
// 'scale-qa-N' over the same corpus (query i goes to task i mod N + 1): each query is in exactly one
// task, and a task's qrels are its queries' rows, as the "BEIR + images" format selects them. The
// documents, queries and qrels are the same as with one task; only each query's `task` differs.
//
// --images gives every document one of the vqa-rad images (copied once into images/; one organ per
// topic), so imports exercise image validation at size. --vectors random writes a precomputed set
// (embeddings/index.json, float16 text.npy, sidecar) of unit vectors clustered by topic, labelled
// with --model's spec: the corpus side of dense runs without embedding a million texts. Those vectors
// are not the model's: use them to measure index build, query latency and recall against exact
// search, never retrieval quality.
import {
  copyFileSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  writeFileSync,
} from 'node:fs';
import { once } from 'node:events';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import registryJson from '../models/registry.json';
import { Xoshiro128 } from '../src/lib/core/eval/random';
import { writeNpyF16 } from '../src/lib/core/shard/precomputed';
import { parseRegistry } from '../src/lib/core/retrieval/models';
import { sentencePool, wordsOf } from './lib/scale-text';

const { values: args } = parseArgs({
  options: {
    docs: { type: 'string', default: '10000' },
    queries: { type: 'string', default: '1000' },
    out: { type: 'string' },
    images: { type: 'boolean', default: false },
    vectors: { type: 'string', default: 'none' },
    model: { type: 'string', default: 'loupe-test/minilm-l6-random' },
    tasks: { type: 'string', default: '1' },
    seed: { type: 'string', default: '1' },
    data: {
      type: 'string',
      default: process.env.LOUPE_DATA_DIR ?? resolve(import.meta.dirname, '../../shared/data'),
    },
  },
});

function fail(message: string): never {
  console.error(`make-scale-shard: ${message}`);
  process.exit(2);
}

const N = Number(args.docs);
const Q = Number(args.queries);
if (!Number.isInteger(N) || N < 100 || N > 5_000_000)
  fail(`--docs must be a whole number from 100 to 5,000,000`);
if (!Number.isInteger(Q) || Q < 1 || Q > 1_000_000)
  fail(`--queries must be a whole number from 1 to 1,000,000`);
const TASKS = Number(args.tasks);
if (!Number.isInteger(TASKS) || TASKS < 1 || TASKS > Math.min(100, Q))
  fail(`--tasks must be a whole number from 1 to 100, and at most --queries`);
if (!args.out) fail('--out DIR is required');
if (args.vectors !== 'none' && args.vectors !== 'random') fail(`--vectors must be "none" or "random"`);
const OUT = resolve(args.out);
if (existsSync(join(OUT, 'corpus.jsonl'))) fail(`${OUT} already holds a shard; remove it first`);

const rng = new Xoshiro128(Number(args.seed));
const below = (n: number) => rng.nextInt(n);
const started = Date.now();

// --- Sentences and titles of the demo corpora -------------------------------------------------------
const pool = sentencePool(args.data);
if (pool.sentences.length < 1000) fail(`found only ${pool.sentences.length} sentences under ${args.data}`);

// --- Topics -------------------------------------------------------------------------------------------
const MAX_SENTENCES = 24;
const TOPIC_POOL = 64;
/** At most this many grade-1 documents per query (the first of its topic, in shard order). */
const MAX_GRADE_1 = 5;
const T = Math.max(20, Math.round(N / 100));
const topicTitle = Int32Array.from({ length: T }, () => below(pool.titles.length));
const topicPool = new Int32Array(T * TOPIC_POOL);
for (let t = 0; t < T; t++) {
  // A run of consecutive sentences (one source document and its neighbours) reads as one subject.
  const start = below(pool.sentences.length - TOPIC_POOL);
  for (let j = 0; j < TOPIC_POOL; j++) topicPool[t * TOPIC_POOL + j] = start + j;
}

// --- Documents: topic and sentence ids (kept for the qrels; 4 bytes × 24 per document) ------------------
const docTopic = new Int32Array(N);
const docLen = new Uint8Array(N);
const docSentences = new Int32Array(N * MAX_SENTENCES);
for (let d = 0; d < N; d++) {
  const t = d < T ? d : below(T);
  docTopic[d] = t;
  const k = Math.min(MAX_SENTENCES, pool.sentenceCounts[below(pool.sentenceCounts.length)]);
  docLen[d] = k;
  for (let j = 0; j < k; j++)
    docSentences[d * MAX_SENTENCES + j] =
      rng.nextFloat() < 0.5 ? topicPool[t * TOPIC_POOL + below(TOPIC_POOL)] : below(pool.sentences.length);
}
const byTopic: number[][] = Array.from({ length: T }, () => []);
for (let d = 0; d < N; d++) byTopic[docTopic[d]].push(d);

const width = String(N).length;
const docId = (d: number) => `sd${String(d + 1).padStart(width, '0')}`;
const FIELDS = ['cardiology', 'oncology', 'neurology', 'infectious disease', 'genetics', 'endocrinology'];

mkdirSync(join(OUT, 'qrels'), { recursive: true });
let images: string[] = [];
if (args.images) {
  const src = join(args.data, 'vqa-rad', 'images');
  images = readdirSync(src)
    .filter((f) => f.endsWith('.jpg'))
    .sort();
  mkdirSync(join(OUT, 'images'), { recursive: true });
  for (const f of images) copyFileSync(join(src, f), join(OUT, 'images', f));
}

async function writeLines(file: string, count: number, line: (i: number) => string) {
  const out = createWriteStream(file);
  let chunk = '';
  for (let i = 0; i < count; i++) {
    chunk += line(i) + '\n';
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.end(chunk);
  await once(out, 'finish');
}

let corpusBytes = 0;
await writeLines(join(OUT, 'corpus.jsonl'), N, (d) => {
  const t = docTopic[d];
  const text = Array.from(
    { length: docLen[d] },
    (_, j) => pool.sentences[docSentences[d * MAX_SENTENCES + j]],
  ).join(' ');
  const doc: Record<string, string> = {
    _id: docId(d),
    title: pool.titles[topicTitle[t]],
    text,
    field: FIELDS[t % FIELDS.length],
  };
  if (images.length) doc.image = `images/${images[t % images.length]}`;
  const line = JSON.stringify(doc);
  corpusBytes += Buffer.byteLength(line) + 1;
  return line;
});

// --- Queries and graded qrels ----------------------------------------------------------------------
const qWidth = String(Q).length;
const taskId = (q: number) => (TASKS === 1 ? 'scale-qa' : `scale-qa-${(q % TASKS) + 1}`);
const taskCounts = Array.from({ length: TASKS }, () => ({ queries: 0, qrels: 0 }));
const queryLines: string[] = [];
const qrelLines: string[] = ['query-id\tcorpus-id\tscore'];
let graded1 = 0;
let multi = 0;
for (let q = 0; q < Q; q++) {
  const d = below(N);
  const s = docSentences[d * MAX_SENTENCES + below(docLen[d])];
  const words = wordsOf(pool.sentences[s]);
  const len = Math.min(words.length, 5 + below(6));
  const from = below(Math.max(1, words.length - len + 1));
  const text = `${words
    .slice(from, from + len)
    .join(' ')
    .replace(/[.,;:!?]+$/, '')}?`;
  const id = `sq${String(q + 1).padStart(qWidth, '0')}`;
  queryLines.push(
    JSON.stringify({ _id: id, text, task: taskId(q), field: FIELDS[docTopic[d] % FIELDS.length] }),
  );
  qrelLines.push(`${id}\t${docId(d)}\t2`);
  let extra = 0;
  for (const o of byTopic[docTopic[d]]) {
    if (o === d || extra >= MAX_GRADE_1) continue;
    for (let j = 0; j < docLen[o]; j++)
      if (docSentences[o * MAX_SENTENCES + j] === s) {
        qrelLines.push(`${id}\t${docId(o)}\t1`);
        extra++;
        break;
      }
  }
  graded1 += extra;
  taskCounts[q % TASKS].queries++;
  taskCounts[q % TASKS].qrels += 1 + extra;
  if (extra) multi++;
}
writeFileSync(join(OUT, 'queries.jsonl'), queryLines.join('\n') + '\n');
writeFileSync(join(OUT, 'qrels', 'test.tsv'), qrelLines.join('\n') + '\n');

// --- Optional precomputed vectors: unit vectors clustered by topic ---------------------------------
let vectorNote = '';
if (args.vectors === 'random') {
  const spec = parseRegistry(registryJson).models.find((m) => m.id === args.model);
  if (!spec?.dim) fail(`--model ${args.model} is not a registry model with a dimension`);
  const dim = spec.dim;
  const gauss = () => {
    const u = 1 - rng.nextFloat();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.nextFloat());
  };
  const centroids = Float32Array.from({ length: T * dim }, gauss);
  const rows = new Float32Array(N * dim);
  for (let d = 0; d < N; d++) {
    const c = docTopic[d] * dim;
    let norm = 0;
    for (let k = 0; k < dim; k++) {
      const v = centroids[c + k] + 0.6 * gauss();
      rows[d * dim + k] = v;
      norm += v * v;
    }
    const inv = 1 / Math.sqrt(norm);
    for (let k = 0; k < dim; k++) rows[d * dim + k] *= inv;
  }
  const folder = `${spec.id}/fp32/`;
  mkdirSync(join(OUT, 'embeddings', folder), { recursive: true });
  writeFileSync(join(OUT, 'embeddings', folder, 'text.npy'), writeNpyF16(rows, N, dim));
  const sidecar = {
    format: 'loupe-embeddings/1',
    model_id: spec.id,
    hub_id: spec.hubId,
    revision: spec.revision,
    dtype: 'fp32',
    pooling: spec.pooling,
    normalize: spec.normalize,
    query_prefix: spec.queryPrefix,
    doc_prefix: spec.docPrefix,
    ...(spec.maxTokens ? { max_tokens: spec.maxTokens } : {}),
    dim,
    part: 'text',
    vectors: 'text.npy',
    missing: [],
    doc_ids: Array.from({ length: N }, (_, d) => docId(d)),
    synthetic: true,
    note: "Synthetic unit vectors clustered by topic (make-scale-shard --vectors random), not this model's embeddings.",
  };
  writeFileSync(join(OUT, 'embeddings', folder, 'sidecar-text.json'), JSON.stringify(sidecar) + '\n');
  writeFileSync(
    join(OUT, 'embeddings', 'index.json'),
    JSON.stringify({
      format: 'loupe-embeddings/1',
      sets: [{ model_id: spec.id, dtype: 'fp32', path: folder }],
    }) + '\n',
  );
  vectorNote = `; ${N} × ${dim} random clustered vectors labelled ${spec.id} fp32`;
}

const qrels = qrelLines.length - 1;
const manifest = {
  name: `scale-${N}`,
  version: '1.0.0',
  format: 'beir+images',
  description: `Synthetic scale shard: ${N.toLocaleString('en')} documents and ${Q.toLocaleString('en')} queries${TASKS > 1 ? ` in ${TASKS} tasks` : ''} recombined from the demo corpora's sentences (make-scale-shard, seed ${args.seed}). For measuring size, not retrieval quality.`,
  license: 'CC-BY-SA-4.0',
  license_url: 'https://creativecommons.org/licenses/by-sa/4.0/',
  citation: 'Sentences from the medquad and xling-med demo shards (see their NOTICE.md).',
  source: 'generated',
  relevance: {
    '2': 'the document the query was cut from',
    '1': 'another document of its topic with the same sentence',
  },
  tasks: Array.from({ length: TASKS }, (_, t) => ({
    id: taskId(t),
    query_modality: 'text',
    corpus_modality: 'text',
    description:
      (TASKS === 1
        ? ''
        : `Task ${t + 1} of ${TASKS} over one corpus (every ${ordinal(TASKS)} query from the ${ordinal(t + 1)}). `) +
      'A fragment of one sentence, as a question → the document it was cut from (2) and the topic documents sharing that sentence (1).',
  })),
  counts: {
    corpus: N,
    queries: Q,
    qrels,
    images: images.length,
    ...(TASKS === 1 ? {} : { tasks: Object.fromEntries(taskCounts.map((c, t) => [taskId(t), c])) }),
  },
  // Read over HTTP, the shard's embeddings are asked for only when named here.
  ...(vectorNote ? { embeddings: 'embeddings/index.json' } : {}),
};
writeFileSync(join(OUT, 'shard.json'), JSON.stringify(manifest, null, 2) + '\n');
writeFileSync(
  join(OUT, 'NOTICE.md'),
  '# Synthetic scale shard\n\nGenerated by `npm run make-scale-shard` from sentences of the medquad (CC BY 4.0, MedQuAD) and\n' +
    'xling-med (CC BY-SA 4.0) demo shards' +
    (images.length ? ' and images of vqa-rad (CC0 1.0, VQA-RAD / MedPix)' : '') +
    '. Documents, queries and judgements are recombinations for size tests: they are not medical\ncontent and not a benchmark.\n',
);

function ordinal(n: number): string {
  const s = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${s}`;
}

const mb = (corpusBytes / 2 ** 20).toFixed(1);
console.log(
  `make-scale-shard: ${OUT}: ${N} documents (${T} topics, corpus.jsonl ${mb} MiB), ${Q} queries${TASKS > 1 ? ` in ${TASKS} tasks` : ''}, ${qrels} qrels ` +
    `(${graded1} at grade 1; ${multi} queries with several relevant)${images.length ? `, ${images.length} images` : ''}${vectorNote}, ` +
    `${((Date.now() - started) / 1000).toFixed(1)} s`,
);
