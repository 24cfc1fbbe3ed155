// Writes a benchmark's dated entry into its topic's history, docs/benchmarks/<topic>.md (BENCHMARKS.md
// holds only the table of current figures, kept by hand): the text between `<!-- bench:NAME -->` and
// `<!-- /bench:NAME -->` is replaced (or the section appended), then the file is formatted as the
// repository's formatter writes it, so `npm run check` stays green.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

/** The history file (docs/benchmarks/<topic>.md) each bench's section goes to; other names go to <name>.md. */
const TOPICS: Record<string, string> = {
  bm25: 'bm25',
  'first-dense-url': 'remote-ivf',
  'first-query': 'first-query',
  latency: 'latency',
  'parquet-import': 'import',
  scale: 'scale',
  vectors: 'vector-index',
};

export function benchmarksTopic(name: string): string {
  return TOPICS[name] ?? (name.startsWith('vectors-') ? TOPICS.vectors : name);
}

export function writeBenchmarksSection(name: string, body: string, root = ROOT): string {
  const file = join(root, 'docs', 'benchmarks', `${benchmarksTopic(name)}.md`);
  mkdirSync(join(root, 'docs', 'benchmarks'), { recursive: true });
  const md = existsSync(file)
    ? readFileSync(file, 'utf8')
    : `# ${name}\n\nDated history; the figures that hold today are in [BENCHMARKS.md](../../BENCHMARKS.md).\n`;
  const begin = `<!-- bench:${name} -->`;
  const end = `<!-- /bench:${name} -->`;
  const section = `${begin}\n${body}\n${end}`;
  const i = md.indexOf(begin);
  const j = md.indexOf(end);
  writeFileSync(
    file,
    i >= 0 && j > i ? md.slice(0, i) + section + md.slice(j + end.length) : `${md}\n${section}\n`,
  );
  execFileSync(process.execPath, [join(ROOT, 'node_modules/prettier/bin/prettier.cjs'), '--write', file], {
    cwd: ROOT,
    stdio: 'ignore',
  });
  console.log(
    `${file}: bench:${name} section written; update its row in BENCHMARKS.md if the figure changed`,
  );
  return file;
}
