// Types of the <deploy-gate-viewer> element (import "deploy-gate/viewer"). The reports and the
// JS API are declared by the wasm package (deploy_gate.d.ts, generated from src/wasm.rs).
import type { GateReport, DiffDocument, DiffFlipRow, DiffIdRow, DiffTemplateRow, CaseReviewMark, ReviewMarkName } from "../deploy_gate.js";

export type { GateReport, DiffDocument, CaseReviewMark, ReviewMarkName };

/** The detail of the `dg-decision` event: the report on screen (the CLI's report, parsed). */
export interface DeployGateDecisionDetail {
  report: GateReport;
}

/** Fired (bubbling) each time a decision is shown. */
export type DeployGateDecisionEvent = CustomEvent<DeployGateDecisionDetail>;

/** The diff on screen (the `dg-diff` event's, `compare()`'s): `deploy-gate diff`'s JSON as
 * `JSON.parse` reads it, each flip with its id and template as shown (an integer id of any size
 * keeps its digits in `id_label`); `diffJson()` has its exact text. */
export interface DeployGateDiff extends DiffDocument {
  cases: Omit<DiffDocument["cases"], "flips"> & { flips: DiffFlipRow[] };
  templates: DiffTemplateRow[];
}

/** The detail of the `dg-diff` event. */
export interface DeployGateDiffDetail {
  diff: DeployGateDiff;
}

/** Fired (bubbling) each time the Compare view shows a diff. */
export type DeployGateDiffEvent = CustomEvent<DeployGateDiffDetail>;

/** A pipeline on one side only, as shown. */
export type { DiffIdRow };

/** The element's attributes, as written in HTML. */
export interface DeployGateViewerAttributes {
  /** How many workers scan a large audit log (default: cores − 1, at most 8). */
  "scan-workers"?: string | number;
  /** Audit files up to this many bytes are hashed with WebCrypto, read whole into memory (the
   * tab then holds up to twice the file for a few seconds); larger ones stream through the wasm
   * SHA-256. Default 1610612736 (1.5 GiB); 0 always streams. */
  "webcrypto-hash-max"?: string | number;
  /** On 2 cores, when the log's sha256 starts: "scanned" (default: once pass 1 is done and both
   * cores are free), "drop" or "decision". With more cores it always starts at the drop, on a
   * core of its own. */
  "hash-start"?: "drop" | "scanned" | "decision";
  /** The keyless (Sigstore) signers a trainer's model.sig may name, as JSON:
   * `[{"identity": "ci@example.com", "issuer": "https://accounts.google.com"}]` (exact; any one
   * pair is enough). Read when the element is connected. */
  "trainer-identities"?: string;
  /** The URL (relative to the page) of the Sigstore trusted root for keyless signatures: a
   * `trusted_root.json` or a ClientTrustConfig, fetched once. Default: the public-good instance's
   * root bundled with the core. */
  "sigstore-root"?: string;
  /** Present: each run's timeline ([what, epoch ms] of the workers' steps, the decision on screen,
   * the sha256 in) is written as JSON to the element's `data-timings`. */
  timings?: string | boolean;
  /** Present: the element is the page. The reviewer's keys (j/k, Enter, 1/2/3, n, /, ?) also work
   * with the focus on the page's body, and the cases' view (filter, search, sort, page, open case)
   * lives in the URL fragment with the report's digest, so a reload or a copied link reopens it
   * once the same files are dropped. Absent (a portal): the keys work with the focus in the
   * element, and the element leaves the URL alone. */
  "owns-page"?: string | boolean;
}

/** The detail of the `dg-review` event: every mark on the report on screen, in the report's order. */
export interface DeployGateReviewDetail {
  marks: CaseReviewMark[];
}

/** Fired (bubbling) each time the reviewer's marks change (marked, cleared, a note, an import, or
 * the report's marks loaded from the browser's storage). */
export type DeployGateReviewEvent = CustomEvent<DeployGateReviewDetail>;

/** The whole gate viewer: drop zone, policy form, decision, cases, exports, signing and
 * verification. Registered as `deploy-gate-viewer` when the module is imported. */
/** A file for the viewer, with the role it plays in the evaluation. */
export interface DeployGateFileEntry {
  file: File;
  role: "audit" | "old_verdicts" | "new_verdicts" | "old_trajectories" | "new_trajectories";
}

export declare class DeployGateViewer extends HTMLElement {
  /** Gives every viewer on the page a "Load example" button that loads what `loader` resolves to
   * (`import "deploy-gate/viewer/example"` does this with the bundled example). */
  static provideExample(loader: () => Promise<DeployGateFileEntry[]>): void;
  /** The report of the decision on screen; null while there is none (inputs changing). */
  readonly report: GateReport | null | undefined;
  /** The same report as the CLI's exact JSON text. */
  readonly json: string | undefined;
  /** Loads the example (as the "Load example" button does); fails unless the page imported
   * "deploy-gate/viewer/example" (or called `provideExample`). */
  loadExample(): Promise<void>;
  /** Compares two evaluations in the Compare view, as `deploy-gate diff BEFORE AFTER` does: each a
   * report or a signed decision (a Blob, a File or its JSON text); a signed one is read only once
   * it verifies against `trustedKeys` (public keys, PEM). With `reviews` (each side's review file, a Blob, a File or
   * its text; a side signed with a review must be given the file it pins), the diff lists the review marks that
   * changed (`review_changes`, as `--review-before`/`--review-after` do). Resolves with the diff shown. */
  compare(before: Blob | string, after: Blob | string, options?: { trustedKeys?: string[]; reviews?: [Blob | string, Blob | string] }): Promise<DeployGateDiff>;
  /** The diff on screen as `deploy-gate diff --out` writes it, byte for byte (null: none). */
  diffJson(): Promise<string | null>;
  /** The reviewer's marks on the report on screen as a review file (`deploy-gate/review/v1`
   * JSONL, each id as the report writes it: what `deploy-gate sign --review` takes); null when
   * there is no mark. */
  reviewFile(): Promise<string | null>;
  addEventListener<K extends keyof HTMLElementEventMap>(type: K, listener: (this: DeployGateViewer, ev: HTMLElementEventMap[K]) => unknown, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends keyof HTMLElementEventMap>(type: K, listener: (this: DeployGateViewer, ev: HTMLElementEventMap[K]) => unknown, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject, options?: boolean | EventListenerOptions): void;
}

declare global {
  interface HTMLElementTagNameMap {
    "deploy-gate-viewer": DeployGateViewer;
  }
  interface HTMLElementEventMap {
    "dg-decision": DeployGateDecisionEvent;
    "dg-diff": DeployGateDiffEvent;
    "dg-review": DeployGateReviewEvent;
  }
}
