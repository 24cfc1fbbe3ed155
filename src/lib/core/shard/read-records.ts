// The fields of one JSONL record (a corpus.jsonl, queries.jsonl or qrels.jsonl line): the line parsed as
// an object, required strings, ids by the spec's rules (strict) or upstream's (lenient), image paths and
// image lists (remembered for the image pass), and the leftover fields that become metadata.

import type { ImageRef, Metadata } from '../types';
import { LIMIT_OPTIONS } from './limits';
import type { Line } from './lines';
import { describe, errorMessage, isObject, truncate, type Json } from './json-text';
import type { ShardReadContext } from './read-context';

/** The spec's id rule ("BEIR + images"). */
export const STRICT_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;
/** What {@link STRICT_ID} asks for, worded for messages. */
export const ID_RULE = 'is not a valid id: use only A-Z a-z 0-9 _ . : - and start with a letter or digit';

/** MAX_ITEM_IMAGES: images one document or query may list. */
export const MAX_ITEM_IMAGES = 64;

/** The line as a JSON object; null (after an issue) when it is not one or has an over-long field. */
export function parseObject(ctx: ShardReadContext, file: string, l: Line): Json | null {
  let v: unknown;
  try {
    v = JSON.parse(l.text);
  } catch (e) {
    ctx.issue({
      file,
      line: l.line,
      code: 'malformed-json',
      // The parser's place is within this line: said as a character, not as V8's "(line 1 column 512)"
      // or Firefox's "at line 1 column 512", which read as a second line number.
      message: `malformed JSON: ${truncate(
        errorMessage(e).replace(
          / at position (\d+)(?: \(line 1 column \d+\))?| at line 1 column (\d+)(?= of the JSON data)/,
          (_, p, c) => ` at character ${c ?? Number(p) + 1} of the line`,
        ),
        200,
      )}`,
    });
    return null;
  }
  if (!isObject(v)) {
    ctx.issue({
      file,
      line: l.line,
      code: 'not-object',
      message: `expected one JSON object per line, found ${describe(v)}`,
    });
    return null;
  }
  const long = longField(v, ctx.limits.maxFieldChars);
  if (long) {
    ctx.issue({
      file,
      line: l.line,
      code: 'field-too-large',
      message:
        `field "${long.key}" has ${long.length} characters, more than the limit of ${ctx.limits.maxFieldChars}. ` +
        `No real corpus has such a field: check the export, or raise the limit with ${LIMIT_OPTIONS.maxFieldChars.name}=<Mi characters>`,
    });
    return null;
  }
  return v;
}

/** A required string field; null (after an issue) when missing or not a string. */
export function reqString(
  ctx: ShardReadContext,
  file: string,
  line: number,
  o: Json,
  key: string,
): string | null {
  const v = o[key];
  if (v === undefined) {
    ctx.issue({ file, line, code: 'missing-field', message: `missing required field "${key}"` });
    return null;
  }
  if (typeof v !== 'string') {
    ctx.issue({
      file,
      line,
      code: 'wrong-type',
      message: `field "${key}" must be a string, found ${describe(v)}`,
    });
    return null;
  }
  return v;
}

/** An identifier field, checked against the spec's rules (strict) or just non-empty and tab-free. */
export function idField(
  ctx: ShardReadContext,
  file: string,
  line: number,
  o: Json,
  key: string,
): string | null {
  // Upstream formats sometimes write numeric ids; they are strings for every purpose here.
  const raw = o[key];
  const v =
    !ctx.strict && typeof raw === 'number' && Number.isFinite(raw)
      ? String(raw)
      : reqString(ctx, file, line, o, key);
  if (v !== null) checkId(ctx, file, line, key, v);
  return v;
}

/** Checks an id against the spec's rules (strict) or upstream's (non-empty, no tab or line break). */
export function checkId(ctx: ShardReadContext, file: string, line: number, what: string, id: string): void {
  const ok = ctx.strict ? STRICT_ID.test(id) : id !== '' && !/[\t\n\r]/.test(id);
  if (!ok) {
    const rule = ctx.strict ? ID_RULE : 'must be non-empty and contain no tab or line break';
    ctx.issue({ file, line, code: 'invalid-id', message: `${what} ${JSON.stringify(id)} ${rule}` });
  }
}

/** An optional image path (strict format only): type and path rules, remembered for the image pass. */
export function imageField(ctx: ShardReadContext, file: string, line: number, o: Json): string | undefined {
  const v = o.image;
  if (v === undefined) return undefined;
  if (typeof v !== 'string') {
    ctx.issue({
      file,
      line,
      code: 'wrong-type',
      message: `field "image" must be a string path, found ${describe(v)}`,
    });
    return undefined;
  }
  const problem = pathProblem(v);
  if (problem) {
    ctx.issue({ file, line, code: 'bad-path', message: `image path ${JSON.stringify(v)} ${problem}` });
    return undefined;
  }
  if (!ctx.imageRefs.has(v)) ctx.imageRefs.set(v, { file, line });
  return v;
}

/**
 * An optional image list (strict format only): `images: [{"path", "caption"?, "role"?}, …]` (a bare
 * path string is taken as `{"path"}`), each path checked like `image` and remembered with its index
 * for the image pass. An item gives `image` or `images`, not both.
 */
export function imagesField(
  ctx: ShardReadContext,
  file: string,
  line: number,
  o: Json,
): ImageRef[] | undefined {
  const v = o.images;
  if (v === undefined) return undefined;
  const bad = (message: string, code = 'wrong-type') => {
    ctx.issue({ file, line, code, message });
    return undefined;
  };
  if (o.image !== undefined)
    return bad('give either "image" (one image) or "images" (a list), not both', 'image-and-images');
  if (!Array.isArray(v) || v.length === 0)
    return bad(
      `field "images" must be a non-empty list of {"path", "caption", "role"}, found ${describe(v)}`,
    );
  if (v.length > MAX_ITEM_IMAGES)
    return bad(
      `field "images" lists ${v.length} images; at most ${MAX_ITEM_IMAGES} per item`,
      'too-many-images',
    );
  const out: ImageRef[] = [];
  const seen = new Set<string>();
  for (const [k, x] of v.entries()) {
    const field = `images[${k}]`;
    const item = typeof x === 'string' ? { path: x } : x;
    if (!item || typeof item !== 'object' || Array.isArray(item))
      return bad(`${field} must be {"path": …} or a path string, found ${describe(x)}`);
    const { path, caption, role } = item as Record<string, unknown>;
    if (typeof path !== 'string') return bad(`${field}.path must be a string path, found ${describe(path)}`);
    for (const [name, val] of [
      ['caption', caption],
      ['role', role],
    ] as const)
      if (val !== undefined && typeof val !== 'string')
        return bad(`${field}.${name} must be a string, found ${describe(val)}`);
    const problem = pathProblem(path);
    if (problem) return bad(`${field} path ${JSON.stringify(path)} ${problem}`, 'bad-path');
    if (seen.has(path)) return bad(`${field} repeats ${JSON.stringify(path)}`, 'duplicate-image');
    seen.add(path);
    if (!ctx.imageRefs.has(path)) ctx.imageRefs.set(path, { file, line, field });
    out.push({
      path,
      ...(typeof caption === 'string' ? { caption } : {}),
      ...(typeof role === 'string' ? { role } : {}),
    });
  }
  return out;
}

/** Other string / list-of-string fields become metadata; BEIR's `metadata` object is flattened first. */
export function collectMeta(o: Json, reserved: Set<string>, flattenMetadata: boolean): Metadata {
  const meta: Metadata = {};
  if (flattenMetadata && isObject(o.metadata)) {
    for (const [k, v] of Object.entries(o.metadata)) {
      if (k === '__proto__') continue;
      if (isScalar(v)) meta[k] = String(v);
      else if (Array.isArray(v) && v.every(isScalar)) meta[k] = v.map(String);
    }
  }
  for (const [k, v] of Object.entries(o)) {
    if (reserved.has(k) || k === '__proto__') continue;
    if (typeof v === 'string') meta[k] = v;
    else if (Array.isArray(v) && v.every((x) => typeof x === 'string')) meta[k] = v as string[];
  }
  return meta;
}

function isScalar(v: unknown): v is string | number | boolean {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

/** Why a shard-relative path is unacceptable, or null when it is fine. */
function pathProblem(p: string): string | null {
  if (p === '') return 'is empty';
  if (p.includes('\\')) return 'uses "\\"; paths must use "/"';
  if (p.startsWith('/') || /^[A-Za-z]:/.test(p))
    return 'is absolute; paths must be relative to the shard folder';
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(p)) return 'is a URL; paths must be relative to the shard folder';
  const segments = p.split('/');
  if (segments.includes('..')) return 'contains ".."; paths must stay inside the shard folder';
  if (segments.some((s) => s === '' || s === '.')) return 'has an empty or "." segment';
  return null;
}

/** The first string (at any depth) longer than `max` characters, with its key path; null when none is. */
function longField(v: unknown, max: number, key = ''): { key: string; length: number } | null {
  if (typeof v === 'string') return v.length > max ? { key, length: v.length } : null;
  if (typeof v !== 'object' || v === null) return null;
  for (const [k, x] of Object.entries(v)) {
    const found = longField(x, max, key ? `${key}.${k}` : k);
    if (found) return found;
  }
  return null;
}
