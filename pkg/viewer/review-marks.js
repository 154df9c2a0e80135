// A reviewer's marks on the cases of one report (docs/review.md): `accepted` (a regression they
// accept), `label_wrong` (the expected verdict is wrong) or `needs_fix`, each with an optional
// note. They are kept in the browser per report digest (the sha256 of the report's JSON text),
// so a reload with the same files brings them back, and they leave the page only as a review
// file (`deploy-gate/review/v1`), which the core writes (every id as the report writes it).
// Marks never change the decision or its numbers.

/** The marks, in the order the keys 1, 2 and 3 give them. */
export const MARKS = [
  ["accepted", "Accepted", "a regression you accept"],
  ["label_wrong", "Label wrong", "the expected verdict is wrong"],
  ["needs_fix", "Needs fix", "the new model needs a fix"],
];
export const MARK_LABEL = Object.fromEntries(MARKS.map(([m, label]) => [m, label]));

/** The most bytes a note may hold (the core's `MAX_NOTE_BYTES`). */
export const MAX_NOTE_BYTES = 16 * 1024;

const PREFIX = "deploy-gate/review/v1/";

/** The marks of one report, by the case's place in the report's `cases`. Emits `change` (with
 * `detail.index`, or null when all may have changed). */
export class ReviewMarks extends EventTarget {
  constructor(storage = safeStorage()) {
    super();
    this.storage = storage;
    this.digest = null;
    this.byCase = new Map();
    /** The marks of each report seen in this page, by digest: they outlive a re-evaluation even
     * where the browser keeps nothing. */
    this.memory = new Map();
    /** The notes of marks cleared in this page, by case: marking the case again brings its note back. */
    this.clearedNotes = new Map();
    this.saveError = storage ? null : "this browser keeps no marks for this page (its storage is refused): they last while the page is open; export the review file before you leave";
    this.saveTimer = null;
  }

  /** Takes the marks kept for the report whose sha256 is `digest` (none kept: none). */
  bind(digest) {
    if (digest === this.digest) return;
    this.flush();
    this.digest = digest;
    this.clearedNotes = new Map();
    this.byCase = this.memory.get(digest) || new Map();
    const kept = !this.memory.has(digest) && this.storage && digest ? this.storage.getItem(PREFIX + digest) : null;
    if (kept) {
      try {
        for (const [index, mark, note, time] of JSON.parse(kept).marks) if (MARK_LABEL[mark] && Number.isInteger(index) && index >= 0) this.byCase.set(index, { mark, note: note || "", time });
      } catch {
        this.byCase = new Map();
      }
    }
    this.memory.set(digest, this.byCase);
    this.emit(null);
  }

  /** No report: no marks. */
  unbind() {
    this.flush();
    this.digest = null;
    this.byCase = new Map();
    this.emit(null);
  }

  get ready() {
    return this.digest !== null;
  }

  get size() {
    return this.byCase.size;
  }

  of(index) {
    return this.byCase.get(index) || null;
  }

  /** Marks case `index` (`mark` null: clears its mark), keeping its note. */
  set(index, mark) {
    if (!this.ready) return;
    const was = this.byCase.get(index);
    if (!mark) {
      if (was && was.note) this.clearedNotes.set(index, was.note);
      this.byCase.delete(index);
    } else {
      const note = was ? was.note : this.clearedNotes.get(index) || "";
      this.clearedNotes.delete(index);
      this.byCase.set(index, { mark, note, time: new Date().toISOString().replace(/\.\d{3}Z$/, "Z") });
    }
    this.save(index);
  }

  /** The note of case `index` (a case needs a mark for its note to be kept). Saved a moment
   * after the typing stops (each save writes every mark). */
  setNote(index, note) {
    const was = this.byCase.get(index);
    if (!was || !this.ready) return;
    was.note = note;
    this.dispatchEvent(new CustomEvent("change", { detail: { index, noteOnly: true } }));
    clearTimeout(this.saveTimer);
    this.saveTimer = setTimeout(() => this.flush(), 300);
  }

  /** Writes a pending note now. */
  flush() {
    if (this.saveTimer === null) return;
    clearTimeout(this.saveTimer);
    this.saveTimer = null;
    this.store();
  }

  /** Replaces every mark with `marks` (CaseReviewMark[], a review file read by the core). */
  replace(marks) {
    if (!this.ready) return;
    this.byCase = new Map(marks.map((m) => [m.case, { mark: m.mark, note: m.note || "", time: m.time }]));
    this.save(null);
  }

  /** The marks as the core's CaseReviewMark[], in the report's order. */
  list() {
    return [...this.byCase.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([index, m]) => ({ case: index, mark: m.mark, ...(m.note ? { note: m.note } : {}), ...(m.time ? { time: m.time } : {}) }));
  }

  save(index) {
    clearTimeout(this.saveTimer);
    this.saveTimer = null;
    this.store();
    this.emit(index);
  }

  /** Writes the marks of the report bound to the browser's storage. */
  store() {
    if (this.storage && this.digest) {
      const marks = [...this.byCase.entries()].map(([i, m]) => [i, m.mark, m.note, m.time]);
      try {
        if (marks.length) this.storage.setItem(PREFIX + this.digest, JSON.stringify({ marks }));
        else this.storage.removeItem(PREFIX + this.digest);
        this.saveError = null;
      } catch (e) {
        this.saveError = `the marks cannot be kept in this browser (${e && e.message ? e.message : e}): export the review file before you leave`;
      }
    }
  }

  emit(index) {
    this.dispatchEvent(new CustomEvent("change", { detail: { index, noteOnly: false } }));
  }
}

/** The page's localStorage, or null where it is refused (a sandboxed frame, storage off). */
function safeStorage() {
  try {
    const s = globalThis.localStorage;
    const probe = `${PREFIX}probe`;
    s.setItem(probe, "1");
    s.removeItem(probe);
    return s;
  } catch {
    return null;
  }
}
