// Query-term highlighting for lexical results: a document text split into runs, each marked when one
// of its words analyzes to a term of the query (the same analysis BM25 matched on).

/** A run of the text; `hit` when it is a word whose analyzed term is one of the query's. */
export interface TextRun {
  text: string;
  hit: boolean;
}

const WORD_RE = /[\p{L}\p{N}\p{M}]+(?:['’][\p{L}]+)*/gu;

/**
 * Splits `text` into runs (together they are `text` again) and marks the words whose analysis shares
 * a term with `queryTerms`. `analyze` is the index's analyzer, so stems match as BM25 saw them.
 */
export function highlightRuns(
  text: string,
  queryTerms: ReadonlySet<string>,
  analyze: (s: string) => string[],
): TextRun[] {
  if (queryTerms.size === 0) return text ? [{ text, hit: false }] : [];
  const out: TextRun[] = [];
  let last = 0;
  const push = (t: string, hit: boolean) => {
    if (!t) return;
    const prev = out.at(-1);
    if (prev && prev.hit === hit) prev.text += t;
    else out.push({ text: t, hit });
  };
  for (const m of text.matchAll(WORD_RE)) {
    push(text.slice(last, m.index), false);
    push(
      m[0],
      analyze(m[0]).some((t) => queryTerms.has(t)),
    );
    last = m.index + m[0].length;
  }
  push(text.slice(last), false);
  return out;
}
