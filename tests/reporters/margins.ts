// A vitest reporter that records, for every test and every beforeAll/afterAll hook, how long it ran and
// the time limit it ran under, so that scripts/test-summary.mjs can show which tests creep toward their
// limit long before a slower machine fails them. Writes `<dir>/<project>.margins.json` (dir: the
// reporter’s `outputDir` option, else LOUPE_TEST_RESULTS, else .test-results).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Reporter, TestCase, TestModule } from 'vitest/node';

export interface MarginRow {
  /** The test file, relative to the repository root. */
  file: string;
  /** The test's full name, or what the row sums for a file's hooks. */
  name: string;
  kind: 'test' | 'hook';
  durationMs: number;
  /**
   * The limit it ran under: a test's own timeout; for hooks the project's hookTimeout, which understates
   * the margin when a hook sets a longer limit of its own (vitest does not report that) and when the
   * time is spread over several hooks, each with its own limit.
   */
  limitMs: number;
}

export default class MarginsReporter implements Reporter {
  private rows = new Map<string, MarginRow[]>();
  private root = process.cwd();

  constructor(private opts: { outputDir?: string } = {}) {}

  private push(project: string, row: MarginRow): void {
    const list = this.rows.get(project) ?? [];
    list.push(row);
    this.rows.set(project, list);
  }

  onTestCaseResult(test: TestCase): void {
    const d = test.diagnostic();
    if (!d || test.result().state === 'skipped') return;
    this.push(test.project.name, {
      file: relative(this.root, test.module.moduleId),
      name: test.fullName,
      kind: 'test',
      durationMs: d.duration,
      limitMs: test.options.timeout ?? test.project.config.testTimeout,
    });
  }

  /**
   * A file's beforeAll/afterAll hooks together: the file's accumulated time less its tests' (a test's
   * time includes its beforeEach/afterEach). Reporter events arrive from the workers in batches, so
   * hooks cannot be timed one by one here.
   */
  onTestModuleEnd(module: TestModule): void {
    const d = module.diagnostic();
    let tests = 0;
    for (const t of module.children.allTests()) tests += t.diagnostic()?.duration ?? 0;
    const hooks = d.duration - tests;
    if (!(hooks > 0)) return;
    this.push(module.project.name, {
      file: relative(this.root, module.moduleId),
      name: 'beforeAll/afterAll hooks (together)',
      kind: 'hook',
      durationMs: hooks,
      limitMs: module.project.config.hookTimeout,
    });
  }

  onTestRunEnd(): void {
    const dir = this.opts.outputDir ?? process.env.LOUPE_TEST_RESULTS ?? '.test-results';
    mkdirSync(dir, { recursive: true });
    for (const [project, rows] of this.rows) {
      writeFileSync(join(dir, `${project || 'default'}.margins.json`), JSON.stringify(rows, null, 1) + '\n');
    }
  }
}
