// Writes a benchmark's section of BENCHMARKS.md: the text between `<!-- bench:NAME -->` and
// `<!-- /bench:NAME -->` is replaced (or the section appended), then the file is formatted as the
// repository's formatter writes it, so `npm run check` stays green.
import { execSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

export function writeBenchmarksSection(name: string, body: string): void {
  const file = join(ROOT, 'BENCHMARKS.md');
  const md = readFileSync(file, 'utf8');
  const begin = `<!-- bench:${name} -->`;
  const end = `<!-- /bench:${name} -->`;
  const section = `${begin}\n${body}\n${end}`;
  const i = md.indexOf(begin);
  const j = md.indexOf(end);
  writeFileSync(
    file,
    i >= 0 && j > i ? md.slice(0, i) + section + md.slice(j + end.length) : `${md}\n${section}\n`,
  );
  execSync(`npx prettier --write ${JSON.stringify(file)}`, { cwd: ROOT, stdio: 'ignore' });
  console.log(`BENCHMARKS.md: bench:${name} section written`);
}
