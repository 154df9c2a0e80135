// Hashes one file (sha256) while other workers scan it: {file} → {sha256} | {error}.
import init, { Sha256Stream } from "./wasm.js";
import { chunks } from "./chunks.js";

onmessage = async (event) => {
  try {
    await init();
    const hash = new Sha256Stream();
    for await (const chunk of chunks(event.data.file)) hash.update(chunk);
    postMessage({ sha256: hash.finish() });
  } catch (e) {
    postMessage({ error: String(e && e.message ? e.message : e) });
  }
};
