import { describe, expect, it } from 'vitest';
import { seriesColor, wrapLabel, PALETTE } from '../../src/lib/core/eval/plot-style';

describe('plot style', () => {
  it('wraps a long run name at spaces without losing any word', () => {
    const name = 'RRF k=60 (BM25 k1=0.9 b=0.4 + CLIP tiny (random) · feature fusion (= score fusion 0.5))';
    const lines = wrapLabel(name, 24);
    expect(lines.join(' ')).toBe(name);
    expect(lines.every((l) => l.length <= 24 || !l.includes(' '))).toBe(true);
    expect(lines.length).toBeGreaterThan(3);
  });

  it('cycles the palette', () => {
    expect(seriesColor(0)).toBe(PALETTE[0]);
    expect(seriesColor(PALETTE.length + 1)).toBe(PALETTE[1]);
  });
});
