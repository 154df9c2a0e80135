// Hashes one file (sha256) while other workers scan it: {core} (the compiled core), then
// {file, method, timings} →
// {sha256, method, marks} | {error}. For a model folder checked against the trainer's signature:
// {model: [Blob, …], shardSize} → {progress: bytes read so far} now and then, then
// {digests: [{size, sha256, shards}, …]} (each file streamed through a ModelFileHasher). Method "webcrypto" reads the whole file into memory and
// digests it with the browser's SHA-256 (native code); "stream" (and "webcrypto" where
// crypto.subtle is missing, or when the file cannot be read whole) streams it through the
// wasm core's SHA-256, 1 MiB at a time. With `timings`, `marks` holds [what, epoch ms].
import init, { ModelFileHasher, Sha256Stream } from "./wasm.js";
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

/** Each model file's digests, read 1 MiB at a time; progress at most every 100 ms. */
async function model(files, shardSize) {
  await init(core);
  const digests = [];
  let loaded = 0;
  let last = 0;
  for (const file of files) {
    const hasher = new ModelFileHasher(shardSize || null);
    for await (const chunk of chunks(file)) {
      hasher.update(chunk);
      loaded += chunk.byteLength;
      if (performance.now() - last > 100) {
        last = performance.now();
        postMessage({ progress: loaded });
      }
    }
    digests.push(hasher.finish());
  }
  postMessage({ progress: loaded });
  return digests;
}

onmessage = async (event) => {
  if ("core" in event.data) {
    core = event.data.core || undefined;
    return;
  }
  if ("model" in event.data) {
    try {
      postMessage({ digests: await model(event.data.model, event.data.shardSize) });
    } catch (e) {
      postMessage({ error: String(e && e.message ? e.message : e) });
    }
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
