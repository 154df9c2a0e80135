// Completes the npm package in pkg/ after wasm-bindgen and wasm-opt: writes pkg/package.json
// (name, version and licence from Cargo.toml's [package]) and copies the licence texts, copies the <deploy-gate-viewer> element,
// its modules, workers, styles, types and the bundled example into pkg/viewer/, points the
// viewer at the package's wasm core (pkg/viewer/wasm.js imports ../deploy_gate.js), and
// package.json (exports map, files, side effects) has a fixed key order, so the build stays
// reproducible. Called by scripts/build-wasm.sh.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const WWW = path.join(ROOT, "www");
// The package's folder: pkg/, or DEPLOY_GATE_PKG_DIR (scripts/build-wasm.sh builds it apart for
// the test command's comparison).
const PKG = process.env.DEPLOY_GATE_PKG_DIR ? path.resolve(process.env.DEPLOY_GATE_PKG_DIR) : path.join(ROOT, "pkg");
const VIEWER = path.join(PKG, "viewer");

// The viewer: every module of www/ and www/components/, its stylesheet, its types and the
// example (opt-in: only example.js, through example-files.js, names its files, so a portal that
// does not import "deploy-gate/viewer/example" bundles none of it). Pages (index.html,
// embed.html) stay in www/.
const files = [
  ...fs.readdirSync(WWW).filter((f) => f.endsWith(".js") || f.endsWith(".d.ts") || f === "style.css"),
  ...fs.readdirSync(path.join(WWW, "components")).filter((f) => f.endsWith(".js")).map((f) => `components/${f}`),
  ...fs.readdirSync(path.join(WWW, "examples")).map((f) => `examples/${f}`),
].sort();

const FROM = '"../pkg/deploy_gate.js"';
const TO = '"../deploy_gate.js"';
fs.rmSync(VIEWER, { recursive: true, force: true });
let rewritten = 0;
for (const file of files) {
  const to = path.join(VIEWER, file);
  fs.mkdirSync(path.dirname(to), { recursive: true });
  let bytes = fs.readFileSync(path.join(WWW, file));
  if (/\.(js|ts)$/.test(file)) {
    const text = bytes.toString("utf8");
    if (/\.\.\/\.\.\/pkg\//.test(text)) throw new Error(`www/${file} imports ../../pkg/: import the core through www/wasm.js`);
    if (text.includes(FROM) && file !== "wasm.js" && file !== "deploy-gate-viewer.d.ts") throw new Error(`www/${file} imports ../pkg/ directly: import the core through www/wasm.js`);
    if (text.includes("import.meta") && file !== "assets.js" && file !== "example-files.js") throw new Error(`www/${file} uses import.meta: find files next to the viewer through www/assets.js (the single-file viewer replaces it)`);
    if (/examples\//.test(text) && file !== "example-files.js" && !file.startsWith("examples/")) throw new Error(`www/${file} names the example's files: only www/example-files.js may (the example is opt-in)`);
    rewritten += text.split(FROM).length - 1;
    bytes = Buffer.from(text.replaceAll(FROM, TO));
  }
  fs.writeFileSync(to, bytes);
}
if (rewritten !== 3) throw new Error(`expected www/wasm.js (2) and www/deploy-gate-viewer.d.ts (1) to name ${FROM}, found ${rewritten}`);

// Cargo.toml's [package] keys (a one-line string each), up to the next table.
const cargo = fs.readFileSync(path.join(ROOT, "Cargo.toml"), "utf8");
const section = cargo.slice(cargo.indexOf("[package]\n")).split(/\n\[/)[0];
const cargoKey = (key, required) => {
  const value = (section.match(new RegExp(`^${key}\\s*=\\s*"([^"]+)"`, "m")) || [])[1];
  if (required && !value) throw new Error(`Cargo.toml's [package] has no ${key}`);
  return value;
};
// The licence texts, from the repository's root.
const licenses = ["LICENSE-MIT", "LICENSE-APACHE"];
for (const name of licenses) fs.copyFileSync(path.join(ROOT, name), path.join(PKG, name));
const repository = cargoKey("repository", false);
const pkg = {
  name: cargoKey("name", true),
  version: cargoKey("version", true),
  description: "Gates the deployment of a retrained agent model in the browser: the WebAssembly core, the <deploy-gate-viewer> element and a single-file viewer",
  keywords: ["deployment-gate", "llm", "agents", "evaluation", "a/b-testing", "webassembly", "web-component", "dsse", "in-toto"],
  license: cargoKey("license", true),
  ...(repository ? { repository: { type: "git", url: repository } } : {}),
  type: "module",
  main: "./deploy_gate.js",
  module: "./deploy_gate.js",
  types: "./deploy_gate.d.ts",
  exports: {
    ".": { types: "./deploy_gate.d.ts", default: "./deploy_gate.js" },
    "./viewer": { types: "./viewer/deploy-gate-viewer.d.ts", default: "./viewer/deploy-gate-viewer.js" },
    "./viewer/example": { types: "./viewer/example.d.ts", default: "./viewer/example.js" },
    "./viewer.css": "./viewer/style.css",
    "./viewer.html": "./deploy-gate-viewer.html",
    "./viewer/*": "./viewer/*",
    "./deploy_gate_bg.wasm": "./deploy_gate_bg.wasm",
    "./package.json": "./package.json",
  },
  files: ["deploy_gate.js", "deploy_gate.d.ts", "deploy_gate_bg.wasm", "deploy_gate_bg.wasm.d.ts", "deploy-gate-viewer.html", "viewer/", "README.md", ...licenses],
  sideEffects: ["./viewer/*.js", "./viewer/components/*.js", "./viewer/*.css"],
};
fs.writeFileSync(path.join(PKG, "package.json"), `${JSON.stringify(pkg, null, 2)}\n`);
