// log-exp.ts: ln and exp rounded to the nearest double, which the geometric means (gm_map, gm_bpref) use
// so that they equal trec_eval's (C's log and exp in glibc, within 0.52 ulp), and the worst distance to
// trec_eval 10.0 and 9.0.8 over every golden gm_map / gm_bpref value.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  evaluate,
  expandMeasureSpec,
  geometricMeanAp,
  TREC_EVAL_SETS,
  type EvalOptions,
} from '../../src/lib/core/eval/metrics';
import { expNearest, logNearest } from '../../src/lib/core/eval/log-exp';
import { parseQrels, parseRun } from '../../src/lib/core/eval/trec';
import { GOLDEN_DIR } from '../paths';

/**
 * Inputs where V8's Math.log / Math.exp are not the nearest double: [function, x, nearest double of
 * ln x or e^x]. The nearest doubles come from Python's decimal module at 70 digits (correctly rounded);
 * the inputs are AP-like fractions a/b (b <= 300) and exp arguments in [-11.6, 0] (means of such logs).
 */
const HARD: [string, number, number][] = [
  ['log', 0.9877049180327869, -0.012371291802546829],
  ['log', 0.6086956521739131, -0.496436886313891],
  ['log', 0.09322033898305085, -2.372789351667294],
  ['log', 0.613013698630137, -0.48936799642752676],
  ['log', 0.7158469945355191, -0.33428882964026935],
  ['log', 0.6210526315789474, -0.47633944769482134],
  ['log', 0.5527426160337553, -0.5928628179339795],
  ['log', 0.6745562130177515, -0.393700266528578],
  ['log', 0.16279069767441862, -1.8152899666382492],
  ['log', 0.1522491349480969, -1.882237054194171],
  ['log', 0.4161849710982659, -0.8766254754817236],
  ['log', 0.18772563176895307, -1.6727737876059112],
  ['log', 0.5766871165644172, -0.5504554185367584],
  ['log', 0.3978494623655914, -0.9216815805090316],
  ['log', 0.6382978723404256, -0.44895022004790314],
  ['log', 0.17006802721088435, -1.7715567619105357],
  ['log', 0.6086956521739131, -0.496436886313891],
  ['log', 0.28431372549019607, -1.2576769832977972],
  ['log', 0.68, -0.3856624808119846],
  ['log', 0.34375, -1.067840630001356],
  ['exp', -5.177807715760084, 0.005640358138466531],
  ['exp', -0.632096449093121, 0.5314764189880014],
  ['exp', -10.490188075927914, 2.780796476598986e-5],
  ['exp', -8.711979743895931, 0.00016460206176376911],
  ['exp', -3.625708009367687, 0.0266302362035182],
  ['exp', -10.71530552169493, 2.220250313319087e-5],
  ['exp', -5.321660824700756, 0.004884634463199662],
  ['exp', -9.031846859903617, 0.00011954151274817187],
  ['exp', -8.553167204340776, 0.0001929330723977901],
  ['exp', -6.33171248559275, 0.0017789846734574428],
  ['exp', -11.16480336192805, 1.4164051865639903e-5],
  ['exp', -2.4444899261257276, 0.08677038292128116],
  ['exp', -9.870338301698585, 5.168524045185462e-5],
  ['exp', -8.609745598392298, 0.00018232028708759675],
  ['exp', -1.6436553522244721, 0.1932722712760567],
  ['exp', -5.1240406087195804, 0.005951924842973986],
  ['exp', -1.7096397413579403, 0.18093096282032498],
  ['exp', -7.236206294040922, 0.0007200381983907804],
  ['exp', -0.876227729706153, 0.41635053983732667],
  ['exp', -4.693278696588896, 0.009156615123515401],
];

/** Distance in units in the last place between two doubles of the same sign. */
function ulps(a: number, b: number): number {
  const view = new DataView(new ArrayBuffer(16));
  view.setFloat64(0, a);
  view.setFloat64(8, b);
  return Number(view.getBigInt64(0) - view.getBigInt64(8));
}

describe('logNearest and expNearest', () => {
  it('give the nearest double where Math.log and Math.exp are an ulp off', () => {
    expect(HARD).toHaveLength(40);
    for (const [f, x, want] of HARD) {
      const math = f === 'log' ? Math.log(x) : Math.exp(x);
      const got = f === 'log' ? logNearest(x) : expNearest(x);
      expect(got, `${f}(${x})`).toBe(want);
      // The table only holds inputs where V8 is off (by one ulp): if V8 changes, the table says so.
      expect(Math.abs(ulps(math, want)), `Math.${f}(${x})`).toBe(1);
    }
  });

  it('are exact where the value is exact, and fall back to Math outside their range', () => {
    expect(logNearest(1)).toBe(0);
    expect(expNearest(0)).toBe(1);
    expect(logNearest(2)).toBe(Math.LN2);
    expect(logNearest(0.5)).toBe(-Math.LN2);
    expect(logNearest(8)).toBe(3 * Math.LN2);
    expect(expNearest(1)).toBe(Math.E);
    expect(logNearest(0)).toBe(-Infinity);
    expect(logNearest(-1)).toBeNaN();
    expect(logNearest(Infinity)).toBe(Infinity);
    expect(logNearest(NaN)).toBeNaN();
    expect(expNearest(-Infinity)).toBe(0);
    expect(expNearest(1000)).toBe(Infinity);
    expect(expNearest(NaN)).toBeNaN();
    // gm_map's floor: ln(0.00001) and back (both the nearest doubles, as glibc gives them).
    expect(logNearest(0.00001)).toBe(-11.512925464970229);
    expect(expNearest(-11.512925464970229)).toBe(9.999999999999997e-6);
  });

  it('are within an ulp of Math.log / Math.exp everywhere (a sweep over 20 decades)', () => {
    for (let i = 0; i < 4000; i++) {
      const x = (1 + ((i * 0.6180339887498949) % 1)) * 10 ** ((i % 40) - 20);
      expect(Math.abs(ulps(logNearest(x), Math.log(x))), `log ${x}`).toBeLessThanOrEqual(1);
      const y = ((i * 0.7548776662466927) % 1) * 1200 - 600;
      expect(Math.abs(ulps(expNearest(y), Math.exp(y))), `exp ${y}`).toBeLessThanOrEqual(1);
    }
  });

  it('geometricMeanAp (facets) uses them: the mean of the APs of the hard inputs', () => {
    const aps = HARD.filter(([f]) => f === 'log').map(([, x]) => x);
    let s = 0;
    for (const [f, , want] of HARD) if (f === 'log') s += want;
    expect(geometricMeanAp(aps)).toBe(expNearest(s / aps.length));
  });
});

describe('gm_map and gm_bpref against every golden value of trec_eval 10.0 and 9.0.8', () => {
  const dirs = ['metrics-all', 'metrics-908'].map((d) => resolve(GOLDEN_DIR, '..', d));

  it('are all 0 ulps away (52 values: 13 files of each version, two measures)', () => {
    let worst = 0;
    let n = 0;
    for (const dir of dirs) {
      for (const file of readdirSync(dir).filter((f) => f.endsWith('.json') && f !== 'index.json')) {
        const g = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
          case: string;
          trec_eval_args: string[];
          all_full: Record<string, number>;
        };
        const caseDir = join(GOLDEN_DIR, g.case);
        const qrels = parseQrels(readFileSync(join(caseDir, 'qrels.txt'), 'utf8'));
        const run = parseRun(readFileSync(join(caseDir, 'run.txt'), 'utf8'));
        const opts: EvalOptions = { float32Ties: dir.endsWith('908') };
        const a = g.trec_eval_args;
        for (let i = 0; i < a.length; i++) {
          if (a[i] === '-c') opts.complete = true;
          else if (a[i] === '-l') opts.relevanceLevel = Number(a[++i]);
          else if (a[i] === '-M') opts.maxDocs = Number(a[++i]);
        }
        const r = evaluate(qrels, run, ['gm_map', 'gm_bpref'], opts);
        for (const m of ['gm_map', 'gm_bpref']) {
          n++;
          worst = Math.max(worst, Math.abs(ulps(r.all[m], g.all_full[m])));
        }
      }
    }
    expect(n).toBe(52);
    expect(worst).toBe(0);
  });

  it('the measure sets name both', () => {
    expect(TREC_EVAL_SETS.all_trec.flatMap(expandMeasureSpec)).toEqual(
      expect.arrayContaining(['gm_map', 'gm_bpref']),
    );
  });
});
