import { describe, expect, it } from 'vitest';
import {
  boxAt,
  inside,
  intersects,
  placeLabels,
  type Box,
  type LabelRequest,
  type Placement,
} from '../../src/lib/core/eval/label-placement';
import { Xoshiro128 } from '../../src/lib/core/eval/random';

const AREA: Box = { x0: 56, y0: 20, x1: 366, y1: 290 };
const CHAR = 7.5;
const H = 16;
const req = (x: number, y: number, text: string): LabelRequest => ({
  x,
  y,
  width: text.length * CHAR,
  height: H,
});

function boxes(ps: Placement[]): Box[] {
  return ps.flatMap((p) => (p.kind === 'key' ? [] : [p.box]));
}

function expectDisjointInside(ps: Placement[], area = AREA) {
  const bs = boxes(ps);
  for (const b of bs) expect(inside(b, area)).toBe(true);
  for (let i = 0; i < bs.length; i++)
    for (let j = i + 1; j < bs.length; j++)
      expect(intersects(bs[i], bs[j]), `boxes ${i} and ${j}`).toBe(false);
}

/** What the chart did before: every label up and to the right of its point (dx 6, dy −8). */
function fixedOffset(r: LabelRequest): Box {
  const x0 = r.x + 6;
  const yc = r.y - 8;
  return { x0, y0: yc - r.height / 2, x1: x0 + r.width, y1: yc + r.height / 2 };
}

describe('label placement', () => {
  it('separates labels of points at one x with close means (exact, q8, fp16 at the same memory)', () => {
    const rs = [req(120, 150, 'exact'), req(120, 154, 'q8'), req(120, 147, 'fp16')];
    // The old fixed offset drew them over one another.
    expect(intersects(fixedOffset(rs[0]), fixedOffset(rs[1]))).toBe(true);
    const ps = placeLabels(rs, AREA, { offset: 8 });
    expectDisjointInside(ps);
    expect(ps.every((p) => p.kind === 'label')).toBe(true);
    expect(new Set(ps.map((p) => (p.kind === 'label' ? p.side : '')))).toEqual(
      new Set(['right', 'left', 'above']),
    );
  });

  it('keeps a label near the right edge inside the plot (the old one ran out of it)', () => {
    const r = req(360, 100, '4-bit → 2000 → 100');
    expect(inside(fixedOffset(r), AREA)).toBe(false);
    const [p] = placeLabels([r], AREA);
    expect(p.kind).toBe('label');
    if (p.kind === 'label') {
      expect(p.side).toBe('left');
      expect(inside(p.box, AREA)).toBe(true);
    }
  });

  it('never covers an obstacle (another point’s dot or error bar)', () => {
    const dot: Box = { x0: 140, y0: 96, x1: 148, y1: 104 };
    const [p] = placeLabels([req(120, 100, 'ef 64')], AREA, { obstacles: [dot] });
    expect(p.kind).toBe('label');
    if (p.kind === 'label') {
      expect(p.side).not.toBe('right');
      expect(intersects(p.box, dot)).toBe(false);
    }
  });

  it('falls back to numbers, then to the key alone, when a crowd leaves no room', () => {
    // A narrow plot: a short label fits, the long ones do not (numbers then), and twelve points on
    // one spot leave no room even for every number (the key alone then).
    const small: Box = { x0: 0, y0: 0, x1: 120, y1: 80 };
    const rs = [
      req(20, 12, 'q8'),
      ...Array.from({ length: 12 }, (_, i) => req(80, 40, `HNSW M 16, ef ${16 * (i + 1)}`)),
    ];
    const ps = placeLabels(rs, small, {
      offset: 6,
      marker: (n) => ({ width: 8 * String(n).length, height: H }),
    });
    expectDisjointInside(ps, small);
    const kinds = ps.map((p) => p.kind);
    expect(kinds).toContain('label');
    expect(kinds).toContain('marker');
    expect(kinds).toContain('key');
    // Markers count 1, 2, … in request order.
    const ns = ps.flatMap((p) => (p.kind === 'marker' ? [p.n] : []));
    expect(ns).toEqual(ns.map((_, i) => i + 1));
  });

  it('random crowds: no two placed boxes intersect, all inside the area', () => {
    const rng = new Xoshiro128(37);
    const rand = () => rng.nextFloat();
    for (let t = 0; t < 200; t++) {
      const n = 1 + Math.floor(rand() * 14);
      const rs = Array.from({ length: n }, () => {
        const len = 2 + Math.floor(rand() * 22);
        return req(
          AREA.x0 + rand() * (AREA.x1 - AREA.x0),
          AREA.y0 + rand() * (AREA.y1 - AREA.y0),
          'x'.repeat(len),
        );
      });
      const obstacles = rs.map((r) => ({ x0: r.x - 4, y0: r.y - 4, x1: r.x + 4, y1: r.y + 4 }));
      const ps = placeLabels(rs, AREA, { obstacles });
      expect(ps).toHaveLength(n);
      expectDisjointInside(ps);
      for (const b of boxes(ps)) for (const o of obstacles) expect(intersects(b, o)).toBe(false);
    }
  });

  it('puts the spots where their names say', () => {
    const r = boxAt('right', 100, 100, 30, 10, 8);
    expect(r).toEqual({ x0: 108, y0: 95, x1: 138, y1: 105 });
    const l = boxAt('left', 100, 100, 30, 10, 8);
    expect(l.x1).toBe(92);
    const a = boxAt('above', 100, 100, 30, 10, 8);
    expect([a.x0, a.y1]).toEqual([85, 92]);
    const b = boxAt('below', 100, 100, 30, 10, 8);
    expect(b.y0).toBe(108);
  });
});
