// The source tree's shape (issues 22 and 35): no import cycle among src/ and workers/, workers and
// platform code never reach into the page's clients/state/components, core stays pure, platform/ is
// grouped in capability folders and workers/ holds entries beside their folders (each folder with a
// README note), and no hand-written source file grows past 700 lines. Reads the files as text and
// resolves relative imports itself.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../..');
const MAX_LINES = 700;
const EXTENSIONS = ['', '.ts', '.svelte.ts', '.d.ts', '.js', '.svelte', '/index.ts'];

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'generated' ? [] : walk(path);
    return /\.(ts|svelte)$/.test(name) ? [path] : [];
  });
}

const files = [...walk(join(ROOT, 'src')), ...walk(join(ROOT, 'workers'))];
const rel = (p: string) => relative(ROOT, p);

/** Relative import specifiers of a file (static, dynamic, re-exports, worker URLs), type-only ones included. */
function specifiers(source: string): string[] {
  const found: string[] = [];
  const pattern = /(?:\bfrom\s*|\bimport\s*\(?\s*|new URL\(\s*)['"](\.{1,2}\/[^'"?]+)/g;
  for (const m of source.matchAll(pattern)) if (!m[1].endsWith('/')) found.push(m[1]);
  return found;
}

function resolveImport(from: string, spec: string): string | null {
  const base = resolve(dirname(from), spec);
  for (const ext of EXTENSIONS) {
    const p = base + ext;
    if (existsSync(p) && statSync(p).isFile()) return p;
  }
  return null;
}

const graph = new Map<string, string[]>(
  files.map((f) => [
    f,
    specifiers(readFileSync(f, 'utf8'))
      .map((s) => resolveImport(f, s))
      .filter((p): p is string => p !== null && /\.(ts|svelte)$/.test(p)),
  ]),
);

/** platform/'s capability folders (issue 35): one per concern, nothing loose beside them. */
const PLATFORM_FOLDERS = ['gpu', 'media', 'models', 'page', 'sources', 'storage'];
/** A folder's README note says what lives there and what it may import. */
const RULE_NOTE = /may import/i;
const readme = (dir: string): string =>
  existsSync(join(dir, 'README.md')) ? readFileSync(join(dir, 'README.md'), 'utf8') : '';

function under(file: string, folder: string): boolean {
  return rel(file).startsWith(folder + '/');
}

describe('source layout', () => {
  it('resolves every relative import it reads (the scan itself works)', () => {
    const unresolved = files.flatMap((f) =>
      specifiers(readFileSync(f, 'utf8'))
        .filter((s) => !s.endsWith('.json') && !s.endsWith('.css') && resolveImport(f, s) === null)
        .map((s) => `${rel(f)} → ${s}`),
    );
    expect(unresolved).toEqual([]);
    expect(graph.size).toBeGreaterThan(100);
  });

  it('has no import cycle', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (f: string) => {
      state.set(f, 'open');
      stack.push(f);
      for (const d of graph.get(f) ?? []) {
        if (state.get(d) === 'open') cycles.push([...stack.slice(stack.indexOf(d)), d].map(rel).join(' → '));
        else if (!state.has(d)) visit(d);
      }
      stack.pop();
      state.set(f, 'done');
    };
    for (const f of graph.keys()) if (!state.has(f)) visit(f);
    expect(cycles).toEqual([]);
  });

  it('keeps workers and platform code away from the page (clients, state, components)', () => {
    const page = ['src/lib/clients', 'src/lib/state', 'src/components', 'src/embed'];
    const bad = [...graph].flatMap(([f, deps]) =>
      under(f, 'workers') || under(f, 'src/lib/platform')
        ? deps.filter((d) => page.some((p) => under(d, p))).map((d) => `${rel(f)} → ${rel(d)}`)
        : [],
    );
    expect(bad).toEqual([]);
  });

  it('keeps core pure: it imports nothing outside src/lib/core', () => {
    const bad = [...graph].flatMap(([f, deps]) =>
      under(f, 'src/lib/core')
        ? deps.filter((d) => !under(d, 'src/lib/core')).map((d) => `${rel(f)} → ${rel(d)}`)
        : [],
    );
    expect(bad).toEqual([]);
  });

  it('groups platform/ in capability folders, each with its README note', () => {
    const platform = join(ROOT, 'src/lib/platform');
    const top = readdirSync(platform, { withFileTypes: true });
    // Nothing but the folders (and the folder's own README) at the top.
    expect(top.filter((e) => e.isFile() && e.name !== 'README.md').map((e) => e.name)).toEqual([]);
    const folders = top.filter((e) => e.isDirectory()).map((e) => e.name);
    expect(folders.sort()).toEqual(PLATFORM_FOLDERS);
    for (const f of folders) expect(readme(join(platform, f)), `platform/${f}/README.md`).toMatch(RULE_NOTE);
  });

  it('keeps each worker beside its own folder: a folder imports only itself and the shared kernels', () => {
    const top = readdirSync(join(ROOT, 'workers'), { withFileTypes: true });
    // The top level holds the entries (and README.md); every module sits in a folder.
    const loose = top.filter((e) => e.isFile() && !/\.worker\.ts$/.test(e.name) && e.name !== 'README.md');
    expect(loose.map((e) => e.name)).toEqual([]);
    const folders = top.filter((e) => e.isDirectory()).map((e) => e.name);
    for (const f of folders)
      expect(readme(join(ROOT, 'workers', f)), `workers/${f}/README.md`).toMatch(RULE_NOTE);
    // workers/<name>/… and workers/<name>.worker.ts may import workers/<name>/ and workers/kernels/ only.
    const folderOf = (file: string): string | null => {
      const parts = rel(file).split('/');
      if (parts[0] !== 'workers') return null;
      return parts.length > 2 ? parts[1] : parts[1].replace(/\.worker\.ts$/, '');
    };
    const bad = [...graph].flatMap(([f, deps]) => {
      const from = folderOf(f);
      if (from === null) return [];
      return deps
        .filter((d) => under(d, 'workers') && rel(d).split('/').length > 2)
        .filter((d) => ![from, 'kernels'].includes(folderOf(d)!))
        .map((d) => `${rel(f)} → ${rel(d)}`);
    });
    expect(bad).toEqual([]);
  });

  it(`has no hand-written source file over ${MAX_LINES} lines`, () => {
    const long = files
      .map((f) => ({ file: rel(f), lines: readFileSync(f, 'utf8').split('\n').length - 1 }))
      .filter((x) => x.lines > MAX_LINES);
    expect(long).toEqual([]);
  });
});
