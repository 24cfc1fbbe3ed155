// Deterministic random weights: one seed per (model seed, tensor name), normal samples from a seeded
// stream, so the same spec gives the same bytes on every machine.

/** 32-bit FNV-1a of a string, then avalanche-mixed: a seed per (model seed, tensor name). */
function seedOf(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Fills `out` with N(0, std²) samples from a mulberry32 stream (Box–Muller, both outputs used). */
function fillNormal(out: Float32Array, seed: number, std: number): void {
  let state = seed | 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
  const TWO_PI = 2 * Math.PI;
  const INV = 1 / 4294967296;
  for (let i = 0; i < out.length; i += 2) {
    const u1 = (next() + 1) * INV; // (0, 1]
    const u2 = next() * INV; // [0, 1)
    const r = std * Math.sqrt(-2 * Math.log(u1));
    out[i] = r * Math.cos(TWO_PI * u2);
    if (i + 1 < out.length) out[i + 1] = r * Math.sin(TWO_PI * u2);
  }
}

/** A tensor: its dims and float32 values (row-major). */
export interface Weight {
  dims: number[];
  data: Float32Array;
}

/** Weights of one model, created on first use and shared by the fp32 and q8 graphs. */
export class WeightStore {
  private readonly map = new Map<string, Weight>();
  constructor(private readonly seed: number) {}
  get(name: string): Weight {
    const w = this.map.get(name);
    if (!w) throw new Error(`weight ${name} was never created`);
    return w;
  }
  has(name: string): boolean {
    return this.map.has(name);
  }
  normal(name: string, dims: number[], std = 0.02): string {
    if (!this.map.has(name)) {
      const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
      fillNormal(data, seedOf(`${this.seed}:${name}`), std);
      this.map.set(name, { dims, data });
    }
    return name;
  }
  fill(name: string, dims: number[], value: number): string {
    if (!this.map.has(name)) {
      this.map.set(name, { dims, data: new Float32Array(dims.reduce((a, b) => a * b, 1)).fill(value) });
    }
    return name;
  }
  set(name: string, dims: number[], data: Float32Array): string {
    this.map.set(name, { dims, data });
    return name;
  }
}
