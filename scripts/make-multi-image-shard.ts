// Makes a multi-image test shard from vqa-rad: generated-shards/vqa-rad-multi/ (gitignored, never
// committed). The grouping is SYNTHETIC: vqa-rad's images of the same organ and modality are put
// together, three to an item in id order, as if they were one study's views. They are not one
// patient's images; the shard exercises multi-image items (MRMR-style), it measures nothing clinical.
//
// Tasks:
//   text-to-case    a finding phrase (vqa-rad's text-to-image queries) → the items holding an image
//                   with that finding (grade 2); documents are image + text (their passages joined).
//   images-to-case  an item's images as one multi-image query → the other items of the same organ
//                   and modality (grade 1); the item itself is excluded from its ranking.
//
// Usage: npx tsx scripts/make-multi-image-shard.ts [SOURCE_SHARD (default $LOUPE_DATA_DIR/vqa-rad)] [OUT (default generated-shards)]
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const DATA = process.env.LOUPE_DATA_DIR ?? resolve(ROOT, '../shared/data');
const src = resolve(process.argv[2] ?? join(DATA, 'vqa-rad'));
const out = resolve(process.argv[3] ?? join(ROOT, 'generated-shards'), 'vqa-rad-multi');
/** ITEM_SIZE: images per item (the last item of a group takes the one or two left over). */
const ITEM_SIZE = 3;

if (!existsSync(join(src, 'corpus.jsonl'))) {
  console.error(`make-multi-image-shard: ${src} is not a shard folder`);
  process.exit(1);
}

interface SourceDoc {
  _id: string;
  text: string;
  image: string;
  organ: string;
  modality: string;
}
const jsonl = <T>(file: string): T[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);

const docs = jsonl<SourceDoc>(join(src, 'corpus.jsonl')).filter((d) => d.image && d.organ && d.modality);
const groups = new Map<string, SourceDoc[]>();
for (const d of [...docs].sort((a, b) => a._id.localeCompare(b._id))) {
  const key = `${d.organ}|${d.modality}`;
  if (!groups.has(key)) groups.set(key, []);
  groups.get(key)!.push(d);
}

interface Item {
  id: string;
  organ: string;
  modality: string;
  members: SourceDoc[];
}
const items: Item[] = [];
for (const [key, list] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
  const [organ, modality] = key.split('|');
  const n = Math.max(1, Math.round(list.length / ITEM_SIZE));
  for (let i = 0; i < n; i++) {
    const members = list.slice(Math.floor((i * list.length) / n), Math.floor(((i + 1) * list.length) / n));
    if (members.length)
      items.push({
        id: `case-${organ}-${modality}-${i + 1}`.replace(/[^\w-]+/g, '-'),
        organ,
        modality,
        members,
      });
  }
}
const itemOf = new Map<string, Item>();
for (const it of items) for (const m of it.members) itemOf.set(m._id, it);

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'images'), { recursive: true });
mkdirSync(join(out, 'qrels'), { recursive: true });
for (const d of docs) copyFileSync(join(src, d.image), join(out, d.image));

const corpus = items.map((it) => ({
  _id: it.id,
  title: `${it.organ}, ${it.modality}: ${it.members.length} images (synthetic grouping)`,
  text: it.members.map((m) => m.text).join(' '),
  images: it.members.map((m, k) => ({ path: m.image, role: `view ${k + 1}`, caption: m._id })),
  organ: it.organ,
  modality: it.modality,
  members: it.members.map((m) => m._id),
}));

// text-to-case from vqa-rad's text-to-image queries and qrels.
interface SourceQuery {
  _id: string;
  text: string;
  task: string;
}
const queries: Record<string, unknown>[] = [];
const qrels: string[] = ['query-id\tcorpus-id\tscore'];
const srcQrels = readFileSync(join(src, 'qrels/test.tsv'), 'utf8').split('\n').slice(1).filter(Boolean);
const relevant = new Map<string, Set<string>>();
for (const line of srcQrels) {
  const [qid, did, score] = line.split('\t');
  if (Number(score) <= 0 || !itemOf.has(did)) continue;
  if (!relevant.has(qid)) relevant.set(qid, new Set());
  relevant.get(qid)!.add(itemOf.get(did)!.id);
}
for (const q of jsonl<SourceQuery>(join(src, 'queries.jsonl'))) {
  if (q.task !== 'text-to-image' || !relevant.get(q._id)?.size) continue;
  queries.push({ _id: q._id, text: q.text, task: 'text-to-case' });
  for (const id of [...relevant.get(q._id)!].sort()) qrels.push(`${q._id}\t${id}\t2`);
}
// images-to-case: every item with at least two images and a same-group neighbour.
for (const it of items) {
  const others = items.filter((o) => o !== it && o.organ === it.organ && o.modality === it.modality);
  if (it.members.length < 2 || !others.length) continue;
  const qid = `q-${it.id}`;
  queries.push({
    _id: qid,
    text: '',
    images: it.members.map((m, k) => ({ path: m.image, role: `view ${k + 1}` })),
    task: 'images-to-case',
    exclude_ids: [it.id],
    organ: it.organ,
    modality: it.modality,
  });
  for (const o of others) qrels.push(`${qid}\t${o.id}\t1`);
}

const byTask = (t: string) => queries.filter((q) => q.task === t);
const qrelsOf = (t: string) => {
  const ids = new Set(byTask(t).map((q) => q._id as string));
  return qrels.slice(1).filter((l) => ids.has(l.split('\t')[0])).length;
};
const source = JSON.parse(readFileSync(join(src, 'shard.json'), 'utf8'));
const manifest = {
  name: 'vqa-rad-multi',
  version: '1.0.0',
  format: 'beir+images',
  description:
    'SYNTHETIC multi-image items made from VQA-RAD by scripts/make-multi-image-shard.ts: images of the same organ and modality grouped three to an item in id order, as if they were one study. The grouping is not clinical (the images are of different patients); the shard tests multi-image retrieval (mean, max-sim), not medicine.',
  license: source.license,
  license_url: source.license_url,
  citation: source.citation,
  source: source.source,
  relevance: {
    '2': 'text-to-case: an image of the item has the finding',
    '1': 'images-to-case: same organ and modality (synthetic groups)',
  },
  tasks: [
    {
      id: 'text-to-case',
      query_modality: 'text',
      corpus_modality: 'image+text',
      description: 'A finding phrase -> every item with an image that states it (score 2).',
    },
    {
      id: 'images-to-case',
      query_modality: 'image',
      corpus_modality: 'image',
      description:
        "An item's images as one query -> the other items of the same organ and modality (score 1); the item itself is excluded.",
    },
  ],
  counts: {
    corpus: corpus.length,
    queries: queries.length,
    qrels: qrels.length - 1,
    images: docs.length,
    tasks: Object.fromEntries(
      ['text-to-case', 'images-to-case'].map((t) => [t, { queries: byTask(t).length, qrels: qrelsOf(t) }]),
    ),
  },
};
const line = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
writeFileSync(join(out, 'shard.json'), JSON.stringify(manifest, null, 2) + '\n');
writeFileSync(join(out, 'corpus.jsonl'), line(corpus));
writeFileSync(join(out, 'queries.jsonl'), line(queries));
writeFileSync(join(out, 'qrels/test.tsv'), qrels.join('\n') + '\n');
writeFileSync(
  join(out, 'NOTICE.md'),
  `# vqa-rad-multi (synthetic)\n\nMade by \`scripts/make-multi-image-shard.ts\` from the vqa-rad demo shard. **The grouping is synthetic**: ` +
    `images of the same organ and modality are grouped three to an item in id order, as if they were one study; ` +
    `they come from different patients. Use it to test multi-image retrieval, not to measure anything clinical.\n\n` +
    `Images and findings: VQA-RAD, ${source.license} (${source.license_url}). ${source.citation}\n`,
);
console.log(
  `make-multi-image-shard: ${corpus.length} items (${docs.length} images), ${byTask('text-to-case').length} text-to-case and ` +
    `${byTask('images-to-case').length} images-to-case queries → ${out}`,
);
