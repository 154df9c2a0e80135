// Builds the single-file viewer: one HTML file that opens from disk (file://) with no server and
// no network. The page is www/index.html with everything inline: the styles, the wasm module
// (base64, in a data block the scripts read), the viewer's modules bundled into one inline
// module script, and the workers bundled each into a string the page starts from a blob URL
// (the main worker carries its scan and hash workers the same way). The bundled example is
// inline too. The Content-Security-Policy allows no script but the page's own (its sha256),
// 'wasm-unsafe-eval' for the core and blob: workers.
//
// node scripts/build-single.mjs [OUT]   (default pkg/deploy-gate-viewer.html; needs pkg/ built
// by scripts/build-wasm.sh, and esbuild from tests/e2e/node_modules, see scripts/setup.sh). The output is
// deterministic: same sources, same bytes.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const WWW = path.join(ROOT, "www");
// The package's folder: pkg/, or DEPLOY_GATE_PKG_DIR (scripts/build-wasm.sh builds it apart for
// the test command's comparison).
const PKG = process.env.DEPLOY_GATE_PKG_DIR ? path.resolve(process.env.DEPLOY_GATE_PKG_DIR) : path.join(ROOT, "pkg");
const out = path.resolve(process.argv[2] || path.join(PKG, "deploy-gate-viewer.html"));

const require = createRequire(path.join(ROOT, "tests/e2e/package.json"));
let esbuild;
try {
  esbuild = await import(pathToFileURL(require.resolve("esbuild")).href);
} catch {
  console.error("build-single.mjs: esbuild is missing: run scripts/setup.sh (it installs tests/e2e's npm packages)");
  process.exit(1);
}

const read = (file) => fs.readFileSync(file, "utf8");
const EXAMPLE = ["audit.jsonl", "old_verdicts.jsonl", "new_verdicts.jsonl", "old_trajectories.jsonl", "new_trajectories.jsonl"];

// The core, compiled from the inline base64 (the page's data block; a worker gets it as
// self.DG_WASM from the prelude of its blob), or instantiated from a module another worker
// compiled and posted (`init(module)`, `compiledModule()`: see www/wasm.js).
const WASM_MODULE = `
import init0 from ${JSON.stringify(path.join(PKG, "deploy_gate.js"))};
export * from ${JSON.stringify(path.join(PKG, "deploy_gate.js"))};
export function wasmBase64() {
  return typeof document === "undefined" ? self.DG_WASM : document.getElementById("dg-wasm").textContent.trim();
}
function decode(b64) {
  if (Uint8Array.fromBase64) return Uint8Array.fromBase64(b64);
  const text = atob(b64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}
let compiled = null;
export const compiledModule = () => compiled;
export default async function init(module) {
  if (!(module instanceof WebAssembly.Module)) module = compiled || (await WebAssembly.compile(decode(wasmBase64())));
  compiled = compiled || module;
  return init0({ module_or_path: module });
}`;

/** A classic worker from bundled source, with the wasm base64 in front. */
const BLOB_WORKER = `
import { wasmBase64 } from "./wasm.js";
const urls = new Map();
export function blobWorker(source) {
  let url = urls.get(source);
  if (!url) {
    url = URL.createObjectURL(new Blob(['self.DG_WASM="', wasmBase64(), '";\\n', source], { type: "text/javascript" }));
    urls.set(source, url);
  }
  return new Worker(url);
}`;

function replaced(modules) {
  return {
    name: "single-file",
    setup(build) {
      build.onResolve({ filter: /^\.\.?\/(wasm|assets|example-files)\.js$/ }, (args) => {
        if (args.namespace === "single") return { path: args.path.slice(args.path.lastIndexOf("/") + 1), namespace: "single" };
        if (!args.importer.startsWith(WWW)) return undefined;
        return { path: path.basename(args.path), namespace: "single" };
      });
      build.onResolve({ filter: /^\.\/blob-worker\.js$/ }, () => ({ path: "blob-worker.js", namespace: "single" }));
      build.onLoad({ filter: /.*/, namespace: "single" }, (args) => {
        const contents = { "wasm.js": WASM_MODULE, "blob-worker.js": BLOB_WORKER, ...modules }[args.path];
        if (contents === undefined) throw new Error(`no single-file module ${args.path}`);
        return { contents, loader: "js", resolveDir: WWW };
      });
    },
  };
}

async function bundle(entry, format, modules = {}) {
  const result = await esbuild.build({
    entryPoints: [path.join(WWW, entry)],
    bundle: true,
    write: false,
    format,
    target: "es2022",
    minify: true,
    legalComments: "none",
    charset: "utf8",
    define: { "import.meta.url": "undefined" },
    plugins: [replaced(modules)],
    logLevel: "silent",
  });
  const text = result.outputFiles[0].text;
  if (/<\/script|<!--/i.test(text)) throw new Error(`${entry}: the bundle contains </script or <!--`);
  return text;
}

const scanSource = await bundle("scan-worker.js", "iife");
const hashSource = await bundle("hash-worker.js", "iife");
const workerSource = await bundle("worker.js", "iife", {
  "assets.js": `
import { blobWorker } from "./blob-worker.js";
const SCAN = ${JSON.stringify(scanSource)};
const HASH = ${JSON.stringify(hashSource)};
export const startWorker = () => { throw new Error("the worker starts no worker.js"); };
export const startScanWorker = () => blobWorker(SCAN);
export const startHashWorker = () => blobWorker(HASH);
export const styleUrl = () => null;`,
});
const examples = Object.fromEntries(EXAMPLE.map((name) => [name, read(path.join(WWW, "examples", name))]));
// The page: the viewer with the example (example.js imports the viewer and offers the example).
const pageSource = await bundle("example.js", "esm", {
  "assets.js": `
import { blobWorker } from "./blob-worker.js";
const WORKER = ${JSON.stringify(workerSource)};
export const startWorker = () => blobWorker(WORKER);
export const startScanWorker = () => { throw new Error("the page starts no scan worker"); };
export const startHashWorker = startScanWorker;
export const styleUrl = () => null;`,
  "example-files.js": `
const EXAMPLES = ${JSON.stringify(examples)};
const ROLES = ${JSON.stringify(Object.fromEntries(EXAMPLE.map((name) => [name, name.replace(/\.jsonl$/, "")])))};
export async function exampleFiles() {
  return Object.entries(EXAMPLES).map(([name, text]) => ({ role: ROLES[name], file: new File([text], name, { type: "application/x-ndjson" }) }));
}`,
});

const css = read(path.join(WWW, "style.css"));
const wasm = fs.readFileSync(path.join(PKG, "deploy_gate_bg.wasm")).toString("base64");
const hash = (text) => `'sha256-${crypto.createHash("sha256").update(text, "utf8").digest("base64")}'`;
const favicon = `data:image/svg+xml;base64,${fs.readFileSync(path.join(WWW, "favicon.svg")).toString("base64")}`;
const csp = [
  "default-src 'none'",
  `script-src ${hash(pageSource)} 'wasm-unsafe-eval'`,
  `style-src ${hash(css)}`,
  "img-src data: blob:",
  "worker-src blob:",
  "connect-src 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

let html = read(path.join(WWW, "index.html"));
function swap(pattern, replacement) {
  const matches = html.match(new RegExp(pattern.source, "g")) || [];
  if (matches.length !== 1) throw new Error(`www/index.html: expected one ${pattern}, found ${matches.length}`);
  html = html.replace(pattern, () => replacement);
}
swap(/<meta http-equiv="Content-Security-Policy" content="[^"]*">/, `<meta http-equiv="Content-Security-Policy" content="${csp}">`);
swap(/<link rel="icon" href="favicon\.svg" type="image\/svg\+xml">/, `<link rel="icon" href="${favicon}" type="image/svg+xml">`);
swap(/<link rel="stylesheet" href="style\.css">/, `<style>${css}</style>`);
swap(/<script type="module" src="deploy-gate-viewer\.js"><\/script>/, `<script type="module">${pageSource}</script>`);
swap(/\n<script type="module" src="example\.js"><\/script>/, "");
swap(/<\/body>/, `<script type="application/octet-stream" id="dg-wasm">${wasm}</script>\n</body>`);
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, html);
console.error(`build-single.mjs: ${path.relative(ROOT, out) || out}: ${html.length} bytes`);
