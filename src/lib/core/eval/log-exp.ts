// Natural log and exp rounded to the nearest double, for the geometric means (gm_map, gm_bpref) that
// trec_eval computes with C's log and exp. V8's Math.log and Math.exp are fdlibm ports, within 1 ulp but
// not always the nearest double; glibc's (2.28 and later) are within 0.52 ulp, i.e. the nearest double
// except when the exact value lies within 0.02 ulp of a midpoint. A geometric mean sums one log per query
// and ends in one exp, so single-ulp differences in the logs add up and exp turns an error in its argument
// into a relative error of the result: with Math.log/Math.exp, gm_map landed up to 4 ulps from trec_eval
// 10.0's and 6 from 9.0.8's on random runs (README, Metrics).
// These compute in double-double arithmetic (about 100 bits) and round once, so they return the nearest
// double (barring an exact value within ~2^-100 relative of a midpoint), which is glibc's answer in all
// but those rare near-midpoint cases. Written from the textbook definitions (argument reduction by powers
// of two, atanh series for log, Taylor series for exp). Pure: no DOM, no Node APIs.

/** A double-double: the unevaluated sum hi + lo, |lo| <= ulp(hi) / 2. */
type DD = [number, number];

/** ln 2 as a double-double: LN2_HI is the double nearest ln 2, LN2_LO the nearest double to the rest. */
const LN2_HI = 0.6931471805599453;
const LN2_LO = 2.3190468138462996e-17;

/** a + b exactly, as a double-double (Knuth's two-sum). */
function twoSum(a: number, b: number): DD {
  const s = a + b;
  const bb = s - a;
  return [s, a - (s - bb) + (b - bb)];
}

/** a + b exactly when |a| >= |b| (Dekker's fast two-sum). */
function fastTwoSum(a: number, b: number): DD {
  const s = a + b;
  return [s, b - (s - a)];
}

const SPLITTER = 134217729; // 2^27 + 1

/** a · b exactly, as a double-double (Dekker's product with Veltkamp splitting; no fma in JS). */
function twoProd(a: number, b: number): DD {
  const p = a * b;
  let t = SPLITTER * a;
  const ah = t - (t - a);
  const al = a - ah;
  t = SPLITTER * b;
  const bh = t - (t - b);
  const bl = b - bh;
  return [p, ah * bh - p + ah * bl + al * bh + al * bl];
}

function add(x: DD, y: DD): DD {
  const s = twoSum(x[0], y[0]);
  const t = twoSum(x[1], y[1]);
  let r = fastTwoSum(s[0], s[1] + t[0]);
  r = fastTwoSum(r[0], r[1] + t[1]);
  return r;
}

function mul(x: DD, y: DD): DD {
  const p = twoProd(x[0], y[0]);
  return fastTwoSum(p[0], p[1] + (x[0] * y[1] + x[1] * y[0]));
}

function div(x: DD, y: DD): DD {
  // Long division: a first quotient, then the quotient of the remainder.
  const q1 = x[0] / y[0];
  const r = add(x, neg(mul(y, [q1, 0])));
  const q2 = r[0] / y[0];
  const r2 = add(r, neg(mul(y, [q2, 0])));
  const q3 = r2[0] / y[0];
  return add(fastTwoSum(q1, q2), [q3, 0]);
}

function neg(x: DD): DD {
  return [-x[0], -x[1]];
}

/** The double nearest the double-double's value (a correctly rounded sum: hi + lo in one addition). */
function round(x: DD): number {
  return x[0] + x[1];
}

/** 1/(2k+1) for the atanh series, k = 0..LOG_TERMS - 1, as double-doubles. */
const LOG_TERMS = 24;
const ODD_RECIPROCALS: DD[] = Array.from({ length: LOG_TERMS }, (_, k) => div([1, 0], [2 * k + 1, 0]));
/** 1/n for the exp Taylor series, n = 1..EXP_TERMS. */
const EXP_TERMS = 27;
const RECIPROCALS: DD[] = Array.from({ length: EXP_TERMS + 1 }, (_, n) => (n ? div([1, 0], [n, 0]) : [0, 0]));

const view = new DataView(new ArrayBuffer(8));

/**
 * ln x rounded to the nearest double, for positive normal x; other inputs (0, negative, subnormal,
 * Infinity, NaN) get Math.log's answer, which is exact for them or not needed here.
 */
export function logNearest(x: number): number {
  if (!(x >= 2.2250738585072014e-308) || x === Infinity) return Math.log(x);
  if (x === 1) return 0;
  // x = 2^e · m with m in [1, 2), then m in [sqrt(1/2), sqrt(2)) so that ln m is small.
  view.setFloat64(0, x);
  const hi = view.getUint32(0);
  let e = ((hi >>> 20) & 0x7ff) - 1023;
  view.setUint32(0, (hi & 0x800fffff) | 0x3ff00000);
  let m = view.getFloat64(0);
  if (m > Math.SQRT2) {
    m /= 2;
    e++;
  }
  // ln m = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), s = (m - 1)/(m + 1), |s| <= 0.1716. m - 1 is exact.
  const s = div([m - 1, 0], twoSum(m, 1));
  const s2 = mul(s, s);
  let sum = ODD_RECIPROCALS[LOG_TERMS - 1];
  for (let k = LOG_TERMS - 2; k >= 0; k--) sum = add(mul(sum, s2), ODD_RECIPROCALS[k]);
  const lnM = mul(mul(s, sum), [2, 0]);
  // + e · ln 2, in double-double.
  const eLn2 = add(twoProd(e, LN2_HI), twoProd(e, LN2_LO));
  return round(add(eLn2, lnM));
}

/**
 * e^x rounded to the nearest double, for |x| <= 600 (both halves of the result well inside the normal range); other
 * inputs get Math.exp's answer.
 */
export function expNearest(x: number): number {
  if (!(Math.abs(x) <= 600)) return Math.exp(x);
  if (x === 0) return 1;
  // x = k ln 2 + r, |r| <= ln 2 / 2 (a little more from rounding k), r in double-double.
  const k = Math.round(x / LN2_HI);
  const r = add(add([x, 0], neg(twoProd(k, LN2_HI))), neg(twoProd(k, LN2_LO)));
  // e^r = 1 + r (1 + r/2 (1 + r/3 (... (1 + r/N)))), Horner from the innermost term.
  let sum: DD = [1, 0];
  for (let n = EXP_TERMS; n >= 1; n--) sum = add([1, 0], mul(mul(r, RECIPROCALS[n]), sum));
  // Times 2^k: exact on both halves (|k| <= 866 keeps them normal or zero).
  const scale = 2 ** k;
  return round([sum[0] * scale, sum[1] * scale]);
}
