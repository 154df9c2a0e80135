// The only module that touches the wasm package. It streams files into a GateSession and
// answers {id, type, payload} with {id, ok, result | error}; while it streams it posts
// {id, type: "progress", phase, loaded, total}. The audit log's sha256 is computed in a helper
// worker alongside: the decision does not wait for it; {type: "digests"} is posted once every
// audit file's digest is in the session (or {type: "digests", error}).
import init, { compiledModule, GateSession, ModelCheck, SegmentScanner, cosignDecision, diffDocuments, generateKeyPair, keyInfo, htmlAnswerCases, openSignedDecision, readOutput, readReview, reportHtml, reportMarkdown, reviewFile, sideBySide, signDecision, trainerKeyInfo, verifyEnvelope, verifyModelSignature } from "./wasm.js";
import { chunks } from "./chunks.js";
import { startHashWorker, startScanWorker } from "./assets.js";

const ready = init();
let session = null;
let auditFiles = [];
let gzipped = [];
let scanWorkers = 0;
/** When the last scan's digests start, if they have not: "ranges" (once pass 2 has read its
 * ranges) or "decision" (when the viewer asks, see `digests`); null once started. */
let digestsDeferred = null;
// Every request gets an epoch when it arrives; "cancel" cancels every request received before it.
let requestEpoch = 0;
let cancelEpoch = 0;
let currentEpoch = 0;
const cancelled = () => currentEpoch <= cancelEpoch;

/** The opt-in timeline (`<deploy-gate-viewer timings>`): [what, epoch ms] from this worker and
 * the scan and hash workers, which post theirs with their results; null when off. */
let timeline = null;
const now = () => performance.timeOrigin + performance.now();
function mark(what, at = now()) {
  if (timeline) timeline.push([what, at]);
}
/** Adds a scan or hash worker's marks, each prefixed with `who`. */
function marksFrom(who, marks) {
  if (timeline && marks) for (const [what, at] of marks) timeline.push([`${who} ${what}`, at]);
}

/** The bytes of a Blob, or the bytes themselves (an envelope is passed as the bytes verified). */
async function bytesOf(data) {
  return data instanceof Uint8Array ? data : new Uint8Array(await data.arrayBuffer());
}

class Cancelled extends Error {
  constructor() {
    super("cancelled");
    this.name = "Cancelled";
  }
}

function progress(id, phase, loaded, total) {
  postMessage({ id, type: "progress", phase, loaded, total });
}

async function isGzip(file) {
  const magic = new Uint8Array(await file.slice(0, 2).arrayBuffer());
  return magic.length === 2 && magic[0] === 0x1f && magic[1] === 0x8b;
}

/** The file's bytes as a stream (decompressed when gzip), counting the raw bytes read. */
function open(file, gzip, counter) {
  const counted = file.stream().pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        counter.raw += chunk.byteLength;
        controller.enqueue(chunk);
      },
    }),
  );
  return gzip ? counted.pipeThrough(new DecompressionStream("gzip")) : counted;
}

/** Scan workers started ahead of need: a worker's start (its modules, the core's compile and
 * instantiation) takes 0.1–0.3 s, which the drop would otherwise wait for. */
const spareScanWorkers = [];

/** The scan workers a large log gets (the viewer's scan-workers attribute, else one per core on
 * 2 cores, cores − 1 beyond, at most 8). */
function scanWorkerCount() {
  const cores = navigator.hardwareConcurrency || 2;
  return scanWorkers > 0 ? scanWorkers : Math.max(1, Math.min(8, cores >= 3 ? cores - 1 : cores));
}

/** And a hash worker: started by this worker, a worker only loads while this one's thread is
 * free, which it is not at the end of pass 1, when the hash starts. */
const spareHashWorkers = [];

/** A scan or hash worker given this worker's compiled core at once ({core}: it instantiates it, with
 * no fetch and no compile of its own). */
function withCore(start) {
  const worker = start();
  worker.postMessage({ core: compiledModule() });
  return worker;
}

/** Starts scan workers until that many are spare, and a hash worker. */
function warmWorkers() {
  while (spareScanWorkers.length < scanWorkerCount()) spareScanWorkers.push(withCore(startScanWorker));
  if (!spareHashWorkers.length) spareHashWorkers.push(withCore(startHashWorker));
}

/** A scan or hash worker: a spare one, else a new one. */
const takeScanWorker = () => spareScanWorkers.pop() || withCore(startScanWorker);
const takeHashWorker = () => spareHashWorkers.pop() || withCore(startHashWorker);

/** Helper workers running now, each with the function that fails its request. */
const helpers = new Map();

/** Runs a helper worker (started by `start`) for one job; cancel terminates it and fails the job.
 * The promise has a `stop()` that does the same for this job alone. */
function helper(start, script, job, onProgress, onReading) {
  const worker = start();
  const done = new Promise((resolve, reject) => {
    helpers.set(worker, reject);
    worker.onmessage = (e) => {
      if (e.data.reading) onReading && onReading();
      else if (e.data.progress !== undefined) onProgress && onProgress(e.data.progress);
      else if (e.data.error) reject(new Error(e.data.error));
      else resolve(e.data);
    };
    worker.onerror = (e) => reject(new Error(e.message || `${script} failed`));
  });
  worker.postMessage(job);
  const result = done.finally(() => {
    worker.terminate();
    helpers.delete(worker);
  });
  result.stop = () => {
    const reject = helpers.get(worker);
    if (!reject) return;
    worker.terminate();
    helpers.delete(worker);
    reject(new Cancelled());
  };
  return result;
}

function stopHelpers() {
  auditEpoch++;
  digestCache = new Map();
  for (const [worker, reject] of helpers) {
    worker.terminate();
    reject(new Cancelled());
  }
  helpers.clear();
}

/** Parts of a plain file for several scan workers: starts just after newlines. */
async function segmentStarts(file, parts) {
  const starts = [0];
  for (let i = 1; i < parts; i++) {
    let at = Math.floor((file.size * i) / parts);
    if (at <= starts[starts.length - 1]) continue;
    let found = -1;
    while (at < file.size) {
      const buf = new Uint8Array(await file.slice(at, Math.min(file.size, at + 65536)).arrayBuffer());
      const p = buf.indexOf(10);
      if (p >= 0) {
        found = at + p + 1;
        break;
      }
      at += buf.length;
    }
    if (found < 0 || found >= file.size) break;
    starts.push(found);
  }
  return starts;
}

/** Each audit File's sha256 (hex), computed once per File by a hash worker. */
let digestCache = new Map();
/** Bumped by every scan: digests arriving for an older scan are dropped. */
let auditEpoch = 0;

/** Audit files up to this size are hashed by the browser's own SHA-256 (WebCrypto's
 * `crypto.subtle.digest`, native code), which takes the whole file in memory: the hash worker
 * holds it, and the browser a copy while it digests, so the tab's memory grows by up to twice
 * this. Larger files are hashed as they stream, in wasm, holding 1 MiB. The default is 0 — every
 * file streams — because on the 2-core machine measured (docs/performance.md, "The page at the
 * speed of the disk") the streaming hash had the sha256 sooner at every size tried (1 GiB: 5.8 s
 * against 8.9 s from the drop; 256 MB: even) in a sixth of the memory: the page faults of
 * WebCrypto's two whole-file buffers cost more there than its SHA instructions save. A portal
 * whose machines differ sets another budget with the viewer's `webcrypto-hash-max="BYTES"`
 * attribute (Chromium reads no Blob of 2 GiB into one ArrayBuffer: such a file always streams,
 * and so does every file where `crypto.subtle` is missing or that cannot be read whole). */
const WEBCRYPTO_HASH_MAX_BYTES = 0;
/** The budget in force (the viewer's attribute, else the constant). */
let webcryptoMax = WEBCRYPTO_HASH_MAX_BYTES;
/** On 2 cores, when the hash starts: "drop", "scanned" (pass 1 done), "ranges" (pass 2's
 * reads done) or "decision". */
let hashStart = "ranges";

function digestOf(file) {
  let entry = digestCache.get(file);
  if (!entry) {
    const method = file.size <= webcryptoMax ? "webcrypto" : "stream";
    mark(`hash start (${method})`);
    const job = helper(takeHashWorker, "hash-worker.js", { file, method, timings: Boolean(timeline) });
    job.then((r) => marksFrom(`hash (${r.method})`, r.marks), () => {});
    entry = { digest: job.then((r) => r.sha256), stop: job.stop };
    digestCache.set(file, entry);
    entry.digest.catch(() => digestCache.get(file) === entry && digestCache.delete(file));
  }
  return entry.digest;
}

/** Stops hashing files that are no longer among the audit files (a log replaced by another). */
function forgetDigests(keep) {
  for (const [file, entry] of digestCache) {
    if (keep.includes(file)) continue;
    entry.stop();
    digestCache.delete(file);
  }
}

/** Puts the digests into the session when they are all in, then tells the page. */
function whenDigested(files) {
  const epoch = ++auditEpoch;
  Promise.all(files.map(digestOf)).then(
    (digests) => {
      if (epoch !== auditEpoch) return;
      try {
        digests.forEach((sha256, no) => session.setAuditDigest(no, sha256));
        mark("digests");
        postMessage({ type: "digests" });
      } catch (e) {
        postMessage({ type: "digests", error: String(e && e.message ? e.message : e) });
      }
    },
    (e) => {
      if (epoch === auditEpoch && !(e instanceof Cancelled)) postMessage({ type: "digests", error: String(e && e.message ? e.message : e) });
    },
  );
}

/** The verdict files in the session, by side: a case's answer is read from its file on demand
 * (`answers`), by the offsets the session keeps. */
const verdictFiles = { old: null, new: null };
const sideOf = (role) => (role.startsWith("old") ? "old" : "new");
/** Bytes of a verdict file given to the core at a time. */
const VERDICT_PIECE = 16 << 20;

/** Reads `role`'s verdict file into the session, a piece at a time: a gigabyte of answers never
 * sits in the module's memory, which never shrinks (the session keeps the answers' offsets only).
 * A file the pieces do not vouch for (a JSON syntax error, say) is then read whole, which names
 * what is wrong with it. */
async function readVerdicts(role, file) {
  verdictFiles[sideOf(role)] = null;
  const head = new Uint8Array(await file.slice(0, VERDICT_PIECE).arrayBuffer());
  // The core tells the format from the head's first non-blank line: a head of blanks alone, of
  // a larger file, cannot tell it, and the file is read whole.
  const blank = (b) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
  let read = !(head.length < file.size && head.every(blank)) && session.startVerdicts(role, file.name, head);
  if (read) {
    let more = session.feedVerdicts(head);
    for (let at = head.length; more && at < file.size; at += VERDICT_PIECE) {
      more = session.feedVerdicts(new Uint8Array(await file.slice(at, at + VERDICT_PIECE).arrayBuffer()));
    }
    read = session.finishVerdicts();
  }
  if (!read) session.addVerdicts(role, head.length >= file.size ? head : await readAll(file), file.name);
  verdictFiles[sideOf(role)] = file;
}

/** Files at least this large are scanned by several workers. */
const PARALLEL_FROM = 32 << 20;

/** Reads the verdict and trajectory files given with an audit log (`alongside`) into the
 * session: {role: null (read) | error message}. */
async function readAlongside(alongside) {
  const outcome = {};
  for (const { role, file } of alongside) {
    mark(`${role} start`);
    try {
      if (role.endsWith("verdicts")) await readVerdicts(role, file);
      else session.addTrajectories(role, await readAll(file), file.name);
      outcome[role] = null;
    } catch (e) {
      outcome[role] = String(e && e.message ? e.message : e);
    }
    mark(`${role} read`);
  }
  return outcome;
}

/** Pass 1 over the audit files. `whileScanning` runs once while the first large file's scan
 * workers read it (the gate worker is idle then), or else after the scan. */
async function scanAudit(id, whileScanning = async () => {}) {
  let ran = null;
  const runAlongside = () => (ran = ran || whileScanning());
  const total = auditFiles.reduce((n, f) => n + f.size, 0);
  const read = new Map();
  let lastPost = 0;
  const report = (key, bytes) => {
    read.set(key, bytes);
    const now = performance.now();
    if (now - lastPost > 100) {
      lastPost = now;
      progress(id, "scan", [...read.values()].reduce((a, b) => a + b, 0), total);
    }
  };
  digestsDeferred = null;
  session.removeInput("audit");
  session.beginSegmentedAudit();
  const pass = session.passVerdicts();
  // The decision does not wait for the sha256 (see whenDigested). With 3 or more cores, one
  // hashes while the others scan; with 2, both scan and the hash starts once pass 2 has read
  // its ranges (`hashStart`, default "ranges"), so that it slows neither the scan nor pass 2's
  // reads (a read of the whole file queues them behind it). The viewer's scan-workers
  // attribute overrides the number of scan workers.
  const cores = navigator.hardwareConcurrency || 2;
  const workers = scanWorkerCount();
  auditEpoch++;
  forgetDigests(auditFiles);
  const hashAt = cores > workers ? "drop" : hashStart;
  const startHashes = () => auditFiles.forEach((file) => digestOf(file).catch(() => {})); // awaited in whenDigested
  if (hashAt === "drop") startHashes();
  gzipped = [];
  for (const [no, file] of auditFiles.entries()) {
    session.addAuditFile(file.name);
    const gzip = await isGzip(file);
    gzipped.push(gzip);
    let segments;
    if (!gzip && workers > 1 && file.size >= PARALLEL_FROM) {
      const starts = await segmentStarts(file, workers);
      mark(`parts ${no}`);
      const ends = [...starts.slice(1), file.size];
      // Each scan worker says when its core is loaded and it reads: the verdict files are read
      // then, while the workers scan (the gate worker would be idle; before, its thread is
      // needed to load them).
      const reading = [];
      const scans = Promise.all(
        starts.map((start, k) => {
          let began;
          reading.push(new Promise((resolve) => (began = resolve)));
          const job = helper(takeScanWorker, "scan-worker.js", { file, no, start, end: ends[k], pass, timings: Boolean(timeline) }, (b) => report(`${no}:${k}`, b), began);
          job.finally(began).catch(() => {});
          return job;
        }),
      );
      scans.catch(() => {});
      await Promise.all(reading);
      await runAlongside();
      const results = await scans;
      results.forEach((r, k) => marksFrom(`scan ${no}:${k}`, r.marks));
      segments = results.map((r) => new Uint8Array(r.segment));
    } else {
      const scanner = new SegmentScanner(pass, no, 0);
      if (gzip) {
        const counter = { raw: 0 };
        const reader = open(file, true, counter).getReader();
        try {
          for (;;) {
            if (cancelled()) throw new Cancelled();
            const { done, value } = await reader.read();
            if (done) break;
            scanner.push(value);
            report(`${no}`, counter.raw);
          }
        } catch (e) {
          reader.cancel().catch(() => {});
          throw e;
        }
      } else {
        let raw = 0;
        for await (const value of chunks(file, cancelled)) {
          scanner.push(value);
          raw += value.byteLength;
          report(`${no}`, raw);
        }
        if (cancelled()) throw new Cancelled();
      }
      segments = [scanner.finish()];
    }
    mark(`scanned ${no}`);
    for (const segment of segments) session.mergeSegment(segment);
    mark(`merged ${no}`);
    session.setAuditFileDigest(no, file.size, "");
  }
  progress(id, "scan", total, total);
  await runAlongside();
  const summary = session.finishSegmentedAudit();
  mark("pass 1");
  if (hashAt === "drop" || hashAt === "scanned") whenDigested(auditFiles);
  else digestsDeferred = hashAt;
  return summary;
}

/** Reads a plain file's range [start, end) and feeds it to pass 2 (large ranges streamed). */
async function feedPlainRange(file, i, start, end, onBytes) {
  if (end - start <= 4 << 20) {
    const bytes = new Uint8Array(await file.slice(start, end).arrayBuffer());
    if (cancelled()) throw new Cancelled();
    session.feedRange(i, bytes);
    onBytes(bytes.length);
  } else {
    for await (const value of chunks(file.slice(start, end), cancelled)) {
      session.feedRange(i, value);
      onBytes(value.length);
    }
    if (cancelled()) throw new Cancelled();
  }
  session.endRange(i);
}

/** Pass 2's reads in flight at once: a File's read is a round trip to the browser process, and
 * 200 ranges of about 30 KB took 94–139 ms 16 at a time, 70–76 ms all at once (in a worker, the
 * 1 GiB log's ranges). */
const RANGE_LANES = 64;

/** Pass 2: reads the ranges of the chosen pipelines (several at once) and builds the test set. */
async function buildTestSet(id) {
  const flat = session.neededRanges();
  const count = flat.length / 3;
  const endOf = (i) => (flat[3 * i + 2] < 0 ? auditFiles[flat[3 * i]].size : flat[3 * i + 2]);
  let total = 0;
  for (let i = 0; i < count; i++) if (!gzipped[flat[3 * i]]) total += endOf(i) - flat[3 * i + 1];
  let done = 0;
  let lastPost = 0;
  const onBytes = (n) => {
    done += n;
    const now = performance.now();
    if (now - lastPost > 100) {
      lastPost = now;
      progress(id, "ranges", Math.min(done, total), total);
    }
  };
  for (const [no, file] of auditFiles.entries()) {
    const wanted = [];
    for (let i = 0; i < count; i++) if (flat[3 * i] === no) wanted.push(i);
    if (!wanted.length) continue;
    if (!gzipped[no]) {
      // RANGE_LANES ranges in flight at a time; each is fed in order, the ranges in any order.
      let next = 0;
      const lane = async () => {
        while (next < wanted.length) {
          const i = wanted[next++];
          await feedPlainRange(file, i, flat[3 * i + 1], endOf(i), onBytes);
        }
      };
      await Promise.all(Array.from({ length: Math.min(RANGE_LANES, wanted.length) }, lane));
      continue;
    }
    // A gzip file: decompress again and hand the core the whole stream (it keeps what the
    // ranges need and says when the rest is not needed).
    const reader = open(file, true, { raw: 0 }).getReader();
    try {
      for (;;) {
        if (cancelled()) throw new Cancelled();
        const { done, value } = await reader.read();
        if (done || !session.feedStream(no, value)) break;
      }
      session.endStream(no);
    } finally {
      reader.cancel().catch(() => {});
    }
  }
  progress(id, "ranges", total, total);
  mark("ranges read");
  if (digestsDeferred === "ranges") {
    digestsDeferred = null;
    whenDigested(auditFiles);
  }
  const testSet = session.finishTestSet();
  mark("pass 2");
  return testSet;
}

async function readAll(file) {
  return new Uint8Array(await file.arrayBuffer());
}

/** The most bytes a review file may hold (the core's `review::MAX_FILE_BYTES`). */
const REVIEW_MAX_BYTES = 64 * 1024 * 1024;

/** The answers the HTML report of the session's report `json` shows (the first listed cases'),
 * read from the verdict files by byte range as the drill-down reads them; undefined when
 * neither file carries answers. The report's cases are the test set's, in its order. */
async function htmlAnswers(json) {
  const sides = ["old", "new"].filter((side) => session.carriesOutputs(side) && verdictFiles[side]);
  if (!sides.length) return undefined;
  const answers = [];
  for (const index of htmlAnswerCases(json)) {
    const entry = { case: index };
    for (const side of sides) {
      const at = session.outputAt(side, index);
      if (!at) continue;
      const file = verdictFiles[side];
      const bytes = new Uint8Array(await file.slice(at.start, at.end).arrayBuffer());
      const text = readOutput(bytes, at);
      if (text === undefined) throw new Error(`${file.name}: bytes ${at.start}–${at.end} no longer hold a case's answer: the file changed since it was read`);
      entry[side] = text;
      entry[`${side}_truncated`] = at.truncated;
    }
    answers.push(entry);
  }
  return answers;
}

/** The review file's bytes of `marks` on the report `json`; undefined for none. */
function reviewBytes(json, marks) {
  return marks && marks.length ? new TextEncoder().encode(reviewFile(json, marks)) : undefined;
}

const handlers = {
  async init({ policy }) {
    session = new GateSession(policy);
    verdictFiles.old = verdictFiles.new = null;
    warmWorkers();
    return session.policy();
  },
  async policy({ policy }) {
    return session.setPolicy(policy);
  },
  async sniff({ file }) {
    let head = new Uint8Array(await file.slice(0, 65536).arrayBuffer());
    let name = file.name;
    if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) {
      // A gzip file: look at the start of its content.
      const reader = file.stream().pipeThrough(new DecompressionStream("gzip")).getReader();
      try {
        const { value } = await reader.read();
        head = value || new Uint8Array(0);
      } catch {
        head = new Uint8Array(0);
      } finally {
        reader.cancel().catch(() => {});
      }
      name = name.replace(/\.gz$/i, "");
    }
    return GateSession.sniffRole(name, head);
  },
  /** Scans the audit `files` (pass 1 and pass 2); the verdict and trajectory files given
   * `alongside` ([{role, file}]) are read during the scan, each outcome in the result's
   * `alongside` ({role: null | error message}). */
  async audit({ files, workers, timings, webcryptoHashMax, hashStart: start, alongside = [] }, id) {
    timeline = timings ? [["audit", now()]] : null;
    webcryptoMax = webcryptoHashMax ?? WEBCRYPTO_HASH_MAX_BYTES;
    hashStart = start || "ranges";
    auditFiles = files;
    scanWorkers = Number(workers) || 0;
    if (files.length === 0) {
      auditEpoch++;
      digestsDeferred = null;
      forgetDigests([]);
      session.removeInput("audit");
      return null;
    }
    let outcome = {};
    const summary = await scanAudit(id, async () => {
      outcome = await readAlongside(alongside);
    });
    const testSet = await buildTestSet(id);
    return { summary, testSet, alongside: outcome };
  },
  async rescan(_, id) {
    const summary = await scanAudit(id);
    const testSet = await buildTestSet(id);
    return { summary, testSet };
  },
  async rebuild(_, id) {
    return { testSet: await buildTestSet(id) };
  },
  async verdicts({ role, file }) {
    mark(`${role} start`);
    await readVerdicts(role, file);
    mark(`${role} read`);
    return null;
  },
  async trajectories({ role, file }) {
    session.addTrajectories(role, await readAll(file), file.name);
    return null;
  },
  async remove({ role }) {
    session.removeInput(role);
    if (role.endsWith("verdicts")) verdictFiles[sideOf(role)] = null;
    return null;
  },
  /** Starts the audit digests a scan deferred (the viewer asks after each of its tasks). */
  async digests() {
    // The next log's scan workers start now, while the page shows this one's decision.
    warmWorkers();
    if (digestsDeferred) {
      digestsDeferred = null;
      whenDigested(auditFiles);
    }
    return null;
  },
  /** The report with its `cases` left empty, and how many there are: the page takes them with
   * `caseSlice`, a few thousand per message, so that no single message (200,000 cases take about
   * a second to copy) blocks its main thread. `withCases: false` keeps no cases to take. */
  async evaluate({ withCases = true }) {
    if (!session.isReady()) return null;
    mark("evaluate");
    const report = JSON.parse(session.evaluateJson());
    mark("evaluated");
    evaluation++;
    if (withCases) casesShown = evaluation;
    lastCases = withCases ? { evaluation, outcomes: report.cases, testCases: session.testCases() } : null;
    const numCases = lastCases ? Math.max(lastCases.outcomes.length, lastCases.testCases.length) : 0;
    report.cases = [];
    // Each test case's latency and tokens per model (typed arrays: a copy, not a clone per case).
    const costs = withCases ? { old: session.caseCosts("old") ?? null, new: session.caseCosts("new") ?? null } : null;
    return { report, evaluation, numCases, costs };
  },
  /** Cases `from`..`to` of the last evaluation: the report's outcomes and the test cases. */
  async caseSlice({ evaluation: wanted, from, to }) {
    if (!lastCases || lastCases.evaluation !== wanted) throw new Error("the evaluation changed while its cases were being read");
    const slice = { outcomes: lastCases.outcomes.slice(from, to), testCases: lastCases.testCases.slice(from, to) };
    if (to >= Math.max(lastCases.outcomes.length, lastCases.testCases.length)) lastCases = null;
    return slice;
  },
  /** Test case `index`'s two answers (its records' `output`), read from the verdict files by
   * byte range and shown side by side; null when neither record carries one. `wanted` is the
   * evaluation whose cases the page shows. The answers are never kept here: only the offsets. */
  async answers({ evaluation: wanted, index }) {
    if (wanted !== casesShown) throw new Error("the files changed: the case's answers are no longer those shown");
    const read = async (side) => {
      const at = session.outputAt(side, index);
      const file = verdictFiles[side];
      if (!at || !file) return [undefined, false];
      let bytes;
      try {
        bytes = new Uint8Array(await file.slice(at.start, at.end).arrayBuffer());
      } catch (e) {
        throw new Error(`${file.name}: cannot be read again (${e && e.message ? e.message : e}): drop it again to see its answers`);
      }
      const json = readOutput(bytes, at);
      if (json === undefined) throw new Error(`${file.name}: bytes ${at.start}–${at.end} no longer hold the case's answer: the file changed since it was read`);
      return [json, at.truncated];
    };
    const [old, neu] = [await read("old"), await read("new")];
    if (old[0] === undefined && neu[0] === undefined) return null;
    return sideBySide(old[0], old[1], neu[0], neu[1]);
  },
  /** Test case `index`'s trajectory results, old beside new (the results that name its
   * pipeline_id), or null. `wanted`: the evaluation whose cases the page shows. */
  async trajectory({ evaluation: wanted, index }) {
    if (wanted !== casesShown) throw new Error("the files changed: the case's trajectories are no longer those shown");
    return session.caseTrajectory(index) ?? null;
  },
  /** The report JSON, as the CLI writes it. */
  /** The timeline recorded since the last `audit` with `timings` (null when off). */
  async timings() {
    return timeline;
  },
  async reportJson() {
    return session.isReady() ? session.evaluateJson() : null;
  },
  async testSet() {
    return session.testSetJsonl();
  },
  /** The standalone HTML report of a report's JSON text (the CLI's `--html` bytes); without
   * one, of the session's report. */
  async reportHtml({ json, marks }) {
    if (json) return reportHtml(json, undefined, undefined);
    const report = session.evaluateJson();
    return reportHtml(report, reviewBytes(report, marks), await htmlAnswers(report));
  },

  /** The Markdown summary of a report JSON (the CLI's `--markdown` text); without one, of the
   * session's report (which stays here: it can be tens of MB). */
  async markdown({ json, marks }) {
    const report = json ?? session.evaluateJson();
    return reportMarkdown(report, json ? undefined : reviewBytes(report, marks));
  },
  async keygen() {
    return generateKeyPair(crypto.getRandomValues(new Uint8Array(32)));
  },
  async keyInfo({ pem }) {
    return keyInfo(pem);
  },
  /** Signs the session's decision; with `marks` (the reviewer's, CaseReviewMark[]) the
   * statement pins their review file, which comes back beside the envelope. */
  async sign({ privatePem, modelName, modelDigest, target, marks }) {
    const json = session.evaluateJson();
    const review = marks ? reviewFile(json, marks) : null;
    const envelope = signDecision(json, privatePem, modelName, modelDigest, target, Math.floor(Date.now() / 1000), review === null ? undefined : new TextEncoder().encode(review));
    return { envelope, review };
  },
  /** The sha256 (hex) of the session's report JSON: the key its review marks are kept under. */
  async reportDigest() {
    if (!session.isReady()) return null;
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(session.evaluateJson()));
    return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  },
  /** The review file of the reviewer's marks on the session's report (CaseReviewMark[]). */
  async reviewFile({ marks }) {
    return reviewFile(session.evaluateJson(), marks);
  },
  /** A review file (a File) read against the session's report. */
  async readReview({ file }) {
    if (file.size > REVIEW_MAX_BYTES) throw new Error(`${file.name}: ${file.size} bytes, more than the ${REVIEW_MAX_BYTES} a review file may hold`);
    return readReview(session.evaluateJson(), new Uint8Array(await file.arrayBuffer()), file.name);
  },
  async verify({ envelope, trustedPems, options }) {
    return verifyEnvelope(new Uint8Array(await envelope.arrayBuffer()), trustedPems, { ...options, now: Math.floor(Date.now() / 1000) });
  },
  /** Verifies a signed decision and, when valid, gives the report from its verified statement. */
  async open({ envelope, trustedPems, options }) {
    return openSignedDecision(await bytesOf(envelope), trustedPems, { ...options, now: Math.floor(Date.now() / 1000) });
  },
  /** Compares two evaluations (each a report or a signed decision, read only once it verifies
   * against `trustedPems`): the diff's summary, what the decisions rest on (the headline's
   * `rests on N of M test cases`) and the lengths of its lists, which the page takes with
   * `diffSlice`. The diff stays here (its exports come from `diffExport`). */
  /** Compares two documents; with `reviews` ([before, after] review files), the marks that
   * changed too (`reviewError`: why the review files could not be compared; the diff stands). */
  async compare({ before, after, names = ["before", "after"], trustedPems = [], reviews = null }) {
    const [b, a] = [await bytesOf(before), await bytesOf(after)];
    if (lastDiff) lastDiff.handle.free();
    lastDiff = null;
    const handle = diffDocuments(b, a, { before_name: names[0], after_name: names[1], trusted_keys: trustedPems });
    lastDiff = { id: ++diffs, handle };
    let reviewError = null;
    let reviewChanges = null;
    if (reviews) {
      try {
        handle.setReviews(reviews[0].name, await bytesOf(reviews[0]), reviews[1].name, await bytesOf(reviews[1]));
        reviewChanges = handle.reviewChanges(0, Number.MAX_SAFE_INTEGER);
      } catch (e) {
        reviewError = String(e && e.message ? e.message : e);
      }
    }
    const summary = handle.summary();
    if (summary.review_changes) summary.review_changes = [];
    return { diff: lastDiff.id, summary, restsOn: handle.restsOn, flipCount: handle.flipCount, templateCount: handle.templateCount, onlyBeforeCount: handle.onlyBeforeCount, onlyAfterCount: handle.onlyAfterCount, reviewChanges, reviewError };
  },
  /** Items `from`..`to` of one of the last diff's lists: `flips`, `templates`, `only_before`, `only_after`. */
  async diffSlice({ diff, kind, from, to }) {
    const d = currentDiff(diff);
    if (kind === "flips") return d.flips(from, to);
    if (kind === "templates") return d.templates(from, to);
    if (kind === "only_before" || kind === "only_after") return d.onlyIds(kind.slice(5), from, to);
    throw new Error(`no list ${kind}`);
  },
  /** The last diff as `deploy-gate diff` writes it: `json` (--out), `markdown`, `html`, `junit`. */
  async diffExport({ diff, kind }) {
    const d = currentDiff(diff);
    if (kind === "json") return d.json();
    if (kind === "markdown") return d.markdown();
    if (kind === "html") return d.html();
    if (kind === "junit") return d.junit();
    throw new Error(`no export ${kind}`);
  },
  /** A trusted trainer key (ECDSA P-256/P-384) or root certificates: what the PEM holds. */
  async trainerKeyInfo({ pem }) {
    return trainerKeyInfo(pem);
  },
  /** Verifies a trainer's model.sig (its files not compared): the ModelSignatureResult. */
  async modelSignature({ bundle, trustedPems, ...trust }) {
    return verifyModelSignature(await bytesOf(bundle), trustedPems, undefined, modelOptions(trust));
  },
  /** Verifies a model.sig and compares a model folder's files with it (see `checkModelFiles`). */
  async modelFiles(payload, id) {
    return checkModelFiles(payload, id);
  },
  /** Adds a signature to a signed decision that verifies against the trusted keys. */
  async cosign({ envelope, privatePem, trustedPems, options }) {
    return cosignDecision(await bytesOf(envelope), privatePem, trustedPems, { ...options, now: Math.floor(Date.now() / 1000) });
  },
};

/** The core's ModelSignatureOptions: root certificates, keyless signers ({identity, issuer})
 * with the Sigstore trusted root's text (null: the bundled one), the decision's model. */
function modelOptions({ rootPems = [], identities = [], sigstoreRoot = null, decision = null }) {
  const options = { trusted_roots: rootPems };
  if (identities.length) options.trainer_identities = identities.map(({ identity, issuer }) => ({ identity, issuer }));
  if (identities.length && sigstoreRoot) options.sigstore_root = sigstoreRoot;
  if (decision) options.decision = decision;
  return options;
}

/** The model hash workers: at most this many (each streams its files one after another). */
const MODEL_HASH_WORKERS = 4;

/** Verifies a model.sig, then hashes the model's files ({path, file}: path relative to the
 * model root) in hash workers — the largest first, each to the least loaded worker, every file
 * streamed 1 MiB at a time — and compares them with the signed ones. Posts progress
 * ({phase: "model", loaded, total}). Files the signature ignores are hashed only when the
 * decision names the model by the original directory digest, which counts them. */
async function checkModelFiles({ bundle, trustedPems, files, ...trust }, id) {
  const decision = trust.decision || null;
  const check = new ModelCheck(await bytesOf(bundle), trustedPems, modelOptions(trust));
  try {
    if (!check.bundleValid) return check.result();
    const shardSize = check.shardSize;
    const needIgnored = Boolean(decision) && !decision.digest_scheme;
    const wanted = files.filter((f) => needIgnored || !check.ignored(f.path));
    const total = wanted.reduce((n, f) => n + f.file.size, 0);
    const count = Math.max(1, Math.min(wanted.length, navigator.hardwareConcurrency || 2, MODEL_HASH_WORKERS));
    const shares = Array.from({ length: count }, () => ({ files: [], bytes: 0 }));
    for (const f of [...wanted].sort((a, b) => b.file.size - a.file.size)) {
      const share = shares.reduce((a, b) => (b.bytes < a.bytes ? b : a));
      share.files.push(f);
      share.bytes += f.file.size;
    }
    const busy = shares.filter((share) => share.files.length);
    const loaded = busy.map(() => 0);
    progress(id, "model", 0, total);
    const jobs = busy.map((share, k) =>
      helper(takeHashWorker, "hash-worker.js", { model: share.files.map((f) => f.file), shardSize }, (b) => {
        loaded[k] = b;
        progress(id, "model", loaded.reduce((x, y) => x + y, 0), total);
      }),
    );
    let results;
    try {
      results = await Promise.all(jobs);
    } catch (e) {
      for (const job of jobs) job.stop();
      throw e;
    }
    busy.forEach((share, k) => share.files.forEach((f, i) => {
      const d = results[k].digests[i];
      check.addFileDigests(f.path, d.size, d.sha256, d.shards);
    }));
    return check.finish();
  } finally {
    check.free();
  }
}

/** The last comparison (`compare`): its number and the core's diff. */
let diffs = 0;
let lastDiff = null;
function currentDiff(id) {
  if (!lastDiff || lastDiff.id !== id) throw new Error("the comparison changed while it was being read");
  return lastDiff.handle;
}

let queue = Promise.resolve();
/** The last evaluation's number, the cases the page has yet to take (see `evaluate`) and the
 * number of the evaluation whose cases it shows (`answers`). */
let evaluation = 0;
let lastCases = null;
let casesShown = 0;
/** The requests that change the session's inputs or policy. */
const CHANGES = new Set(["init", "policy", "audit", "rescan", "rebuild", "verdicts", "trajectories", "remove"]);

onmessage = (event) => {
  const { id, type, payload } = event.data;
  if (type === "cancel") {
    cancelEpoch = requestEpoch;
    stopHelpers();
    return;
  }
  const epoch = ++requestEpoch;
  // Whatever changes the session's inputs or policy: the cases on screen are no longer its, so
  // no answer is read for them until the page takes the next evaluation's.
  if (CHANGES.has(type)) casesShown = 0;
  if (type === "modelFiles") {
    // Hashing a model folder can take minutes: it runs beside the queue (it touches no session),
    // and a cancel stops its hash workers.
    ready
      .then(() => handlers[type](payload || {}, id))
      .then(
        (result) => postMessage({ id, ok: true, result }),
        (e) => {
          const cancelledRun = e instanceof Cancelled;
          postMessage({ id, ok: false, error: cancelledRun ? "cancelled" : String(e && e.message ? e.message : e), cancelled: cancelledRun });
        },
      );
    return;
  }
  queue = queue.then(async () => {
    await ready;
    if (type !== "init" && !session) session = new GateSession(undefined);
    currentEpoch = epoch;
    try {
      const result = await handlers[type](payload || {}, id);
      postMessage({ id, ok: true, result });
    } catch (e) {
      const cancelledRun = e instanceof Cancelled;
      postMessage({ id, ok: false, error: cancelledRun ? "cancelled" : String(e && e.message ? e.message : e), cancelled: cancelledRun });
    }
  });
};
