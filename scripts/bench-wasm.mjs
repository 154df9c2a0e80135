// MB/s of the wasm core under node on one core: pass 1 over the audit log (4 MiB chunks, with
// sha256), pass 2 over the chosen pipelines' ranges, both verdict files and the report.
// Usage: node scripts/bench-wasm.mjs [DIR]   (default bench-data)
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { initSync, GateSession } from "../pkg/deploy_gate.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dir = path.resolve(process.argv[2] || path.join(root, "bench-data"));
initSync({ module: fs.readFileSync(path.join(root, "pkg/deploy_gate_bg.wasm")) });
const audit = path.join(dir, "audit.jsonl");
const size = fs.statSync(audit).size;
const t0 = performance.now();
const s = new GateSession({});
if (process.env.NO_HASH) s.setHashing(false);
s.beginAudit("audit.jsonl");
const fd = fs.openSync(audit, "r");
const buf = Buffer.allocUnsafe(4 << 20);
for (let pos = 0; ; ) {
  const n = fs.readSync(fd, buf, 0, buf.length, pos);
  if (n === 0) break;
  s.pushAudit(buf.subarray(0, n));
  pos += n;
}
s.finishAudit();
const t1 = performance.now();
const ranges = s.neededRanges();
let reread = 0;
for (let i = 0; i < ranges.length / 3; i++) {
  const end = ranges[3 * i + 2] < 0 ? size : ranges[3 * i + 2];
  for (let pos = ranges[3 * i + 1]; pos < end; ) {
    const n = fs.readSync(fd, buf, 0, Math.min(buf.length, end - pos), pos);
    if (n === 0) break;
    s.feedRange(i, buf.subarray(0, n));
    pos += n;
    reread += n;
  }
  s.endRange(i);
}
s.finishTestSet();
s.addVerdicts("old", fs.readFileSync(path.join(dir, "old_verdicts.jsonl")), "old_verdicts.jsonl");
s.addVerdicts("new", fs.readFileSync(path.join(dir, "new_verdicts.jsonl")), "new_verdicts.jsonl");
const report = s.evaluate();
const t2 = performance.now();
const mbps = (ms) => ((size / 1e6) / (ms / 1000)).toFixed(0);
console.log(`wasm core (node ${process.version}, one core): pass 1 ${((t1 - t0) / 1000).toFixed(2)} s = ${mbps(t1 - t0)} MB/s; pass 2 read ${(reread / 1e6).toFixed(1)} MB; whole evaluation ${((t2 - t0) / 1000).toFixed(2)} s = ${mbps(t2 - t0)} MB/s — ${report.decision.reason}`);
