// The wasm core, as every module of the viewer imports it. The npm package's copy of this file
// (pkg/viewer/wasm.js, written by scripts/build-wasm.sh) points at ../deploy_gate.js; the
// single-file viewer (scripts/build-single.mjs) replaces it with one that instantiates the
// module inlined in the page.
//
// `init(module)` starts the core from a WebAssembly.Module compiled elsewhere (another worker's
// `compiledModule()`, posted to it): no fetch, no compile, and the same compiled code, which V8
// optimizes once for every worker that runs it. `init()` fetches and compiles the .wasm file.
import init0 from "../pkg/deploy_gate.js";
export * from "../pkg/deploy_gate.js";

let compiled = null;

/** The compiled core once `init` is done (null before). */
export const compiledModule = () => compiled;

export default async function init(module) {
  if (module instanceof WebAssembly.Module) {
    compiled = compiled || module;
    return init0({ module_or_path: module });
  }
  // The generated loader keeps its module to itself: take it as it is instantiated (the core's,
  // known by one of its exports, should other code instantiate a module meanwhile).
  const { instantiate, instantiateStreaming } = WebAssembly;
  const keep = (result) => {
    const module = result && result.module;
    if (!compiled && module instanceof WebAssembly.Module && WebAssembly.Module.exports(module).some((e) => e.name === "gatesession_new")) compiled = module;
    return result;
  };
  WebAssembly.instantiate = (...args) => instantiate(...args).then(keep);
  if (instantiateStreaming) WebAssembly.instantiateStreaming = (...args) => instantiateStreaming(...args).then(keep);
  try {
    return await init0();
  } finally {
    WebAssembly.instantiate = instantiate;
    if (instantiateStreaming) WebAssembly.instantiateStreaming = instantiateStreaming;
  }
}
