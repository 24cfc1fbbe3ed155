// shard.json, the "BEIR + images" manifest: name, tasks with their modalities, language, licence and
// citation fields, read strictly (every problem is an issue with its line); and, once the other files are
// read, its informative `counts` and each task's query_modality checked against what the files hold.

import { ShardValidationError } from './source';
import { PRECOMPUTED_INDEX } from './precomputed';
import type { Modality, TaskInfo } from '../types';
import {
  EXAMPLES,
  describe,
  errorMessage,
  isObject,
  jsonErrorLine,
  lineAtByte,
  lineAtChar,
  pick,
  truncate,
} from './json-text';
import { invalidUtf8Offset } from './lines';
import type { ShardReadContext } from './read-context';
import { ID_RULE, STRICT_ID } from './read-records';

/** A BCP 47 language tag's shape: a 2–3 letter primary language, then optional subtags. */
const LANGUAGE_TAG_RE = /^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*$/;
/** The modalities a task may declare. */
const MODALITIES: readonly string[] = ['text', 'image', 'image+text'];

/** Reads shard.json into ctx.manifest (and ctx.counts); stops at its own issues, since tasks judge every query. */
export async function readManifest(ctx: ShardReadContext): Promise<void> {
  const file = 'shard.json';
  let bytes = await ctx.readWhole(file, await ctx.openRequired(file));
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    ctx.issue({
      file,
      line: 1,
      code: 'bom',
      message: 'file starts with a UTF-8 byte order mark (BOM); save it as UTF-8 without BOM',
    });
    bytes = bytes.subarray(3);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    const at = invalidUtf8Offset(bytes);
    ctx.fatal({
      file,
      line: lineAtByte(bytes, at),
      code: 'invalid-utf8',
      message: `invalid UTF-8 at byte ${at + 1} (bytes counted from 1); the file must be UTF-8 encoded`,
    });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    const msg = errorMessage(e);
    ctx.fatal({
      file,
      line: jsonErrorLine(text),
      code: 'malformed-json',
      message: `malformed JSON: ${truncate(msg, 200)}`,
    });
  }
  if (!isObject(raw))
    ctx.fatal({
      file,
      code: 'not-object',
      message: `shard.json must be a JSON object, found ${describe(raw)}`,
    });
  const m = raw;
  const at = (needle: string, from = 0): number | undefined => {
    const i = text.indexOf(needle, from);
    return i < 0 ? undefined : lineAtChar(text, i);
  };
  const optString = (key: string): string | undefined => {
    const v = m[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') {
      ctx.issue({
        file,
        line: at(`"${key}"`),
        code: 'wrong-type',
        message: `"${key}" must be a string, found ${describe(v)}`,
      });
      return undefined;
    }
    return v;
  };

  let name = optString('name');
  if (!name) {
    ctx.warnings.push({
      file,
      code: 'missing-name',
      message: `shard.json has no "name"; using "${ctx.source.label}"`,
    });
    name = ctx.source.label;
  }
  if (m.format !== undefined && m.format !== 'beir+images') {
    ctx.warnings.push({
      file,
      code: 'format',
      message: `"format" is ${describe(m.format)}; reading it as "beir+images"`,
    });
  }
  let relevance: Record<string, string> | undefined;
  if (m.relevance !== undefined) {
    if (isObject(m.relevance) && Object.values(m.relevance).every((v) => typeof v === 'string')) {
      relevance = m.relevance as Record<string, string>;
    } else {
      ctx.issue({
        file,
        line: at('"relevance"'),
        code: 'wrong-type',
        message: '"relevance" must be an object mapping grades to strings',
      });
    }
  }

  let embeddings = optString('embeddings');
  if (embeddings !== undefined && embeddings !== PRECOMPUTED_INDEX) {
    ctx.issue({
      file,
      line: at('"embeddings"'),
      code: 'wrong-value',
      message: `"embeddings" must be "${PRECOMPUTED_INDEX}" (the list of precomputed embedding sets), found ${describe(embeddings)}`,
    });
    embeddings = undefined;
  }

  const imagesPack = readImagesPack(m.images_pack, (code, message) =>
    ctx.issue({ file, line: at('"images_pack"'), code, message }),
  );

  const tasks: TaskInfo[] = [];
  if (!Array.isArray(m.tasks) || m.tasks.length === 0) {
    ctx.issue({
      file,
      line: at('"tasks"'),
      code: 'missing-tasks',
      message: `"tasks" must be a non-empty list of tasks, found ${m.tasks === undefined ? 'nothing' : describe(m.tasks)}`,
    });
  } else {
    const seen = new Set<string>();
    m.tasks.forEach((t: unknown, i: number) => {
      const where = `tasks[${i}]`;
      if (!isObject(t)) {
        ctx.issue({
          file,
          line: at('"tasks"'),
          code: 'not-object',
          message: `${where} must be an object, found ${describe(t)}`,
        });
        return;
      }
      const idPos = typeof t.id === 'string' ? text.indexOf(JSON.stringify(t.id)) : -1;
      const line = (key?: string): number | undefined =>
        idPos < 0
          ? at('"tasks"')
          : key
            ? (at(`"${key}"`, idPos) ?? lineAtChar(text, idPos))
            : lineAtChar(text, idPos);
      if (typeof t.id !== 'string') {
        ctx.issue({
          file,
          line: line(),
          code: t.id === undefined ? 'missing-field' : 'wrong-type',
          message: `${where}.id must be a string, found ${t.id === undefined ? 'nothing' : describe(t.id)}`,
        });
        return;
      }
      if (!STRICT_ID.test(t.id)) {
        ctx.issue({
          file,
          line: line(),
          code: 'invalid-id',
          message: `${where}.id ${JSON.stringify(t.id)} ${ID_RULE}`,
        });
      }
      if (seen.has(t.id))
        ctx.issue({
          file,
          line: line(),
          code: 'duplicate-id',
          message: `task id ${JSON.stringify(t.id)} is declared twice`,
        });
      seen.add(t.id);
      const modality = (key: string): Modality | undefined => {
        const v = t[key];
        if (v === undefined) {
          ctx.issue({
            file,
            line: line(),
            code: 'missing-field',
            message: `${where} (${t.id}) has no "${key}"`,
          });
        } else if (typeof v !== 'string' || !MODALITIES.includes(v)) {
          ctx.issue({
            file,
            line: line(key),
            code: 'bad-modality',
            message: `${where}.${key} is ${describe(v)}; use "text", "image" or "image+text"`,
          });
        } else return v as Modality;
        return undefined;
      };
      const queryModality = modality('query_modality');
      const corpusModality = modality('corpus_modality');
      if (t.description !== undefined && typeof t.description !== 'string') {
        ctx.issue({
          file,
          line: line('description'),
          code: 'wrong-type',
          message: `${where}.description must be a string`,
        });
      }
      if (queryModality && corpusModality) {
        tasks.push({
          id: t.id,
          queryModality,
          corpusModality,
          ...(typeof t.description === 'string' ? { description: t.description } : {}),
        });
      }
    });
  }
  // The documents' language, when the shard declares one (BM25 picks its analyzer from it).
  let language = optString('language');
  if (language !== undefined && !LANGUAGE_TAG_RE.test(language)) {
    ctx.issue({
      file,
      line: at('"language"'),
      code: 'bad-language',
      message: `"language" is ${JSON.stringify(language)}; use a language tag such as "en", "de" or "pt-BR"`,
    });
    language = undefined;
  }
  ctx.manifest = {
    name,
    format: 'beir+images',
    tasks,
    ...pick({
      language,
      version: optString('version'),
      description: optString('description'),
      license: optString('license'),
      licenseUrl: optString('license_url'),
      citation: optString('citation'),
      source: optString('source'),
      relevance,
      embeddings,
      imagesPack,
    }),
  };
  ctx.counts = m.counts;
  // Without a sound task list every query would be misjudged; stop at the manifest's own issues.
  if (ctx.issues.length > 0) throw new ShardValidationError(ctx.issues);
}

/**
 * shard.json's `images_pack`: a zip file name in the shard, or a list of them (pack-shard splits a
 * large image set over several), each a plain relative path ending in `.zip`.
 */
function readImagesPack(v: unknown, issue: (code: string, message: string) => void): string[] | undefined {
  if (v === undefined) return undefined;
  const names = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(names) || names.length === 0 || !names.every((n) => typeof n === 'string')) {
    issue('wrong-type', `"images_pack" must be a zip file name or a list of them, found ${describe(v)}`);
    return undefined;
  }
  const bad = names.find(
    (n) =>
      !/\.zip$/i.test(n) ||
      n.startsWith('/') ||
      n.includes('\\') ||
      n.split('/').some((seg) => seg === '' || seg === '.' || seg === '..'),
  );
  if (bad !== undefined) {
    issue(
      'wrong-value',
      `"images_pack" names ${JSON.stringify(bad)}: each pack must be a .zip file inside the shard, named by a relative path`,
    );
    return undefined;
  }
  return [...new Set(names)];
}

/** shard.json `counts` are informative: a mismatch is a warning, the files win. */
export function checkCounts(ctx: ShardReadContext, images: number): void {
  const c = ctx.counts;
  if (c === undefined) return;
  const file = 'shard.json';
  if (!isObject(c)) {
    ctx.warnings.push({ file, code: 'count-mismatch', message: '"counts" is not an object; ignored' });
    return;
  }
  const compare = (path: string, stated: unknown, actual: number, what: string): void => {
    if (typeof stated === 'number' && stated !== actual) {
      ctx.warnings.push({
        file,
        code: 'count-mismatch',
        message: `counts.${path} is ${stated}, but the shard has ${actual} ${what} (the files win)`,
      });
    }
  };
  compare('corpus', c.corpus, ctx.docCount, 'documents');
  compare('queries', c.queries, ctx.queries.length, 'queries');
  compare('qrels', c.qrels, ctx.qrelRows, 'judgements');
  compare('images', c.images, images, 'distinct images');
  if (!isObject(c.tasks)) return;
  for (const [task, tc] of Object.entries(c.tasks)) {
    if (!isObject(tc)) continue;
    const qs = ctx.queries.filter((q) => q.task === task);
    let rows = 0;
    for (const q of qs) rows += ctx.qrels.get(q.id)?.size ?? 0;
    compare(`tasks.${task}.queries`, tc.queries, qs.length, `queries in task ${task}`);
    compare(`tasks.${task}.qrels`, tc.qrels, rows, `judgements in task ${task}`);
  }
}

/** Each query's parts should match its task's declared query_modality; tasks should have queries. */
export function checkModalities(ctx: ShardReadContext): void {
  for (const task of ctx.manifest.tasks) {
    let n = 0;
    let off = 0;
    const examples: string[] = [];
    for (const q of ctx.queries) {
      if (q.task !== task.id) continue;
      n++;
      const m: Modality = q.image === undefined ? 'text' : q.text === '' ? 'image' : 'image+text';
      if (m !== task.queryModality && off++ < EXAMPLES) examples.push(q.id);
    }
    if (n === 0) {
      ctx.warnings.push({
        file: 'queries.jsonl',
        code: 'empty-task',
        message: `task ${JSON.stringify(task.id)} has no queries`,
      });
    } else if (off > 0) {
      ctx.warnings.push({
        file: 'queries.jsonl',
        code: 'modality-mismatch',
        message: `${off} of ${n} queries of task ${JSON.stringify(task.id)} do not have the declared query_modality "${task.queryModality}"`,
        count: off,
        examples,
      });
    }
  }
}
