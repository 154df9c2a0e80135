// Talks to worker.js: request/response by id, progress callbacks, cancel.
import { startWorker } from "./assets.js";

export class GateClient {
  constructor() {
    this.worker = startWorker();
    this.next = 1;
    this.pending = new Map();
    this.worker.onmessage = (event) => this.receive(event.data);
    this.worker.onerror = (event) => {
      for (const { reject } of this.pending.values()) reject(new Error(event.message || "worker failed"));
      this.pending.clear();
    };
  }

  receive(msg) {
    if (msg.id === undefined) {
      // A notice not tied to a request (the audit digests are in).
      if (this.onNotice) this.onNotice(msg);
      return;
    }
    const entry = this.pending.get(msg.id);
    if (!entry) return;
    if (msg.type === "progress") {
      if (entry.onProgress) entry.onProgress(msg);
      return;
    }
    this.pending.delete(msg.id);
    if (msg.ok) entry.resolve(msg.result);
    else {
      const error = new Error(msg.error);
      error.cancelled = Boolean(msg.cancelled);
      entry.reject(error);
    }
  }

  /** Sends a request; resolves with its result. */
  call(type, payload, onProgress) {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress });
      this.worker.postMessage({ id, type, payload });
    });
  }

  /** Stops the file being streamed (the request rejects with `cancelled`). */
  cancel() {
    this.worker.postMessage({ type: "cancel" });
  }
}
