// Hugging Face datasets as shard sources: a dataset URL (`/datasets/<repo>/resolve|tree|blob/<rev>/…`)
// parsed into repository, revision and folder, and its files listed through the hub's tree API (a
// static host cannot list a folder; the hub can). The shard worker turns them into a URL source's
// `{ kind: 'url', url, files }` descriptor.

/** A Hugging Face dataset URL split into repository, revision and folder, or null for another URL. */
export function parseHubDatasetUrl(
  url: string,
): { repo: string; revision: string; folder: string; resolveBase: string } | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.hostname !== 'huggingface.co') return null;
  const m = /^\/datasets\/([^/]+\/[^/]+)(?:\/(?:resolve|tree|blob)\/([^/]+)(?:\/(.*?))?)?\/?$/.exec(
    u.pathname,
  );
  if (!m) return null;
  const repo = m[1];
  const revision = decodeURIComponent(m[2] ?? 'main');
  const folder = (m[3] ?? '').replace(/\/+$/, '');
  const rev = encodeURIComponent(revision);
  return {
    repo,
    revision,
    folder,
    resolveBase: `https://huggingface.co/datasets/${repo}/resolve/${rev}/${folder ? `${folder}/` : ''}`,
  };
}

/**
 * The files of a Hugging Face dataset (or of one folder of it, e.g. `refs/convert/parquet`'s) through
 * the hub's tree API, relative to the folder: what a `{ kind: 'url', url, files }` descriptor needs.
 * Fetches only huggingface.co, the host the user chose.
 */
export async function listHubDataset(url: string): Promise<{ url: string; files: string[] }> {
  const hub = parseHubDatasetUrl(url);
  if (!hub) throw new Error(`${url} is not a Hugging Face dataset URL`);
  const files: string[] = [];
  let next: string | null =
    `https://huggingface.co/api/datasets/${hub.repo}/tree/${encodeURIComponent(hub.revision)}` +
    `${hub.folder ? `/${hub.folder.split('/').map(encodeURIComponent).join('/')}` : ''}?recursive=true`;
  while (next) {
    const res: Response = await fetch(next, { credentials: 'omit' });
    if (!res.ok) throw new Error(`HTTP ${res.status} listing ${hub.repo} at ${hub.revision}`);
    for (const e of (await res.json()) as { type: string; path: string }[]) {
      if (e.type !== 'file') continue;
      const rel = hub.folder ? e.path.slice(hub.folder.length + 1) : e.path;
      if (/\.parquet$/i.test(rel) || rel === 'README.md') files.push(rel);
    }
    // The tree API pages with a Link: <…>; rel="next" header.
    next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('Link') ?? '')?.[1] ?? null;
  }
  return { url: hub.resolveBase, files };
}
