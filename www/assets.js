// Where the viewer finds its workers and its styles: next to this module
// (`new URL(…, import.meta.url)`, which bundlers such as Vite, webpack and Parcel follow). The
// single-file viewer (scripts/build-single.mjs) replaces this module with one that starts the
// workers from blob URLs and has the styles inline. (The example is opt-in: example-files.js.)

/** The viewer's worker (worker.js). */
export const startWorker = () => new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
/** A worker scanning one part of an audit log (scan-worker.js). */
export const startScanWorker = () => new Worker(new URL("./scan-worker.js", import.meta.url), { type: "module" });
/** A worker hashing one audit file (hash-worker.js). */
export const startHashWorker = () => new Worker(new URL("./hash-worker.js", import.meta.url), { type: "module" });
/** The stylesheet to link when the page has not loaded the viewer's styles itself. */
export const styleUrl = () => new URL("./style.css", import.meta.url).href;

