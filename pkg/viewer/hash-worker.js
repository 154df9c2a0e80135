// Hashes one file (sha256) while other workers scan it: {core} (the compiled core), then
// {file, method, timings} →
// {sha256, method, marks} | {error}. Method "webcrypto" reads the whole file into memory and
// digests it with the browser's SHA-256 (native code); "stream" (and "webcrypto" where
// crypto.subtle is missing, or when the file cannot be read whole) streams it through the
// wasm core's SHA-256, 1 MiB at a time. With `timings`, `marks` holds [what, epoch ms].
import init, { Sha256Stream } from "./wasm.js";
import { chunks } from "./chunks.js";

const now = () => performance.timeOrigin + performance.now();
const hex = (buffer) => Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");

async function webcrypto(file, marks) {
  if (!(globalThis.crypto && crypto.subtle)) return null;
  let bytes;
  try {
    bytes = await file.arrayBuffer();
  } catch {
    // Not enough memory for the whole file (or no such array buffer): stream it instead.
    return null;
  }
  if (marks) marks.push(["read", now()]);
  return hex(await crypto.subtle.digest("SHA-256", bytes));
}

/** The compiled core the gate worker posts first ({core}). */
let core;

async function stream(file, marks) {
  await init(core);
  if (marks) marks.push(["core ready", now()]);
  const hash = new Sha256Stream();
  for await (const chunk of chunks(file)) hash.update(chunk);
  return hash.finish();
}

onmessage = async (event) => {
  if ("core" in event.data) {
    core = event.data.core || undefined;
    return;
  }
  const { file, method, timings } = event.data;
  const marks = timings ? [["job", now()]] : null;
  try {
    let sha256 = method === "webcrypto" ? await webcrypto(file, marks) : null;
    const used = sha256 === null ? "stream" : "webcrypto";
    if (sha256 === null) sha256 = await stream(file, marks);
    if (marks) marks.push(["done", now()]);
    postMessage({ sha256, method: used, marks });
  } catch (e) {
    postMessage({ error: String(e && e.message ? e.message : e) });
  }
};
