// Where e2e tests put screenshots: an ignored folder, so `npm test` leaves the tree clean
// (`npm run docs:screenshots` refreshes the README's pictures in docs/).
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';

/** `.test-results/screenshots/` at the repository root (gitignored). */
export const SHOTS_DIR = resolve(import.meta.dirname, '../../.test-results/screenshots');

/** The path of a screenshot named `name` (the folder is created). */
export function shotPath(name: string): string {
  mkdirSync(SHOTS_DIR, { recursive: true });
  return resolve(SHOTS_DIR, name);
}
