import type { Request } from 'playwright-core';

/**
 * The page's one question to the Hugging Face hub (platform/models/model-index.ts `hubAnswers`): a HEAD for
 * a registry model's config.json, asked when a hub model would be a picker's default. It downloads
 * nothing; tests that check that generated models never leave the machine set it apart.
 */
export function isHubProbe(r: Request): boolean {
  return (
    r.method() === 'HEAD' &&
    /^https:\/\/huggingface\.co\/[^/]+\/[^/]+\/resolve\/[^/]+\/config\.json$/.test(r.url())
  );
}
