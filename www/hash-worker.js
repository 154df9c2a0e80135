// Hashes one file (sha256) while other workers scan it: {file} → {sha256} | {error}.
import init, { Sha256Stream } from "../pkg/deploy_gate.js";

onmessage = async (event) => {
  try {
    await init();
    const hash = new Sha256Stream();
    const reader = event.data.file.stream().getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      hash.update(value);
    }
    postMessage({ sha256: hash.finish() });
  } catch (e) {
    postMessage({ error: String(e && e.message ? e.message : e) });
  }
};
