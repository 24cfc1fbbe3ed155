// Mounts the standalone Parquet column mapping component (src/components/shared/ParquetColumnMapping.svelte)
// on a dataset inspected by the real shard worker, for tests/e2e/parquet.test.ts. Served by the Vite
// dev server at /tests/browser/mapping-harness.html; never part of the app build.
import { mount } from 'svelte';
import ParquetColumnMapping from '../../src/components/shared/ParquetColumnMapping.svelte';
import { inspectParquet } from '../../src/lib/adapters/shard-client';
import type { ParquetMapping } from '../../src/lib/core/parquet/mapping';

const mappingHarness = {
  /** What the component handed back on confirm (null until then). */
  confirmed: null as ParquetMapping | null,

  /** Fetches `<baseUrl><path>` for each path, inspects them as File objects and mounts the component. */
  async show(baseUrl: string, paths: string[]): Promise<ParquetMapping> {
    const files = [];
    for (const path of paths) {
      const res = await fetch(new URL(path, new URL(baseUrl, location.href)));
      if (!res.ok) throw new Error(`HTTP ${res.status} for ${path}`);
      files.push({ path, file: new File([await res.blob()], path.split('/').pop()!) });
    }
    const r = await inspectParquet({ kind: 'files', files, label: 'fixture' });
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    mount(ParquetColumnMapping, {
      target: document.getElementById('root')!,
      props: {
        inspection: r.inspection,
        mapping: r.inspection.mapping,
        onconfirm: (m: ParquetMapping) => void (mappingHarness.confirmed = m),
      },
    });
    return r.inspection.mapping;
  },
};

declare global {
  interface Window {
    mappingHarness: typeof mappingHarness;
  }
}

window.mappingHarness = mappingHarness;
document.getElementById('status')!.textContent = 'ready';
