// BENCHMARKS.md is the table of current figures and docs/benchmarks/ their dated history (issue 35
// item 5): the benches' writer puts a section into its topic's history file, and every row of the
// table links to a history file that exists.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { benchmarksTopic, writeBenchmarksSection } from '../../scripts/lib/benchmarks-md';

const ROOT = resolve(__dirname, '../..');

describe('writeBenchmarksSection', () => {
  it('writes a bench section into its topic file under docs/benchmarks/, then replaces it in place', () => {
    const dir = mkdtempSync(join(tmpdir(), 'benchmarks-md-'));
    mkdirSync(join(dir, 'docs', 'benchmarks'), { recursive: true });
    const topic = join(dir, 'docs', 'benchmarks', 'first-query.md');
    writeFileSync(topic, '# The first query\n\nOlder entry.\n');

    expect(writeBenchmarksSection('first-query', 'Run 1: **3.35 s**', dir)).toBe(topic);
    expect(readFileSync(topic, 'utf8')).toMatch(
      /^# The first query\n\nOlder entry\.\n\n<!-- bench:first-query -->\n\nRun 1: \*\*3\.35 s\*\*\n\n?<!-- \/bench:first-query -->\n$/,
    );
    writeBenchmarksSection('first-query', 'Run 2: **3.10 s**', dir);
    const md = readFileSync(topic, 'utf8');
    expect(md).toContain('Run 2: **3.10 s**');
    expect(md).not.toContain('Run 1');
    expect(md.match(/<!-- bench:first-query -->/g)).toHaveLength(1);
    expect(md.startsWith('# The first query\n\nOlder entry.\n')).toBe(true);
    // Nothing goes to BENCHMARKS.md, which holds only the table of current figures.
    expect(existsSync(join(dir, 'BENCHMARKS.md'))).toBe(false);
  });

  it('sends related sections to one topic, and any other name to a file of its own', () => {
    expect(benchmarksTopic('vectors-two-pass')).toBe('vector-index');
    expect(benchmarksTopic('first-dense-url')).toBe('remote-ivf');
    expect(benchmarksTopic('new-bench')).toBe('new-bench');
  });

  it("maps every bench's section to a history file that exists in the repository", () => {
    for (const name of [
      'bm25',
      'first-dense-url',
      'first-query',
      'latency',
      'parquet-import',
      'scale',
      'vectors',
    ]) {
      const file = join(ROOT, 'docs', 'benchmarks', `${benchmarksTopic(name)}.md`);
      expect(existsSync(file), `${name} → ${file}`).toBe(true);
      expect(readFileSync(file, 'utf8'), name).toContain(`<!-- bench:${name} -->`);
    }
  });
});

describe('BENCHMARKS.md', () => {
  const md = readFileSync(join(ROOT, 'BENCHMARKS.md'), 'utf8');
  const table = md
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .slice(2);

  it('opens with one table of current figures, at most about 80 lines in all', () => {
    expect(md.split('\n').length).toBeLessThanOrEqual(80);
    expect(md.indexOf('| question')).toBeLessThan(md.indexOf('## Machine'));
    expect(table.length).toBeGreaterThanOrEqual(10);
  });

  it('links each row to an existing history file under docs/benchmarks/, with a date and a command', () => {
    for (const row of table) {
      const cells = row.split(/(?<!\\)\|/).slice(1, -1);
      expect(cells, row).toHaveLength(7);
      const [, , , date, , command, history] = cells;
      expect(date.trim(), row).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(command, row).toMatch(/`[^`]+`/);
      const link = history.match(/\]\((docs\/benchmarks\/[\w-]+\.md)(#[^)]*)?\)/);
      expect(link, row).not.toBeNull();
      expect(existsSync(join(ROOT, link![1])), link![1]).toBe(true);
    }
  });
});
