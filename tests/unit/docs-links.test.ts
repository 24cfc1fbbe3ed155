// The documentation's links hold (issue 35 item 4): every relative link and image in README.md,
// BENCHMARKS.md and docs/**/*.md names a file or folder that exists, every #anchor names a heading of
// its page (GitHub's slugs), the source paths README and docs/*.md name in code spans exist, and the
// README stays a front door of at most 300 lines.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../..');

function markdownFiles(root: string): string[] {
  const docs = (dir: string): string[] =>
    existsSync(dir)
      ? readdirSync(dir).flatMap((name) => {
          const path = join(dir, name);
          return statSync(path).isDirectory() ? docs(path) : name.endsWith('.md') ? [path] : [];
        })
      : [];
  return [join(root, 'README.md'), join(root, 'BENCHMARKS.md'), ...docs(join(root, 'docs'))].filter(
    existsSync,
  );
}

/** The text outside fenced code blocks and inline code spans (links there are not links). */
function prose(md: string): string {
  return md.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor for a heading: its text as shown, lower-cased, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of md
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
    .matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Every broken relative link or anchor of the given files, as "file: target (why)". */
export function brokenLinks(root: string, files: string[]): string[] {
  const problems: string[] = [];
  for (const file of files) {
    const md = readFileSync(file, 'utf8');
    for (const m of prose(md).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const dest = path ? resolve(dirname(file), decodeURIComponent(path)) : file;
      const where = `${relative(root, file)}: ${target}`;
      if (!existsSync(dest)) problems.push(`${where} (no such file)`);
      else if (
        anchor !== undefined &&
        dest.endsWith('.md') &&
        !anchors(readFileSync(dest, 'utf8')).has(anchor)
      )
        problems.push(`${where} (no heading #${anchor} in ${relative(root, dest)})`);
    }
  }
  return problems;
}

/** Source paths named in code spans (`src/…`, `workers/…`, `scripts/…`, `tests/…`) that do not exist. */
export function missingSourcePaths(root: string, files: string[]): string[] {
  const problems: string[] = [];
  for (const file of files) {
    const md = readFileSync(file, 'utf8').replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
    for (const m of md.matchAll(/`((?:src|workers|scripts|tests)\/[\w./-]+)`/g)) {
      const path = m[1].replace(/[.:,]$/, '');
      if (!existsSync(join(root, path))) problems.push(`${relative(root, file)}: ${path}`);
    }
  }
  return problems;
}

describe('documentation links', () => {
  const files = markdownFiles(ROOT);

  it('reads README.md, BENCHMARKS.md and every page under docs/', () => {
    const names = files.map((f) => relative(ROOT, f));
    expect(names).toContain('README.md');
    expect(names).toContain('BENCHMARKS.md');
    expect(names).toContain('docs/architecture.md');
    expect(names.filter((n) => n.startsWith('docs/benchmarks/')).length).toBeGreaterThan(0);
  });

  it('every relative link and anchor resolves', () => {
    expect(brokenLinks(ROOT, files)).toEqual([]);
  });

  it('every source path the README and docs/*.md name exists', () => {
    const pages = files.filter((f) => !relative(ROOT, f).startsWith('docs/benchmarks/'));
    expect(missingSourcePaths(ROOT, pages)).toEqual([]);
  });

  it('every docs page is one click from the README', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const linked = new Set(
      [...prose(readme).matchAll(/\]\(([^)#\s]+)/g)].map((m) => resolve(ROOT, decodeURIComponent(m[1]))),
    );
    const pages = readdirSync(join(ROOT, 'docs'))
      .filter((n) => n.endsWith('.md'))
      .map((n) => join(ROOT, 'docs', n));
    expect(pages.filter((p) => !linked.has(p)).map((p) => relative(ROOT, p))).toEqual([]);
  });

  it('the README is a front door of at most 300 lines', () => {
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8').trimEnd().split('\n').length).toBeLessThanOrEqual(
      300,
    );
  });

  it('names a missing file, a missing heading and a missing source path', () => {
    const dir = mkdtempSync(join(tmpdir(), 'docs-links-'));
    mkdirSync(join(dir, 'docs'));
    writeFileSync(join(dir, 'docs', 'a.md'), '# A page\n\n## Two words: `code`\n');
    writeFileSync(
      join(dir, 'README.md'),
      '# R\n\n[ok](docs/a.md#two-words-code) [self](#r) [web](https://example.org/x)\n' +
        '[gone](docs/b.md) [bad anchor](docs/a.md#three) `[not a link](nowhere.md)`\n' +
        '```md\n[in code](nowhere.md)\n```\n`src/lib/nowhere.ts`\n',
    );
    const readme = join(dir, 'README.md');
    expect(brokenLinks(dir, [readme])).toEqual([
      'README.md: docs/b.md (no such file)',
      'README.md: docs/a.md#three (no heading #three in docs/a.md)',
    ]);
    expect(missingSourcePaths(dir, [readme])).toEqual(['README.md: src/lib/nowhere.ts']);
  });
});

describe('slug', () => {
  it('follows GitHub: punctuation dropped, code and emphasis unwrapped, duplicates numbered', () => {
    expect(slug('The scale ladder in the browser: `npm run bench:scale` (issue 18, 2026-11-26)')).toBe(
      'the-scale-ladder-in-the-browser-npm-run-benchscale-issue-18-2026-11-26',
    );
    expect(slug('Parquet datasets (MIEB / Hugging Face)')).toBe('parquet-datasets-mieb--hugging-face');
    expect(slug("Corpus embedding: Loupe's worker vs trec_eval")).toBe(
      'corpus-embedding-loupes-worker-vs-trec_eval',
    );
    expect([...anchors('# A\n## A\n```\n# not a heading\n```\n## A')]).toEqual(['a', 'a-1', 'a-2']);
  });
});
