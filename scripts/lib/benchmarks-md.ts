// Writes a benchmark's dated entry into its topic's history, docs/benchmarks/<topic>.md (BENCHMARKS.md
// holds only the table of current figures, kept by hand): the text between `<!-- bench:NAME -->` and
// `<!-- /bench:NAME -->` is replaced (or the section appended), then the file is formatted as the
// repository's formatter writes it, so `npm run check` stays green.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const TOPICS: Record<string, string> = {
  'first-dense-url': 'remote-ivf',
  'parquet-import': 'import',
  'scale-import': 'scale',
};

/** The history file a bench's section goes to: docs/benchmarks/<its name, or its topic's>.md. */
export const benchmarksTopic = (name: string): string =>
  name.startsWith('vectors') ? 'vector-index' : (TOPICS[name] ?? name);

export function writeBenchmarksSection(name: string, body: string, root = ROOT): string {
  const file = join(root, 'docs', 'benchmarks', `${benchmarksTopic(name)}.md`);
  mkdirSync(dirname(file), { recursive: true });
  const md = existsSync(file) ? readFileSync(file, 'utf8') : `# ${name}\n`;
  const begin = `<!-- bench:${name} -->`;
  const end = `<!-- /bench:${name} -->`;
  const section = `${begin}\n${body}\n${end}`;
  const i = md.indexOf(begin);
  const j = md.indexOf(end);
  writeFileSync(
    file,
    i >= 0 && j > i ? md.slice(0, i) + section + md.slice(j + end.length) : `${md}\n${section}\n`,
  );
  const prettier = join(ROOT, 'node_modules/prettier/bin/prettier.cjs');
  execFileSync(process.execPath, [prettier, '--write', file], { cwd: ROOT, stdio: 'ignore' });
  console.log(`${file}: bench:${name} written; update its row in BENCHMARKS.md if the figure changed`);
  return file;
}
