// Which runs really differ: all pairs of the runs ticked for comparison (CompareState's picks, the one
// source of truth), on one measure, by Tukey's HSD or its randomized version, in the stats worker;
// optionally across every task of the shard, the runs matched by name. A result is shown only while
// it matches the picks and settings it was computed for.
import type { AcrossTasks, AllPairsMethod, AllPairsResult, AllPairsRun } from '../core/eval/all-pairs';
import { allPairsAcrossTasksInWorker, allPairsInWorker } from '../clients/stats-client';
import type { CompareHost, CompareState } from './compare.svelte';
import type { RunResult } from './runs.svelte';

export interface PairsHost extends CompareHost {
  readonly compare: CompareState;
}

export type PairsMethod = Extract<AllPairsMethod, 'tukey' | 'randomized'>;
export const PAIRS_TRIALS = 1000;
export const PAIRS_SEED = 42;

interface PairsResult {
  request: string;
  single?: AllPairsResult;
  across?: AcrossTasks & { measure: string; excludedQueries: Record<string, number> };
  /** Across tasks: tasks left out because they lack a run of one of the picked names. */
  skippedTasks: string[];
}

export class PairsState {
  measure = $state('ndcg_cut_10');
  method = $state<PairsMethod>('tukey');
  acrossTasks = $state(false);
  #computed = $state.raw<Record<string, PairsResult>>({});

  constructor(private app: PairsHost) {}

  get #where(): string {
    return `${this.app.library.shard?.summary.hash ?? ''}|${this.app.library.taskId}`;
  }

  /** What the current picks and settings ask for (a result answers exactly one such request). */
  get #request(): string {
    const ids = [...this.app.compare.pickedIds].sort();
    return JSON.stringify([ids, this.measure, this.method, this.acrossTasks, this.app.runs.semantics]);
  }

  get current(): PairsResult | null {
    const c = this.#computed[this.#where];
    return c && c.request === this.#request ? c : null;
  }

  /** All pairs of the picked runs (≥ 3) in the stats worker; cancellable once it lasts a second. */
  async run() {
    const picked = this.app.compare.picked;
    if (picked.length < 3) {
      this.app.messages.error('Tick three or more runs of this task to compare all pairs.');
      return;
    }
    const where = this.#where;
    const request = this.#request;
    const { measure, method, acrossTasks } = this;
    const options = { method, trials: PAIRS_TRIALS, seed: PAIRS_SEED };
    const label =
      method === 'tukey' ? "Tukey's HSD" : `randomized Tukey HSD, ${PAIRS_TRIALS} trials, seed ${PAIRS_SEED}`;
    await this.app.jobs.run(
      `Comparing all pairs of ${picked.length} runs (${label})`,
      'Comparing all pairs',
      async (job) => {
        let result: PairsResult;
        if (!acrossTasks) {
          const inputs = picked.map((r) => input(r, r.meta.id, measure));
          result = {
            request,
            single: await allPairsInWorker({ inputs, measure, options }, job.signal),
            skippedTasks: [],
          };
        } else {
          const names = picked.map((r) => r.meta.name);
          if (new Set(names).size !== names.length)
            throw new Error('two picked runs share a name, so they cannot be matched on the other tasks');
          const tasks: { task: string; inputs: AllPairsRun[] }[] = [];
          const skippedTasks: string[] = [];
          for (const t of this.app.library.tasks) {
            const runs = this.app.runs.all.filter((r) => r.meta.taskId === t.id);
            const matched = names.map((n) => runs.find((r) => r.meta.name === n));
            if (matched.some((r) => !r)) skippedTasks.push(t.id);
            else
              tasks.push({
                task: t.id,
                inputs: matched.map((r, i) => input(r!, picked[i].meta.id, measure)),
              });
          }
          const across = await allPairsAcrossTasksInWorker({ tasks, measure, options }, job.signal);
          result = { request, across, skippedTasks };
        }
        this.#computed = { ...this.#computed, [where]: result };
        performance.mark('loupe:pairs');
      },
      { revealAfterMs: 1000 },
    );
  }
}

/** A run's one measure per query, named by `id` (the picked run's id on every task). */
function input(r: RunResult, id: string, measure: string): AllPairsRun {
  return {
    id,
    name: r.meta.name,
    perQuery: new Map([...r.report.perQuery].map(([q, m]) => [q, { [measure]: m[measure] }])),
  };
}
