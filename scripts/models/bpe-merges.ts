// The BPE merge trainer shared by the WordPiece (BERT) and byte-level BPE (CLIP) tokenizer builders.

/**
 * Learns merges over a word-frequency table. Each word starts as a symbol sequence; the most frequent
 * adjacent pair (ties broken by the pair's strings) is merged until `maxMerges` or `minFrequency`.
 */
export function trainMerges(
  words: Map<string, number>,
  split: (word: string) => string[],
  join: (a: string, b: string) => string,
  maxMerges: number,
  minFrequency: number,
): Array<[string, string]> {
  const symbols: string[] = [];
  const symbolId = new Map<string, number>();
  const intern = (s: string): number => {
    let id = symbolId.get(s);
    if (id === undefined) {
      id = symbols.length;
      symbols.push(s);
      symbolId.set(s, id);
    }
    return id;
  };
  const sorted = [...words.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const seqs: number[][] = sorted.map(([w]) => split(w).map(intern));
  const freq = sorted.map(([, c]) => c);
  const K = 1 << 22;
  const pairCount = new Map<number, number>();
  const pairWords = new Map<number, Set<number>>();
  const addPairs = (w: number, sign: number, changed: Set<number> | null): void => {
    const s = seqs[w];
    for (let i = 0; i + 1 < s.length; i++) {
      const key = s[i] * K + s[i + 1];
      pairCount.set(key, (pairCount.get(key) ?? 0) + sign * freq[w]);
      if (sign > 0) {
        let set = pairWords.get(key);
        if (!set) pairWords.set(key, (set = new Set()));
        set.add(w);
      }
      changed?.add(key);
    }
  };
  for (let w = 0; w < seqs.length; w++) addPairs(w, 1, null);

  // Max-heap of [count, key]; stale entries are skipped on pop.
  const heap: Array<[number, number]> = [];
  const better = (a: [number, number], b: [number, number]): boolean => {
    if (a[0] !== b[0]) return a[0] > b[0];
    const a0 = symbols[Math.floor(a[1] / K)];
    const b0 = symbols[Math.floor(b[1] / K)];
    if (a0 !== b0) return a0 < b0;
    return symbols[a[1] % K] < symbols[b[1] % K];
  };
  const push = (e: [number, number]): void => {
    heap.push(e);
    let i = heap.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!better(heap[i], heap[p])) break;
      [heap[i], heap[p]] = [heap[p], heap[i]];
      i = p;
    }
  };
  const pop = (): [number, number] | undefined => {
    const top = heap[0];
    const end = heap.pop();
    if (heap.length > 0 && end) {
      heap[0] = end;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && better(heap[l], heap[m])) m = l;
        if (r < heap.length && better(heap[r], heap[m])) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m], heap[i]];
        i = m;
      }
    }
    return top;
  };
  for (const [key, count] of pairCount) push([count, key]);

  const merges: Array<[string, string]> = [];
  while (merges.length < maxMerges) {
    const top = pop();
    if (!top) break;
    const [count, key] = top;
    if (pairCount.get(key) !== count) continue; // stale
    if (count < minFrequency) break;
    const a = Math.floor(key / K);
    const b = key % K;
    merges.push([symbols[a], symbols[b]]);
    const merged = intern(join(symbols[a], symbols[b]));
    const changed = new Set<number>();
    for (const w of pairWords.get(key) ?? []) {
      const s = seqs[w];
      let has = false;
      for (let i = 0; i + 1 < s.length; i++) if (s[i] === a && s[i + 1] === b) has = true;
      if (!has) continue;
      addPairs(w, -1, changed);
      const out: number[] = [];
      for (let i = 0; i < s.length; i++) {
        if (i + 1 < s.length && s[i] === a && s[i + 1] === b) {
          out.push(merged);
          i++;
        } else out.push(s[i]);
      }
      seqs[w] = out;
      addPairs(w, 1, changed);
    }
    pairWords.delete(key);
    for (const k of changed) {
      const c = pairCount.get(k) ?? 0;
      if (c <= 0) pairCount.delete(k);
      else push([c, k]);
    }
  }
  return merges;
}
