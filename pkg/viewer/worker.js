// The only module that touches the wasm package. It streams files into a GateSession and
// answers {id, type, payload} with {id, ok, result | error}; while it streams it posts
// {id, type: "progress", phase, loaded, total}. The audit log's sha256 is computed in a helper
// worker alongside: the decision does not wait for it; {type: "digests"} is posted once every
// audit file's digest is in the session (or {type: "digests", error}).
import init, { GateSession, SegmentScanner, cosignDecision, generateKeyPair, keyInfo, openSignedDecision, reportHtml, reportMarkdown, signDecision, verifyEnvelope } from "./wasm.js";
import { chunks } from "./chunks.js";
import { startHashWorker, startScanWorker } from "./assets.js";

const ready = init();
let session = null;
let auditFiles = [];
let gzipped = [];
let scanWorkers = 0;
/** A scan whose digests are to be computed once the page has its decision (see `digests`). */
let digestsDeferred = false;
// Every request gets an epoch when it arrives; "cancel" cancels every request received before it.
let requestEpoch = 0;
let cancelEpoch = 0;
let currentEpoch = 0;
const cancelled = () => currentEpoch <= cancelEpoch;

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

/** Helper workers running now, each with the function that fails its request. */
const helpers = new Map();

/** Runs a helper worker (started by `start`) for one job; cancel terminates it and fails the job.
 * The promise has a `stop()` that does the same for this job alone. */
function helper(start, script, job, onProgress) {
  const worker = start();
  const done = new Promise((resolve, reject) => {
    helpers.set(worker, reject);
    worker.onmessage = (e) => {
      if (e.data.progress !== undefined) onProgress && onProgress(e.data.progress);
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

function digestOf(file) {
  let entry = digestCache.get(file);
  if (!entry) {
    const job = helper(startHashWorker, "hash-worker.js", { file });
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

/** Files at least this large are scanned by several workers. */
const PARALLEL_FROM = 32 << 20;

async function scanAudit(id) {
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
  digestsDeferred = false;
  session.removeInput("audit");
  session.beginSegmentedAudit();
  const pass = session.passVerdicts();
  // The decision does not wait for the sha256 (see whenDigested). With 3 or more cores, one
  // hashes while the others scan; with 2, both scan and the hash starts once the decision is
  // on screen (the viewer then asks for `digests`), so it does not slow pass 2, the verdict
  // files and the evaluation down. The viewer's scan-workers attribute overrides the number
  // of scan workers.
  const cores = navigator.hardwareConcurrency || 2;
  const workers = scanWorkers > 0 ? scanWorkers : Math.max(1, Math.min(8, cores >= 3 ? cores - 1 : cores));
  auditEpoch++;
  forgetDigests(auditFiles);
  if (cores > workers) for (const file of auditFiles) digestOf(file).catch(() => {}); // awaited in whenDigested
  gzipped = [];
  for (const [no, file] of auditFiles.entries()) {
    session.addAuditFile(file.name);
    const gzip = await isGzip(file);
    gzipped.push(gzip);
    let segments;
    if (!gzip && workers > 1 && file.size >= PARALLEL_FROM) {
      const starts = await segmentStarts(file, workers);
      const ends = [...starts.slice(1), file.size];
      const results = await Promise.all(
        starts.map((start, k) => helper(startScanWorker, "scan-worker.js", { file, no, start, end: ends[k], pass }, (b) => report(`${no}:${k}`, b))),
      );
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
    for (const segment of segments) session.mergeSegment(segment);
    session.setAuditFileDigest(no, file.size, "");
  }
  progress(id, "scan", total, total);
  const summary = session.finishSegmentedAudit();
  digestsDeferred = cores <= workers;
  if (!digestsDeferred) whenDigested(auditFiles);
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
      // Sixteen ranges in flight at a time; each is fed in order, the ranges in any order.
      let next = 0;
      const lane = async () => {
        while (next < wanted.length) {
          const i = wanted[next++];
          await feedPlainRange(file, i, flat[3 * i + 1], endOf(i), onBytes);
        }
      };
      await Promise.all(Array.from({ length: Math.min(16, wanted.length) }, lane));
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
  return session.finishTestSet();
}

async function readAll(file) {
  return new Uint8Array(await file.arrayBuffer());
}

const handlers = {
  async init({ policy }) {
    session = new GateSession(policy);
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
  async audit({ files, workers }, id) {
    auditFiles = files;
    scanWorkers = Number(workers) || 0;
    if (files.length === 0) {
      auditEpoch++;
      digestsDeferred = false;
      forgetDigests([]);
      session.removeInput("audit");
      return null;
    }
    const summary = await scanAudit(id);
    const testSet = await buildTestSet(id);
    return { summary, testSet };
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
    session.addVerdicts(role, await readAll(file), file.name);
    return null;
  },
  async trajectories({ role, file }) {
    session.addTrajectories(role, await readAll(file), file.name);
    return null;
  },
  async remove({ role }) {
    session.removeInput(role);
    return null;
  },
  /** Starts the audit digests a scan deferred (the viewer asks after each of its tasks). */
  async digests() {
    if (digestsDeferred) {
      digestsDeferred = false;
      whenDigested(auditFiles);
    }
    return null;
  },
  /** The report with its `cases` left empty, and how many there are: the page takes them with
   * `caseSlice`, a few thousand per message, so that no single message (200,000 cases take about
   * a second to copy) blocks its main thread. `withCases: false` keeps no cases to take. */
  async evaluate({ withCases = true }) {
    if (!session.isReady()) return null;
    const report = JSON.parse(session.evaluateJson());
    evaluation++;
    lastCases = withCases ? { evaluation, outcomes: report.cases, testCases: session.testCases() } : null;
    const numCases = lastCases ? Math.max(lastCases.outcomes.length, lastCases.testCases.length) : 0;
    report.cases = [];
    return { report, evaluation, numCases };
  },
  /** Cases `from`..`to` of the last evaluation: the report's outcomes and the test cases. */
  async caseSlice({ evaluation: wanted, from, to }) {
    if (!lastCases || lastCases.evaluation !== wanted) throw new Error("the evaluation changed while its cases were being read");
    const slice = { outcomes: lastCases.outcomes.slice(from, to), testCases: lastCases.testCases.slice(from, to) };
    if (to >= Math.max(lastCases.outcomes.length, lastCases.testCases.length)) lastCases = null;
    return slice;
  },
  /** The report JSON, as the CLI writes it. */
  async reportJson() {
    return session.isReady() ? session.evaluateJson() : null;
  },
  async testSet() {
    return session.testSetJsonl();
  },
  /** The standalone HTML report of a report's JSON text (the CLI's `--html` bytes); without
   * one, of the session's report. */
  async reportHtml({ json }) {
    return reportHtml(json ?? session.evaluateJson());
  },

  /** The Markdown summary of a report JSON (the CLI's `--markdown` text); without one, of the
   * session's report (which stays here: it can be tens of MB). */
  async markdown({ json }) {
    return reportMarkdown(json ?? session.evaluateJson());
  },
  async keygen() {
    return generateKeyPair(crypto.getRandomValues(new Uint8Array(32)));
  },
  async keyInfo({ pem }) {
    return keyInfo(pem);
  },
  async sign({ privatePem, modelName, modelDigest, target }) {
    return signDecision(session.evaluateJson(), privatePem, modelName, modelDigest, target, Math.floor(Date.now() / 1000));
  },
  async verify({ envelope, trustedPems, options }) {
    return verifyEnvelope(new Uint8Array(await envelope.arrayBuffer()), trustedPems, { ...options, now: Math.floor(Date.now() / 1000) });
  },
  /** Verifies a signed decision and, when valid, gives the report from its verified statement. */
  async open({ envelope, trustedPems, options }) {
    return openSignedDecision(await bytesOf(envelope), trustedPems, { ...options, now: Math.floor(Date.now() / 1000) });
  },
  /** Adds a signature to a signed decision that verifies against the trusted keys. */
  async cosign({ envelope, privatePem, trustedPems, options }) {
    return cosignDecision(await bytesOf(envelope), privatePem, trustedPems, { ...options, now: Math.floor(Date.now() / 1000) });
  },
};

let queue = Promise.resolve();
/** The last evaluation's number and the cases the page has yet to take (see `evaluate`). */
let evaluation = 0;
let lastCases = null;

onmessage = (event) => {
  const { id, type, payload } = event.data;
  if (type === "cancel") {
    cancelEpoch = requestEpoch;
    stopHelpers();
    return;
  }
  const epoch = ++requestEpoch;
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
