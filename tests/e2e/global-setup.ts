import { createServer, type ViteDevServer } from 'vite';
import type { TestProject } from 'vitest/node';

let server: ViteDevServer | undefined;

/** Starts the real Vite dev server (with the demo-shard middleware) once for all e2e files. */
export async function setup(project: TestProject) {
  server = await createServer({
    configFile: 'vite.config.ts',
    // No HMR and no file watching: e2e files run two at a time, and a file that builds the site
    // (deploy, embed, url-state…) writes index.html into its output folder, on which a watching
    // server sent every open page a full reload: the other file's page lost its import mid-way.
    server: { port: 0, host: '127.0.0.1', strictPort: false, hmr: false, watch: null },
    logLevel: 'warn',
  });
  await server.listen();
  const address = server.httpServer?.address();
  if (!address || typeof address === 'string') throw new Error('vite did not bind a TCP port');
  project.provide('baseUrl', `http://127.0.0.1:${address.port}`);
}

export async function teardown() {
  await server?.close();
}

declare module 'vitest' {
  export interface ProvidedContext {
    baseUrl: string;
  }
}
