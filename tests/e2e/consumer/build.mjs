// Bundles the portal page with esbuild: src/app.ts (which imports deploy-gate/viewer and its
// stylesheet) into dist/app.js and dist/app.css. esbuild does not follow
// `new URL(…, import.meta.url)`, so the viewer's three workers are entry points of their own,
// written next to app.js under the names the viewer asks for, and the wasm module is copied
// there (the core fetches deploy_gate_bg.wasm next to the module that loads it).
import * as esbuild from "esbuild";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
fs.rmSync("dist", { recursive: true, force: true });
await esbuild.build({
  entryPoints: {
    app: "src/app.ts",
    worker: "deploy-gate/viewer/worker.js",
    "scan-worker": "deploy-gate/viewer/scan-worker.js",
    "hash-worker": "deploy-gate/viewer/hash-worker.js",
  },
  bundle: true,
  format: "esm",
  target: "es2022",
  outdir: "dist",
  minify: true,
  logLevel: "warning",
});
const pkgDir = path.dirname(require.resolve("deploy-gate/package.json"));
fs.copyFileSync(path.join(pkgDir, "deploy_gate_bg.wasm"), "dist/deploy_gate_bg.wasm");
