// Small helpers the shard reader's files share: JSON value checks and descriptions for messages, and the
// line of a JSON syntax error (engines word and locate JSON.parse errors differently).

/** A parsed JSON object. */
export type Json = Record<string, unknown>;

/** Examples listed in a warning that counts many cases. */
export const EXAMPLES = 5;

/** True for a JSON object (not null, not a list). */
export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Short human description of a JSON value, for "found …" in messages. */
export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return v.length ? 'a list' : 'an empty list';
  switch (typeof v) {
    case 'string':
      return `the string ${JSON.stringify(truncate(v, 40))}`;
    case 'number':
      return `the number ${v}`;
    case 'boolean':
      return `${v}`;
    case 'object':
      return 'an object';
    default:
      return typeof v;
  }
}

/** `s` cut to `n` characters, with an ellipsis when cut. */
export function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

/** The message of a thrown value. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** `o` without its undefined fields. */
export function pick<T extends Record<string, unknown>>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

/** 1-based line of character `index` in `text`. */
export function lineAtChar(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < index; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

/** 1-based line of byte `offset` in UTF-8 `bytes`. */
export function lineAtByte(bytes: Uint8Array, offset: number): number {
  let line = 1;
  for (let i = bytes.indexOf(0x0a); i >= 0 && i < offset; i = bytes.indexOf(0x0a, i + 1)) line++;
  return line;
}

/**
 * Line of the first JSON syntax error. Engines word (and locate) JSON.parse errors differently, and V8's
 * "Unexpected token" message has no position at all, so the text is re-scanned with a small validator.
 */
export function jsonErrorLine(text: string): number {
  // A truncated file fails at its very end; point at its last non-blank line rather than past it.
  const end = text.trimEnd().length;
  return lineAtChar(text, Math.min(jsonErrorOffset(text), Math.max(0, end - 1)));
}

/** Offset of the first JSON syntax error in `text` (text.length when it is truncated). */
function jsonErrorOffset(text: string): number {
  let i = 0;
  const n = text.length;
  const fail = (): never => {
    throw i;
  };
  const ws = (): void => {
    while (i < n && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const lit = (word: string): void => {
    for (const c of word) {
      if (text[i] !== c) fail();
      i++;
    }
  };
  const str = (): void => {
    i++; // opening quote
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return;
      }
      if (c < 0x20) fail();
      if (c === 0x5c) {
        i++;
        const e = text[i];
        if (e === 'u') {
          for (let k = 1; k <= 4; k++) if (!/[0-9a-fA-F]/.test(text[i + k] ?? '')) fail();
          i += 5;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i++;
        else fail();
      } else i++;
    }
    fail();
  };
  const num = (): void => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) fail();
    i += m![0].length;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        str();
        ws();
        if (text[i] !== ':') fail();
        i++;
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') {
          i++;
          return;
        } else fail();
      }
    } else if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') {
          i++;
          return;
        } else fail();
      }
    } else if (c === '"') str();
    else if (c === 't') lit('true');
    else if (c === 'f') lit('false');
    else if (c === 'n') lit('null');
    else num();
  };
  try {
    value();
    ws();
    if (i < n) fail();
    return n;
  } catch (at) {
    if (typeof at === 'number') return Math.min(at, n);
    throw at;
  }
}
