// A scale shard (make-scale-shard's JSONL) rewritten as a Parquet dataset in the Hugging Face layout
// (issue 18: a Parquet corpus of 1M documents imports streamed): corpus/test-0000i-of-0000n.parquet
// (id, title, text, field), query/test-00000-of-00001.parquet (id, text, field) and
// qrels/test-00000-of-00001.parquet (query-id, corpus-id, score), Snappy-compressed, in row groups of
// --row-group rows, as `datasets` writes them. Rows stream through (hyparquet-writer's
// parquetWriteRows over a line reader): memory does not grow with the corpus. Written under a
// temporary name next to --out and renamed when complete.
//
//   npm run make-scale-parquet -- --from generated-shards/scale-100k --out generated-shards/scale-100k-parquet
//     [--rows-per-file 250000] [--row-group 10000]
import {
  createReadStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { fileWriter, parquetWriteRows } from 'hyparquet-writer';

const { values: args } = parseArgs({
  options: {
    from: { type: 'string' },
    out: { type: 'string' },
    'rows-per-file': { type: 'string', default: '250000' },
    'row-group': { type: 'string', default: '10000' },
  },
});

function fail(message: string): never {
  console.error(`make-scale-parquet: ${message}`);
  process.exit(2);
}

if (!args.from || !args.out) fail('--from DIR (a make-scale-shard shard) and --out DIR are required');
const FROM = resolve(args.from);
const OUT = resolve(args.out);
const PER_FILE = Number(args['rows-per-file']);
const GROUP = Number(args['row-group']);
if (!Number.isInteger(PER_FILE) || PER_FILE < 1) fail('--rows-per-file must be a positive whole number');
if (!Number.isInteger(GROUP) || GROUP < 1) fail('--row-group must be a positive whole number');
if (!existsSync(join(FROM, 'corpus.jsonl'))) fail(`${FROM} holds no corpus.jsonl`);
if (existsSync(OUT)) fail(`${OUT} exists already; remove it first`);
const manifest = JSON.parse(readFileSync(join(FROM, 'shard.json'), 'utf8')) as {
  name: string;
  counts: { corpus: number; queries: number; qrels: number };
};
const started = Date.now();
const TMP = `${OUT}.tmp-${process.pid}`;
rmSync(TMP, { recursive: true, force: true });

type Kind = 'string' | 'int64';
const schemaOf = (columns: [string, Kind][]) => [
  { name: 'schema', num_children: columns.length },
  ...columns.map(([name, kind]) =>
    kind === 'string'
      ? {
          name,
          type: 'BYTE_ARRAY' as const,
          converted_type: 'UTF8' as const,
          repetition_type: 'OPTIONAL' as const,
        }
      : { name, type: 'INT64' as const, repetition_type: 'OPTIONAL' as const },
  ),
];

/** Writes `rows` (an async iterable) to `path` as one Parquet file with `columns`. */
async function write(path: string, columns: [string, Kind][], rows: AsyncIterable<Record<string, unknown>>) {
  mkdirSync(dirname(path), { recursive: true });
  await parquetWriteRows({
    writer: fileWriter(path),
    rows,
    columns: columns.map(([name]) => ({ name })),
    schema: schemaOf(columns),
    rowGroupSize: GROUP,
  });
}

/** The lines of a file, one at a time (empty lines skipped). */
async function* lines(path: string): AsyncGenerator<string> {
  for await (const l of createInterface({ input: createReadStream(path), crlfDelay: Infinity }))
    if (l) yield l;
}

/** At most `n` values of `it` (the iterator stays open for the next file). */
async function* take<T>(it: AsyncIterator<T>, n: number): AsyncGenerator<T> {
  for (let i = 0; i < n; i++) {
    const r = await it.next();
    if (r.done) return;
    yield r.value;
  }
}

// Corpus: ceil(N / PER_FILE) files.
const N = manifest.counts.corpus;
const files = Math.ceil(N / PER_FILE);
const width = 5;
const docs = lines(join(FROM, 'corpus.jsonl'));
const docRows = (async function* () {
  for await (const l of docs) {
    const d = JSON.parse(l) as { _id: string; title: string; text: string; field?: string };
    yield { id: d._id, title: d.title, text: d.text, field: d.field ?? null };
  }
})();
for (let i = 0; i < files; i++) {
  const name = `test-${String(i).padStart(width, '0')}-of-${String(files).padStart(width, '0')}.parquet`;
  await write(
    join(TMP, 'corpus', name),
    [
      ['id', 'string'],
      ['title', 'string'],
      ['text', 'string'],
      ['field', 'string'],
    ],
    take(docRows, PER_FILE),
  );
}

await write(
  join(TMP, 'query', 'test-00000-of-00001.parquet'),
  [
    ['id', 'string'],
    ['text', 'string'],
    ['field', 'string'],
  ],
  (async function* () {
    for await (const l of lines(join(FROM, 'queries.jsonl'))) {
      const q = JSON.parse(l) as { _id: string; text: string; field?: string };
      yield { id: q._id, text: q.text, field: q.field ?? null };
    }
  })(),
);

await write(
  join(TMP, 'qrels', 'test-00000-of-00001.parquet'),
  [
    ['query-id', 'string'],
    ['corpus-id', 'string'],
    ['score', 'int64'],
  ],
  (async function* () {
    let header = true;
    for await (const l of lines(join(FROM, 'qrels', 'test.tsv'))) {
      if (header) {
        header = false;
        continue;
      }
      const [q, d, s] = l.split('\t');
      yield { 'query-id': q, 'corpus-id': d, score: BigInt(s) };
    }
  })(),
);

writeFileSync(
  join(TMP, 'README.md'),
  `# ${manifest.name} (Parquet)\n\nThe synthetic scale shard ${manifest.name} (make-scale-shard) written as a Parquet dataset by\n` +
    '`npm run make-scale-parquet`, for measuring imports at size. Its documents, queries and judgements are\n' +
    'recombinations of sentences of the medquad and xling-med demo shards: not medical content and not a benchmark.\n',
);
renameSync(TMP, OUT);
console.log(
  `make-scale-parquet: ${OUT}: ${N} documents in ${files} corpus files (row groups of ${GROUP}), ` +
    `${manifest.counts.queries} queries, ${manifest.counts.qrels} qrels, ${((Date.now() - started) / 1000).toFixed(1)} s`,
);
