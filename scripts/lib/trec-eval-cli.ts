// `npm run trec-eval` without the process: its arguments, its measure sets and its printed text, as one
// function that scripts/trec-eval.ts calls and the unit tests call too (tests/unit/trec908-golden.test.ts
// compares its 9.0.8 text with trec_eval 9.0.8's byte for byte), so there is no second copy of the rules.
import {
  ADDED_IN_10,
  evaluate,
  parseMeasure,
  expandMeasureSpec,
  trecEvalSets,
  type EvalOptions,
  type TrecEvalVersion,
} from '../../src/lib/core/eval/metrics';
import { formatTrecEval, parseQrelsAuto, parseRun } from '../../src/lib/core/eval/trec';
import { SEMANTICS, parseSemantics, type Semantics } from '../../src/lib/core/eval/semantics';

export const USAGE = `usage: npx tsx scripts/trec-eval.ts [-q] [-c] [-l N] [-M N] [--float32] [--semantics S] [-m measure ...] qrels run

  -q          print every query's values before the 'all' lines
  -c          average over every qrels query; a query missing from the run scores 0
  -l N        relevance level: grade >= N is relevant (default 1; ndcg_cut ignores it)
  -M N        evaluate only the top N docs of each query
  --float32   compare scores as float32, like trec_eval 9.x / pytrec_eval / BEIR / MTEB
              (default: as double, like trec_eval 10.0)
  --semantics S  10.0-c: trec_eval 10.0 -c (the app's default; same as -c)
              9.0.8 (or pytrec_eval): trec_eval 9.0.8 / pytrec_eval: queries missing from the run
              are skipped, scores compared as float32, recall level p of iprec_at_recall and 11pt_avg
              taken at (long) (p*R + 0.9) relevant docs, and all_trec without rbp, rbp_resid, unj
  -m MEASURE  trec_eval syntax, repeatable: every measure of trec_eval 10.0's all_trec set:
              num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank infAP gm_bpref
              utility 11pt_avg binG G ndcg ndcg_rel Rndcg set_P set_relative_P set_recall set_map
              set_F[.beta] num_nonrel_judged_ret rbp rbp_resid, iprec_at_recall[.0,.5,1],
              Rprec_mult[.0.5,2], and the cutoff families P recall ndcg_cut map_cut relative_P
              success unj (e.g. P.5,10  ndcg_cut.10  unj.5); a family without parameters uses
              trec_eval's defaults. Sets: official, set, all_trec (relstring and runid are not printed).
              Loupe extra (not trec_eval): Judged@10 (ir_measures' share of the top k judged)

Without -m (or with -m official): trec_eval's default set without runid: num_q num_ret num_rel
num_rel_ret map gm_map Rprec bpref recip_rank iprec_at_recall P. Qrels queries missing from the run
are skipped (trec_eval 9.0.8; trec_eval 10.0 stops with an error instead). rbp and the gain-based
measures use trec_eval's default parameters (p = 0.9, gain = grade).
`;

const UNSUPPORTED_SETS = ['all_prefs', 'prefs', 'qrels_jg'];

/** A usage error or a bad input: the message trec-eval prints (after "trec-eval: ") before exiting 1. */
export class CliError extends Error {}

function intArg(flag: string, s: string | undefined): number {
  if (s === undefined || !/^[+-]?[0-9]+$/.test(s))
    throw new CliError(`${flag} needs an integer, got '${s ?? ''}'`);
  return Number(s);
}

/**
 * What `npm run trec-eval -- ...argv` prints on standard output (the usage text for -h). `read` reads
 * a file's text. Throws CliError on a usage error or a bad file.
 */
export function trecEvalCli(argv: readonly string[], read: (path: string) => string): string {
  let perQuery = false;
  const opts: EvalOptions = {};
  let semantics: Semantics | null = null;
  const specs: string[] = [];
  const files: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    // getopt style, as trec_eval: `-l 2` or `-l2`.
    const takeValue = (flag: string) => (a.length > flag.length ? a.slice(flag.length) : argv[++i]);
    if (a === '-h' || a === '--help') return USAGE;
    else if (a === '-q') perQuery = true;
    else if (a === '-c') opts.complete = true;
    else if (a === '--float32') opts.float32Ties = true;
    else if (a === '--semantics' || a.startsWith('--semantics=')) {
      const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      try {
        semantics = parseSemantics(v ?? '');
      } catch (e) {
        throw new CliError((e as Error).message);
      }
    } else if (a.startsWith('-l')) opts.relevanceLevel = intArg('-l', takeValue('-l'));
    else if (a.startsWith('-M')) {
      opts.maxDocs = intArg('-M', takeValue('-M'));
      if (opts.maxDocs < 0) throw new CliError('-M must be >= 0');
    } else if (a.startsWith('-m')) {
      const v = takeValue('-m');
      if (!v) throw new CliError('-m needs a measure');
      specs.push(v);
    } else if (a.startsWith('-') && a !== '-') throw new CliError(`unknown option '${a}'\n\n${USAGE}`);
    else files.push(a);
  }
  if (semantics) {
    if (opts.complete && semantics === '9.0.8')
      throw new CliError('--semantics 9.0.8 skips missing queries: it cannot go with -c');
    Object.assign(opts, SEMANTICS[semantics].options);
  }
  if (files.length !== 2) throw new CliError(`expected 2 files (qrels run), got ${files.length}\n\n${USAGE}`);

  // The measure sets of the version followed: 9.0.8's all_trec has no rbp, rbp_resid or unj.
  const version: TrecEvalVersion = opts.trecEvalVersion ?? '10.0';
  const sets = trecEvalSets(version);
  let measures: string[];
  try {
    measures = (specs.length ? specs : sets.official)
      .flatMap((s) => {
        if (UNSUPPORTED_SETS.includes(s))
          throw new Error(
            `measure set '${s}' is not supported (preference and qrels_jg measures need other judgment files); list the measures with -m`,
          );
        return s in sets ? sets[s] : [s];
      })
      .flatMap(expandMeasureSpec);
  } catch (e) {
    throw new CliError((e as Error).message);
  }
  if (version === '9.0.8') {
    const newer = measures.filter((m) => ADDED_IN_10.includes(parseMeasure(m).family));
    if (newer.length)
      throw new CliError(
        `trec_eval 9.0.8 has no measure ${newer[0]} (rbp, rbp_resid and unj came with 10.0)`,
      );
  }
  const [qrelsFile, runFile] = files;
  try {
    const qrels = parseQrelsAuto(read(qrelsFile), qrelsFile);
    const run = parseRun(read(runFile), runFile);
    return formatTrecEval(evaluate(qrels, run, measures, opts), { perQuery });
  } catch (e) {
    throw new CliError((e as Error).message);
  }
}
