// The cornerstonejs codec entry points are emscripten factories without type declarations.
declare module '@cornerstonejs/codec-libjpeg-turbo-8bit/decodewasmjs' {
  const factory: (moduleArg?: object) => Promise<unknown>;
  export default factory;
}
declare module '@cornerstonejs/codec-charls/decodewasmjs' {
  const factory: (moduleArg?: object) => Promise<unknown>;
  export default factory;
}
declare module '@cornerstonejs/codec-openjpeg/decodewasmjs' {
  const factory: (moduleArg?: object) => Promise<unknown>;
  export default factory;
}
