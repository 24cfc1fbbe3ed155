// Where a chart's point labels go, in pixel space: each label takes the first free spot of a few
// around its point (right, left, above, below, then the four corners), free meaning inside the plot
// area and clear of every label already placed and of the given obstacles (dots, error bars). A
// label with no free spot becomes a number, placed the same way (or one line further out), and is
// listed in a key under the chart; with no free spot for a number either it is in the key alone. No two placed boxes intersect
// and every placed box lies inside the area. Pure: the caller measures text and maps data to pixels.

/** An axis-aligned box in pixels (x grows rightwards, y downwards). */
export interface Box {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

export interface LabelRequest {
  /** The point, px. */
  x: number;
  y: number;
  /** The label's text box, px. */
  width: number;
  height: number;
}

export type Side =
  'right' | 'left' | 'above' | 'below' | 'above-right' | 'above-left' | 'below-right' | 'below-left';

/** Spots tried, in order. */
export const SIDES: readonly Side[] = [
  'right',
  'left',
  'above',
  'below',
  'above-right',
  'above-left',
  'below-right',
  'below-left',
];

export type Placement =
  /** The label itself at `box`. */
  | { kind: 'label'; side: Side; box: Box }
  /** Number `n` at `box` (its width from `markerWidth`), the label in the key. */
  | { kind: 'marker'; n: number; side: Side; box: Box }
  /** No room even for a number: the label is in the key only (no number). */
  | { kind: 'key' };

export interface PlacementOptions {
  /** Distance from the point's centre to the nearest edge of its label, px (dot radius + gap). */
  offset?: number;
  /** Space kept between two boxes, px. */
  pad?: number;
  /** Boxes no label may cover (the dots, the error bars). */
  obstacles?: readonly Box[];
  /** The text box of number `n` as a marker. */
  marker?: (n: number) => { width: number; height: number };
}

/** Whether two boxes, each grown by `pad` / 2, intersect (touching edges do not). */
export function intersects(a: Box, b: Box, pad = 0): boolean {
  return a.x0 < b.x1 + pad && b.x0 < a.x1 + pad && a.y0 < b.y1 + pad && b.y0 < a.y1 + pad;
}

/** Whether `inner` lies inside `outer`. */
export function inside(inner: Box, outer: Box): boolean {
  return inner.x0 >= outer.x0 && inner.x1 <= outer.x1 && inner.y0 >= outer.y0 && inner.y1 <= outer.y1;
}

/** The box of a `w`×`h` label on `side` of point (x, y), `d` px from its centre. */
export function boxAt(side: Side, x: number, y: number, w: number, h: number, d: number): Box {
  // A corner spot sits diagonally: its near corner at distance d along both axes' diagonal.
  const c = d / Math.SQRT2;
  const [x0, y0] = (() => {
    switch (side) {
      case 'right':
        return [x + d, y - h / 2];
      case 'left':
        return [x - d - w, y - h / 2];
      case 'above':
        return [x - w / 2, y - d - h];
      case 'below':
        return [x - w / 2, y + d];
      case 'above-right':
        return [x + c, y - c - h];
      case 'above-left':
        return [x - c - w, y - c - h];
      case 'below-right':
        return [x + c, y + c];
      case 'below-left':
        return [x - c - w, y + c];
    }
  })();
  return { x0, y0, x1: x0 + w, y1: y0 + h };
}

/**
 * Places one label per request inside `area`, in order (put the most important first). Returns one
 * placement per request, in the same order; markers are numbered from 1 in request order.
 */
export function placeLabels(
  requests: readonly LabelRequest[],
  area: Box,
  opts: PlacementOptions = {},
): Placement[] {
  const offset = opts.offset ?? 8;
  const pad = opts.pad ?? 2;
  const obstacles = opts.obstacles ?? [];
  const marker = opts.marker ?? ((n: number) => ({ width: 8 * String(n).length, height: 14 }));
  const taken: Box[] = [];
  const free = (b: Box) =>
    inside(b, area) && !taken.some((t) => intersects(b, t, pad)) && !obstacles.some((o) => intersects(b, o));
  const spot = (r: LabelRequest, w: number, h: number, rings = 1) => {
    for (let ring = 0; ring < rings; ring++)
      for (const side of SIDES) {
        const box = boxAt(side, r.x, r.y, w, h, offset + ring * h);
        if (free(box)) return { side, box };
      }
    return null;
  };

  const out: (Placement | null)[] = requests.map((r) => {
    const s = spot(r, r.width, r.height);
    if (!s) return null;
    taken.push(s.box);
    return { kind: 'label', ...s };
  });
  // Numbers after every label that fits: a short number must not take the room of a whole label.
  // A number may also sit one line further out than a label would.
  let n = 0;
  return out.map((p, i) => {
    if (p) return p;
    const m = marker(n + 1);
    const s = spot(requests[i], m.width, m.height, 2);
    if (!s) return { kind: 'key' };
    taken.push(s.box);
    return { kind: 'marker', n: ++n, ...s };
  });
}
