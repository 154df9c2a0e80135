// The wasm core, as every module of the viewer imports it. The npm package's copy of this file
// (pkg/viewer/wasm.js, written by scripts/build-wasm.sh) points at ../deploy_gate.js; the
// single-file viewer (scripts/build-single.mjs) replaces it with one that instantiates the
// module inlined in the page.
export * from "../deploy_gate.js";
export { default } from "../deploy_gate.js";
