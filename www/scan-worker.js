// Scans one newline-aligned part of an audit file (pass 1) and returns the segment:
// {core} (the compiled core, first), then {file, no, start, end, pass, timings} →
// {reading}, {progress: bytes}… then {segment: ArrayBuffer, marks} | {error}. With `timings`,
// `marks` holds [what, epoch ms] for the viewer's timeline.
import init, { SegmentScanner } from "./wasm.js";
import { chunks } from "./chunks.js";

const now = () => performance.timeOrigin + performance.now();
const started = now();
/** The core, instantiated from the module the gate worker posts first ({core}), as soon as it
 * comes (the gate worker starts spare scan workers ahead of need); the end time. */
let ready = null;
const load = (module) => {
  ready = init(module || undefined).then(() => now());
  ready.catch(() => {}); // reported to the job that awaits it
  return ready;
};

onmessage = async (event) => {
  if ("core" in event.data) return void load(event.data.core);
  const { file, no, start, end, pass, timings } = event.data;
  const marks = timings ? [["started", started], ["job", now()]] : null;
  try {
    const at = await (ready || load());
    if (marks) marks.push(["core ready", at]);
    const scanner = new SegmentScanner(pass, no, start);
    postMessage({ reading: true });
    let done = 0;
    let last = 0;
    for await (const value of chunks(file.slice(start, end))) {
      if (marks && done === 0) marks.push(["first chunk", now()]);
      scanner.push(value);
      done += value.byteLength;
      const t = performance.now();
      if (t - last > 100) {
        last = t;
        postMessage({ progress: done });
      }
    }
    postMessage({ progress: done });
    if (marks) marks.push(["read", now()]);
    const bytes = scanner.finish();
    if (marks) marks.push(["segment", now()]);
    postMessage({ segment: bytes.buffer, marks }, [bytes.buffer]);
  } catch (e) {
    postMessage({ error: String(e && e.message ? e.message : e) });
  }
};
