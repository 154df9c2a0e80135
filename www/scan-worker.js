// Scans one newline-aligned part of an audit file (pass 1) and returns the segment:
// {file, no, start, end, pass} → {progress: bytes}… then {segment: ArrayBuffer} | {error}.
import init, { SegmentScanner } from "./wasm.js";
import { chunks } from "./chunks.js";

onmessage = async (event) => {
  const { file, no, start, end, pass } = event.data;
  try {
    await init();
    const scanner = new SegmentScanner(pass, no, start);
    let done = 0;
    let last = 0;
    for await (const value of chunks(file.slice(start, end))) {
      scanner.push(value);
      done += value.byteLength;
      const now = performance.now();
      if (now - last > 100) {
        last = now;
        postMessage({ progress: done });
      }
    }
    postMessage({ progress: done });
    const bytes = scanner.finish();
    postMessage({ segment: bytes.buffer }, [bytes.buffer]);
  } catch (e) {
    postMessage({ error: String(e && e.message ? e.message : e) });
  }
};
