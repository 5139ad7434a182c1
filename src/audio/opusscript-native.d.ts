/**
 * Types for the emscripten module factory that opusscript ships (a CommonJS file exporting one
 * function). Only what src/audio/opus.ts uses is declared; see that file for how it is driven.
 */
declare module 'opusscript/build/opusscript_native_wasm.js' {
  /** Creates one instance of the libopus wasm module; `moduleArg` is emscripten's `Module` object. */
  const createOpusscriptModule: (moduleArg?: Record<string, unknown>) => unknown;
  export default createOpusscriptModule;
}
