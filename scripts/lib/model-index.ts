// models/index.json: the model folders this site serves (generated test models, self-hosted copies of
// hub models), written by the build and answered by the dev server, so the page lists what loads
// without the hub once instead of probing each registry model's files with HEAD requests.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** What models/index.json holds. */
export interface ModelIndex {
  version: 1;
  /** Folders under models/ (with '/') that hold a model: a config.json and ONNX files in onnx/. */
  folders: string[];
}

/** How deep model folders may lie under models/ (`generated/<owner>/<name>`). */
const MAX_DEPTH = 3;

/** The model folders under `dir` (sorted). */
export function modelIndex(dir: string): ModelIndex {
  const folders: string[] = [];
  const walk = (rel: string, depth: number) => {
    const abs = join(dir, rel);
    const onnx = join(abs, 'onnx');
    if (
      rel &&
      existsSync(join(abs, 'config.json')) &&
      existsSync(onnx) &&
      readdirSync(onnx).some((f) => f.endsWith('.onnx'))
    ) {
      folders.push(rel);
      return;
    }
    if (depth >= MAX_DEPTH) return;
    for (const e of readdirSync(abs, { withFileTypes: true }))
      if (e.isDirectory() && !e.name.startsWith('.')) walk(rel ? `${rel}/${e.name}` : e.name, depth + 1);
  };
  if (existsSync(dir) && statSync(dir).isDirectory()) walk('', 0);
  return { version: 1, folders: folders.sort() };
}
