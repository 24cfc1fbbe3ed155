// What the page is doing (`data-phase` on the app root; tests and the headless runner wait on it).
// Its own module so the state classes can name it without importing the App that composes them.

/** The page's phase: importing a shard, preparing an index, running a retriever… */
export type AppPhase =
  'starting' | 'idle' | 'importing' | 'preparing' | 'ready' | 'running' | 'done' | 'error';
