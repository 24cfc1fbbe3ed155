// Shared look of Loupe's plots: a colour-blind-safe palette (Okabe & Ito) and label helpers, so
// charts read on a slide and the exported files look like the page.

/** Okabe–Ito: distinguishable under the common colour-vision deficiencies. */
export const PALETTE = [
  '#0072B2',
  '#E69F00',
  '#009E73',
  '#CC79A7',
  '#56B4E9',
  '#D55E00',
  '#000000',
  '#F0E442',
];

/** Font size of chart text, px (readable on a slide). */
export const PLOT_FONT_PX = 13;

/**
 * Top and bottom margins that keep an axis's title ("↑ …" above, "… →" below) clear of the tick
 * labels at PLOT_FONT_PX: Plot's defaults (20 and 30 px) are laid out for its own 10 px text, and at
 * 13 px the title ran over the highest and the rightmost tick labels.
 */
export const AXIS_MARGINS = { marginTop: 30, marginBottom: 44 } as const;

/** The colour of the i-th series. */
export function seriesColor(i: number): string {
  return PALETTE[i % PALETTE.length];
}

/**
 * Breaks a label into lines of at most `width` characters at spaces (a word longer than that stands
 * on its own line), so full run names fit a legend or an axis without being cut.
 */
export function wrapLabel(label: string, width = 28): string[] {
  const lines: string[] = [];
  let cur = '';
  for (const word of label.split(/\s+/).filter(Boolean)) {
    if (cur && cur.length + 1 + word.length > width) {
      lines.push(cur);
      cur = word;
    } else cur = cur ? `${cur} ${word}` : word;
  }
  if (cur) lines.push(cur);
  return lines;
}
