// The only module that touches the wasm package. It streams files into a GateSession and
// answers {id, type, payload} with {id, ok, result | error}; while it streams it posts
// {id, type: "progress", phase, loaded, total}.
import init, { GateSession, generateKeyPair, keyInfo, signDecision, verifyEnvelope } from "../pkg/deploy_gate.js";

const ready = init();
let session = null;
let auditFiles = [];
// Every request gets an epoch when it arrives; "cancel" cancels every request received before it.
let requestEpoch = 0;
let cancelEpoch = 0;
let currentEpoch = 0;
const cancelled = () => currentEpoch <= cancelEpoch;

class Cancelled extends Error {
  constructor() {
    super("cancelled");
    this.name = "Cancelled";
  }
}

function progress(id, phase, loaded, total) {
  postMessage({ id, type: "progress", phase, loaded, total });
}

async function scanAudit(id) {
  const total = auditFiles.reduce((n, f) => n + f.size, 0);
  let loaded = 0;
  let lastPost = 0;
  session.removeInput("audit");
  for (const file of auditFiles) {
    session.beginAudit(file.name);
    const reader = file.stream().getReader();
    try {
      for (;;) {
        if (cancelled()) throw new Cancelled();
        const { done, value } = await reader.read();
        if (done) break;
        session.pushAudit(value);
        loaded += value.byteLength;
        const now = performance.now();
        if (now - lastPost > 100) {
          lastPost = now;
          progress(id, "scan", loaded, total);
        }
      }
    } finally {
      reader.releaseLock();
    }
  }
  progress(id, "scan", loaded, total);
  return session.finishAudit();
}

async function buildTestSet(id) {
  const flat = session.neededLines();
  const count = flat.length / 3;
  for (let i = 0; i < count; i++) {
    if (cancelled()) throw new Cancelled();
    const file = auditFiles[flat[3 * i]];
    const offset = flat[3 * i + 1];
    const bytes = new Uint8Array(await file.slice(offset, offset + flat[3 * i + 2]).arrayBuffer());
    session.feedLine(i, bytes);
    if (i % 200 === 0) progress(id, "lines", i, count);
  }
  progress(id, "lines", count, count);
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
    const head = new Uint8Array(await file.slice(0, 65536).arrayBuffer());
    return GateSession.sniffRole(file.name, head);
  },
  async audit({ files }, id) {
    auditFiles = files;
    if (files.length === 0) {
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
  async evaluate() {
    if (!session.isReady()) return null;
    const json = session.evaluateJson();
    return { json, report: JSON.parse(json), cases: session.testCases() };
  },
  async testSet() {
    return session.testSetJsonl();
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
};

let queue = Promise.resolve();

onmessage = (event) => {
  const { id, type, payload } = event.data;
  if (type === "cancel") {
    cancelEpoch = requestEpoch;
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
