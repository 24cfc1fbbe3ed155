import { describe, expect, it } from 'vitest';
import { highlightRuns } from '../../src/lib/core/retrieval/highlight';
import { analyze } from '../../src/lib/core/retrieval/analyzer';

describe('highlightRuns', () => {
  const terms = (q: string) => new Set(analyze(q));

  it('marks words whose stem is a query term and keeps the text intact', () => {
    const text = 'Treatments for pneumothorax: a treated lung, the Lung’s apex.';
    const runs = highlightRuns(text, terms('treatment of lungs'), analyze);
    expect(runs.map((r) => r.text).join('')).toBe(text);
    // Porter keeps 'treated' (treat) apart from 'treatment'.
    expect(runs.filter((r) => r.hit).map((r) => r.text)).toEqual(['Treatments', 'lung', 'Lung’s']);
  });

  it('does not mark stop words or partial matches', () => {
    const runs = highlightRuns('the theory of the lungfish', terms('the lung'), analyze);
    expect(runs.some((r) => r.hit)).toBe(false);
  });

  it('returns the whole text unmarked for an empty query', () => {
    expect(highlightRuns('abc def', new Set(), analyze)).toEqual([{ text: 'abc def', hit: false }]);
  });
});
