// Sentences and titles of the demo corpora (medquad, xling-med in English), the material
// make-scale-shard recombines, with the sentence-count mix of their documents.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A demo corpus cut into sentences: the pool, the titles and each source document's sentence count. */
export interface SentencePool {
  sentences: string[];
  titles: string[];
  /** Sentences per source document (the length mix generated documents follow). */
  sentenceCounts: number[];
}

/** Splits a text at sentence ends followed by a capital or digit; keeps sentences of 20–400 characters. */
export function sentencesOf(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+(?=[A-Z0-9])/)
    .map((s) => s.trim())
    .filter((s) => s.length >= 20 && s.length <= 400);
}

/** The words of a sentence (whitespace-separated). */
export function wordsOf(sentence: string): string[] {
  return sentence.split(/\s+/).filter(Boolean);
}

/** Reads medquad's and xling-med's English documents under `dataDir` into one deduplicated pool. */
export function sentencePool(dataDir: string): SentencePool {
  const seen = new Set<string>();
  const titles = new Set<string>();
  const sentences: string[] = [];
  const sentenceCounts: number[] = [];
  for (const shard of ['medquad', 'xling-med']) {
    const file = join(dataDir, shard, 'corpus.jsonl');
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line) continue;
      const doc = JSON.parse(line) as { title?: string; text?: string; language?: string };
      if (doc.language && doc.language !== 'en') continue;
      if (doc.title) titles.add(doc.title);
      const own = sentencesOf(doc.text ?? '');
      if (own.length) sentenceCounts.push(own.length);
      for (const s of own)
        if (!seen.has(s)) {
          seen.add(s);
          sentences.push(s);
        }
    }
  }
  return { sentences, titles: [...titles], sentenceCounts };
}
