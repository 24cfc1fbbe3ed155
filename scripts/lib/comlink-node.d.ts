// Types of Comlink's Node endpoint, published as node-adapter.mjs with its types in node-adapter.d.ts.
declare module 'comlink/dist/esm/node-adapter.mjs' {
  export { default } from 'comlink/dist/esm/node-adapter';
}
