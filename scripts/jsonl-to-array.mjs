// Rewrites a JSONL verdict file as a JSON array of the same records (one element a line), a
// piece at a time: the benchmark's answers files in the other JSON form.
// Usage: node scripts/jsonl-to-array.mjs IN.jsonl OUT.json
import fs from "node:fs";
import readline from "node:readline";

const [from, to] = process.argv.slice(2);
if (!from || !to) {
  console.error("usage: node scripts/jsonl-to-array.mjs IN.jsonl OUT.json");
  process.exit(2);
}
const out = fs.createWriteStream(to);
const write = (text) => (out.write(text) ? null : new Promise((resolve) => out.once("drain", resolve)));
await write("[\n");
let first = true;
for await (const line of readline.createInterface({ input: fs.createReadStream(from), crlfDelay: Infinity })) {
  if (!line.trim()) continue;
  await write(first ? line : `,\n${line}`);
  first = false;
}
await write("\n]\n");
await new Promise((resolve, reject) => out.end((e) => (e ? reject(e) : resolve())));
