// trec_eval replacement for when no binary is around: same measures, same numbers, same output layout.
//   npx tsx scripts/trec-eval.ts [-q] [-c] [-l N] [-M N] [--float32] [--semantics S] [-m measure ...] qrels run
// qrels: TREC (`qid iter docno rel`) or BEIR TSV (`query-id corpus-id score` header), detected.
// The arguments, measure sets and output are scripts/lib/trec-eval-cli.ts (which the unit tests call).
import { readFileSync } from 'node:fs';
import { CliError, trecEvalCli } from './lib/trec-eval-cli';

function read(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read '${path}': ${(e as Error).message}`);
  }
}

try {
  process.stdout.write(trecEvalCli(process.argv.slice(2), read));
} catch (e) {
  if (!(e instanceof CliError)) throw e;
  process.stderr.write(`trec-eval: ${e.message}\n`);
  process.exit(1);
}
