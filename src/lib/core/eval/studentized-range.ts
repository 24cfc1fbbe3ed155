// The studentized range distribution behind Tukey's HSD: P(Q ≤ q) for Q = (max − min of k standard
// normals) / S, where ν·S² is an independent χ² with ν degrees of freedom, and its inverse.
//
// The probability follows Copenhaver & Holland (1988, "Computation of the distribution of the maximum
// studentized range statistic with application to multiple significance testing of simple effects",
// J. Statist. Comput. Simul. 30), the method R's ptukey uses, with the same quadrature rules, interval
// lengths and cut-offs, so that the values agree with R's to ~1e-13. That is R's accuracy too, not
// the exact distribution's: mostly ~1e-10, 2e-9 for the range of 20 normals at w = 4.5, and much worse
// at df = 2, whose χ density does not vanish at 0 (ptukey(20, 2, 2) is 3e-4 off Student's t).
//
// 1. With σ known (ν = ∞), the range W of k standard normals has
//      P(W ≤ w) = (2Φ(w/2) − 1)^k + 2k ∫_{w/2}^{∞} φ(z) [Φ(z) − Φ(z − w)]^(k−1) dz
//    (all k inside [−w/2, w/2], or the largest one at z > w/2 with the others in [z − w, z], counted
//    twice by symmetry). The integral runs over [w/2, 8] cut into 3 equal parts (2 when w > 3), each
//    with 12-point Gauss–Legendre; nodes with z² > 60 and integrand terms whose bracket is below
//    e^(−30/(k−1)) are skipped, and w ≥ 16 gives 1.
// 2. For finite ν, P(Q ≤ q) = ∫ P(W ≤ q·√(x/2)) g(x) dx with x = 2S², whose density is
//      g(x) = ν^(ν/2) 2^(−ν) / Γ(ν/2) · x^(ν/2 − 1) e^(−νx/4).
//    The integral runs over consecutive intervals [2(i−1)h, 2ih] (i = 1, 2, …, at most 50) with
//    16-point Gauss–Legendre, h = 1, ½, ¼ or ⅛ as ν ≤ 100, ≤ 800, ≤ 5000 or more; nodes where
//    ln(g·h) < −30 are skipped, and it stops once 2ih ≥ 2 and an interval adds ≤ 1e-14 (that last
//    interval is not added). ν > 25,000 is treated as ν = ∞.
//
// The Gauss–Legendre nodes and weights are computed here (Newton's method on the Legendre polynomial),
// and Φ by a series or a continued fraction accurate to ~1e-16 absolute.
//
// The quantile (`qtukey`) is found as R finds it, by the method of Lund & Lund (1983, Applied
// Statistics algorithm AS 190): a closed-form first guess, then secant steps until two successive
// iterates differ by less than 1e-4. Following R's procedure (not solving to full precision) is what
// makes Tukey intervals agree with R's TukeyHSD to 1e-9; `qtukeyPrecise` solves to ~1e-12 instead.
import { logGamma } from './special-functions';

// ---------------------------------------------------------------------------------------------------
// The normal distribution

const SQRT_PI = Math.sqrt(Math.PI);
const SQRT1_2PI = 1 / Math.sqrt(2 * Math.PI);

/**
 * erfc(z) for z ≥ 0, to ~1e-16 absolute and ~1e-13 relative (checked against 40-digit mpmath). Below
 * 2: 1 − erf(z) with erf(z) = (2/√π) e^(−z²) Σ 2^n z^(2n+1) / (1·3·…·(2n+1)) (positive terms, no
 * cancellation inside the sum); from 2: the continued fraction erfc(z) = e^(−z²)/√π · 1/(z + ½/(z +
 * 1/(z + (3/2)/(z + …)))), evaluated upwards from a depth that reaches 1e-16 at the start of its range.
 */
function erfcNonNegative(z: number): number {
  const z2 = z * z;
  if (z < 2) {
    let term = z;
    let sum = z;
    for (let n = 1; n < 200; n++) {
      term *= (2 * z2) / (2 * n + 1);
      sum += term;
      if (term < sum * 1e-17) break;
    }
    return 1 - (2 / SQRT_PI) * Math.exp(-z2) * sum;
  }
  if (z > 27) return 0;
  const depth = z < 2.5 ? 64 : z < 3.5 ? 40 : z < 5 ? 28 : 20;
  let f = z;
  for (let k = depth; k >= 1; k--) f = z + k / 2 / f;
  return Math.exp(-z2) / SQRT_PI / f;
}

/** Φ(x), the standard normal distribution function. */
export function normalCdf(x: number): number {
  if (Number.isNaN(x)) return NaN;
  const z = x * Math.SQRT1_2;
  return z < 0 ? 0.5 * erfcNonNegative(-z) : 1 - 0.5 * erfcNonNegative(z);
}

// ---------------------------------------------------------------------------------------------------
// Gauss–Legendre rules

/** The positive nodes and their weights of the n-point Gauss–Legendre rule on [−1, 1] (n even). */
function gaussLegendre(n: number): { nodes: Float64Array; weights: Float64Array } {
  const half = n / 2;
  const nodes = new Float64Array(half);
  const weights = new Float64Array(half);
  for (let i = 0; i < half; i++) {
    let x = Math.cos((Math.PI * (i + 0.75)) / (n + 0.5));
    let dp = 0;
    for (let iter = 0; iter < 100; iter++) {
      // P_n(x) by the three-term recurrence; P'_n from P_n and P_{n−1}.
      let p0 = 1;
      let p1 = x;
      for (let k = 2; k <= n; k++) {
        const p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      dp = (n * (x * p1 - p0)) / (x * x - 1);
      const dx = p1 / dp;
      x -= dx;
      if (Math.abs(dx) < 1e-17) break;
    }
    nodes[i] = x;
    weights[i] = 2 / ((1 - x * x) * dp * dp);
  }
  return { nodes, weights };
}

const INNER = gaussLegendre(12);
const OUTER = gaussLegendre(16);

// ---------------------------------------------------------------------------------------------------
// The range of k normals (σ known)

/** P(W ≤ w) for the range W of k independent standard normals (step 1 of the file header). */
export function normalRangeCdf(w: number, k: number): number {
  if (!(w > 0)) return 0;
  const half = 0.5 * w;
  const upper = 8;
  if (half >= upper) return 1;
  const inside = 2 * normalCdf(half) - 1;
  let p = inside >= 1 ? 1 : Math.pow(inside, k);
  const parts = w > 3 ? 2 : 3;
  const len = (upper - half) / parts;
  const km1 = k - 1;
  const floor = Math.exp(-30 / km1);
  const { nodes, weights } = INNER;
  const m = nodes.length;
  let total = 0;
  for (let part = 0; part < parts; part++) {
    const lo = half + part * len;
    const mid = lo + 0.5 * len;
    const r = 0.5 * len;
    let s = 0;
    // Nodes in ascending order of z: the first z² > 60 ends the part.
    for (let jj = 0; jj < 2 * m; jj++) {
      const j = jj < m ? jj : 2 * m - 1 - jj;
      const z = mid + (jj < m ? -nodes[j] : nodes[j]) * r;
      const z2 = z * z;
      if (z2 > 60) break;
      const inRange = normalCdf(z) - normalCdf(z - w);
      if (inRange >= floor) s += weights[j] * Math.exp(-0.5 * z2) * Math.pow(inRange, km1);
    }
    total += s * 2 * r * k * SQRT1_2PI;
  }
  p += total;
  if (p <= Math.exp(-30)) return 0;
  return p >= 1 ? 1 : p;
}

// ---------------------------------------------------------------------------------------------------
// The studentized range

function checkArgs(nmeans: number, df: number): void {
  if (!(nmeans >= 2)) throw new RangeError(`studentized range needs nmeans >= 2, got ${nmeans}`);
  if (!(df >= 2)) throw new RangeError(`studentized range needs df >= 2, got ${df}`);
}

/**
 * P(Q ≤ q) for the studentized range of `nmeans` means with `df` degrees of freedom (R's
 * `ptukey(q, nmeans, df)`, one range); `lowerTail: false` gives P(Q > q) as 1 − P(Q ≤ q), as R does.
 * df may be Infinity. nmeans ≥ 2, df ≥ 2.
 */
export function ptukey(q: number, nmeans: number, df: number, lowerTail = true): number {
  checkArgs(nmeans, df);
  if (Number.isNaN(q)) return NaN;
  const lower = studentizedRangeLower(q, nmeans, df);
  return lowerTail ? lower : 1 - lower;
}

function studentizedRangeLower(q: number, k: number, df: number): number {
  if (q <= 0) return 0;
  if (q === Infinity) return 1;
  if (df > 25000) return normalRangeCdf(q, k);
  const halfDf = 0.5 * df;
  const h = df <= 100 ? 1 : df <= 800 ? 0.5 : df <= 5000 ? 0.25 : 0.125;
  // ln of g's constant factor times the half-width h of each interval.
  const logConst = halfDf * Math.log(df) - df * Math.LN2 - logGamma(halfDf) + Math.log(h);
  const power = halfDf - 1;
  const rate = 0.25 * df;
  const { nodes, weights } = OUTER;
  const m = nodes.length;
  let sum = 0;
  for (let i = 1; i <= 50; i++) {
    const mid = (2 * i - 1) * h;
    let s = 0;
    for (let jj = 0; jj < 2 * m; jj++) {
      const j = jj < m ? jj : jj - m;
      const x = jj < m ? mid - nodes[j] * h : mid + nodes[j] * h;
      const logDensity = logConst + power * Math.log(x) - rate * x;
      if (logDensity >= -30)
        s += weights[j] * Math.exp(logDensity) * normalRangeCdf(q * Math.sqrt(0.5 * x), k);
    }
    if (i * h >= 1 && s <= 1e-14) break;
    sum += s;
  }
  return sum > 1 ? 1 : sum;
}

/** Lund & Lund's first guess at the p-quantile (AS 190's qtrng0, from Odeh & Evans' normal quantile). */
function firstGuess(p: number, k: number, df: number): number {
  const tail = 0.5 - 0.5 * p;
  const y = Math.sqrt(Math.log(1 / (tail * tail)));
  const num = (((-0.453642210148e-4 * y - 0.204231210125) * y - 0.342242088547) * y - 1) * y + 0.322232421088;
  const den = (((0.38560700634e-2 * y + 0.10353775285) * y + 0.531103462366) * y + 0.588581570495) * y;
  let t = y + num / (den + 0.99348462606e-1);
  if (df < 120) t += (t * t * t + t) / df / 4;
  let c = 0.8832 - 0.2368 * t;
  if (df < 120) c += -1.214 / df + (1.208 * t) / df;
  return t * (c * Math.log(k - 1) + 1.4142);
}

function checkP(p: number): void {
  if (!(p >= 0 && p <= 1)) throw new RangeError(`probability must be in [0, 1], got ${p}`);
}

/**
 * The p-quantile of the studentized range (R's `qtukey(p, nmeans, df)`, one range): secant iteration
 * from Lund & Lund's first guess, the second iterate one unit below it (above it when P(first) < p),
 * kept ≥ 0, stopping when two iterates differ by < 1e-4 (at most 50 steps). nmeans ≥ 2, df ≥ 2.
 */
export function qtukey(p: number, nmeans: number, df: number): number {
  checkArgs(nmeans, df);
  checkP(p);
  if (p === 0) return 0;
  if (p === 1) return Infinity;
  let x0 = firstGuess(p, nmeans, df);
  let f0 = studentizedRangeLower(x0, nmeans, df) - p;
  let x1 = f0 > 0 ? Math.max(0, x0 - 1) : x0 + 1;
  let f1 = studentizedRangeLower(x1, nmeans, df) - p;
  let x = x1;
  for (let iter = 1; iter < 50; iter++) {
    x = x1 - (f1 * (x1 - x0)) / (f1 - f0);
    f0 = f1;
    x0 = x1;
    if (x < 0) x = 0;
    f1 = studentizedRangeLower(x, nmeans, df) - p;
    x1 = x;
    if (Math.abs(x1 - x0) < 1e-4) return x;
  }
  return x;
}

/**
 * The p-quantile solved to ~1e-12 relative instead of R's 1e-4 stopping rule (R's `qtukey` is off by
 * up to ~3e-7): a bracket around `qtukey`'s answer, then the Illinois variant of regula falsi. For
 * checks and for users who want the quantile itself. nmeans ≥ 2, df ≥ 2.
 */
export function qtukeyPrecise(p: number, nmeans: number, df: number): number {
  checkArgs(nmeans, df);
  checkP(p);
  if (p === 0) return 0;
  if (p === 1) return Infinity;
  const f = (x: number) => studentizedRangeLower(x, nmeans, df) - p;
  const start = qtukey(p, nmeans, df);
  let step = 1e-3 * (1 + start);
  let lo = Math.max(0, start - step);
  let flo = f(lo);
  while (flo > 0 && lo > 0) {
    step *= 4;
    lo = Math.max(0, lo - step);
    flo = f(lo);
  }
  step = 1e-3 * (1 + start);
  let hi = start + step;
  let fhi = f(hi);
  while (fhi < 0) {
    step *= 4;
    hi += step;
    if (hi > 1e6) return Infinity;
    fhi = f(hi);
  }
  let side = 0;
  for (let iter = 0; iter < 100 && hi - lo > 1e-12 * hi; iter++) {
    const x = (lo * fhi - hi * flo) / (fhi - flo);
    const fx = f(x);
    if (fx === 0) return x;
    if (fx < 0) {
      lo = x;
      flo = fx;
      if (side === -1) fhi *= 0.5;
      side = -1;
    } else {
      hi = x;
      fhi = fx;
      if (side === 1) flo *= 0.5;
      side = 1;
    }
  }
  return (lo * fhi - hi * flo) / (fhi - flo);
}
