// A static file server for the repository root on 127.0.0.1 (no dependencies).
// node scripts/serve.mjs [PORT]   — or import { serve } for tests (port 0 = any free port).
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const TYPES = {
  ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8", ".json": "application/json", ".jsonl": "application/x-ndjson", ".wasm": "application/wasm",
  ".svg": "image/svg+xml", ".png": "image/png", ".ts": "text/plain; charset=utf-8", ".md": "text/markdown; charset=utf-8",
  ".csv": "text/csv", ".gz": "application/gzip",
};

export function serve(port = 8000, root = ROOT) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://localhost");
    let file = path.normalize(path.join(root, decodeURIComponent(url.pathname)));
    if (!file.startsWith(root)) {
      res.writeHead(403).end();
      return;
    }
    if (url.pathname === "/") {
      res.writeHead(302, { Location: "/www/index.html" }).end();
      return;
    }
    fs.stat(file, (err, stat) => {
      if (!err && stat.isDirectory()) file = path.join(file, "index.html");
      fs.stat(file, (err2, st) => {
        if (err2 || !st.isFile()) {
          res.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
          return;
        }
        res.writeHead(200, { "Content-Type": TYPES[path.extname(file)] || "application/octet-stream", "Content-Length": st.size, "Cache-Control": "no-store" });
        fs.createReadStream(file).pipe(res);
      });
    });
  });
  return new Promise((resolve) => server.listen(port, "127.0.0.1", () => resolve(server)));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const port = Number(process.argv[2] || process.env.PORT || 8000);
  const server = await serve(port);
  const { port: actual } = server.address();
  console.log(`deploy-gate page: http://127.0.0.1:${actual}/www/index.html  (embedding example: /www/embed.html; Ctrl-C stops)`);
}
