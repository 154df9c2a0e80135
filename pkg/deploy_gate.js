/* @ts-self-types="./deploy_gate.d.ts" */

/**
 * A diff of two evaluations, as `deploy-gate diff` makes it: its JSON (byte for byte the CLI's
 * `--out`), its renderings, and its long lists in slices (a page takes them a few thousand
 * at a time, so that no message blocks its main thread).
 */
export class GateDiff {
    static __wrap(ptr) {
        const obj = Object.create(GateDiff.prototype);
        obj.__wbg_ptr = ptr;
        GateDiffFinalization.register(obj, obj.__wbg_ptr, obj);
        return obj;
    }
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        GateDiffFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_gatediff_free(ptr, 0);
    }
    /**
     * The decision changed (the CLI exits 5).
     * @returns {boolean}
     */
    get changed() {
        const ret = wasm.gatediff_changed(this.__wbg_ptr);
        return ret !== 0;
    }
    /**
     * How many flips.
     * @returns {number}
     */
    get flipCount() {
        const ret = wasm.gatediff_flipCount(this.__wbg_ptr);
        return ret >>> 0;
    }
    /**
     * Flips `from..to`, each with its id and template as shown.
     * @param {number} from
     * @param {number} to
     * @returns {DiffFlipRow[]}
     */
    flips(from, to) {
        const ret = wasm.gatediff_flips(this.__wbg_ptr, from, to);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * The standalone HTML file, the bytes `deploy-gate diff --html` writes.
     * @returns {string}
     */
    html() {
        let deferred1_0;
        let deferred1_1;
        try {
            const ret = wasm.gatediff_html(this.__wbg_ptr);
            deferred1_0 = ret[0];
            deferred1_1 = ret[1];
            return getStringFromWasm0(ret[0], ret[1]);
        } finally {
            wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
        }
    }
    /**
     * The diff JSON, byte for byte `deploy-gate diff --out` for the same two inputs.
     * @returns {string}
     */
    json() {
        let deferred1_0;
        let deferred1_1;
        try {
            const ret = wasm.gatediff_json(this.__wbg_ptr);
            deferred1_0 = ret[0];
            deferred1_1 = ret[1];
            return getStringFromWasm0(ret[0], ret[1]);
        } finally {
            wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
        }
    }
    /**
     * JUnit XML, the bytes `deploy-gate diff --junit` writes.
     * @returns {string}
     */
    junit() {
        let deferred1_0;
        let deferred1_1;
        try {
            const ret = wasm.gatediff_junit(this.__wbg_ptr);
            deferred1_0 = ret[0];
            deferred1_1 = ret[1];
            return getStringFromWasm0(ret[0], ret[1]);
        } finally {
            wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
        }
    }
    /**
     * The Markdown comment, the text `deploy-gate diff --markdown` writes.
     * @returns {string}
     */
    markdown() {
        let deferred1_0;
        let deferred1_1;
        try {
            const ret = wasm.gatediff_markdown(this.__wbg_ptr);
            deferred1_0 = ret[0];
            deferred1_1 = ret[1];
            return getStringFromWasm0(ret[0], ret[1]);
        } finally {
            wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
        }
    }
    /**
     * How many pipelines only after.
     * @returns {number}
     */
    get onlyAfterCount() {
        const ret = wasm.gatediff_onlyAfterCount(this.__wbg_ptr);
        return ret >>> 0;
    }
    /**
     * How many pipelines only before.
     * @returns {number}
     */
    get onlyBeforeCount() {
        const ret = wasm.gatediff_onlyBeforeCount(this.__wbg_ptr);
        return ret >>> 0;
    }
    /**
     * The pipelines only `"before"` or only `"after"`, `from..to`.
     * @param {"before" | "after"} side
     * @param {number} from
     * @param {number} to
     * @returns {DiffIdRow[]}
     */
    onlyIds(side, from, to) {
        const val2 = +from;
        const val3 = +to;
        const ptr0 = passStringToWasm0(side, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatediff_onlyIds(this.__wbg_ptr, ptr0, len0, val2, val3);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * What the two decisions rest on, as every rendering's headline says it: `rests on 94 of
     * 3,000 test cases`, or `rests on 9 of 9 → 8 of 9 test cases` when the sides differ (from
     * each report's `evidence`, or the cases both models answered in a report without one).
     * @returns {string}
     */
    get restsOn() {
        let deferred1_0;
        let deferred1_1;
        try {
            const ret = wasm.gatediff_restsOn(this.__wbg_ptr);
            deferred1_0 = ret[0];
            deferred1_1 = ret[1];
            return getStringFromWasm0(ret[0], ret[1]);
        } finally {
            wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
        }
    }
    /**
     * The review marks that changed (`setReviews`), `from..to`, each with its id as shown.
     * @param {number} from
     * @param {number} to
     * @returns {DiffMarkChangeRow[]}
     */
    reviewChanges(from, to) {
        const ret = wasm.gatediff_reviewChanges(this.__wbg_ptr, from, to);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Compares the two sides' review files (`deploy-gate diff --review-before FILE
     * --review-after FILE`): each named and its bytes; a side signed with a review must be
     * given the file its statement pins. The marks that changed are then in the diff JSON
     * (`review_changes`), its Markdown and HTML, and in `reviewChanges`; says how many.
     * @param {string} before_name
     * @param {Uint8Array | number[]} before
     * @param {string} after_name
     * @param {Uint8Array | number[]} after
     * @returns {number}
     */
    setReviews(before_name, before, after_name, after) {
        let ptr0, len0, ptr1, len1, ptr2, len2, ptr3, len3;
        try {
            ptr0 = passStringToWasm0(before_name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passArray8ToWasm0(before, wasm.__wbindgen_malloc);
            len1 = WASM_VECTOR_LEN;
            ptr2 = passStringToWasm0(after_name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len2 = WASM_VECTOR_LEN;
            ptr3 = passArray8ToWasm0(after, wasm.__wbindgen_malloc);
            len3 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr3) { wasm.__wbindgen_free(ptr3, len3 * 1, 1); }
            if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 1, 1); }
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.gatediff_setReviews(this.__wbg_ptr, ptr0, len0, ptr1, len1, ptr2, len2, ptr3, len3);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] >>> 0;
    }
    /**
     * The diff without the items of its long lists (`cases.flips`, `cases.only_before`,
     * `cases.only_after`, `templates` are empty; their lengths are `flipCount`, …): take them
     * with `flips`, `onlyIds` and `templates`.
     * @returns {DiffDocument}
     */
    summary() {
        const ret = wasm.gatediff_summary(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * How many templates.
     * @returns {number}
     */
    get templateCount() {
        const ret = wasm.gatediff_templateCount(this.__wbg_ptr);
        return ret >>> 0;
    }
    /**
     * Templates `from..to` (worst change first).
     * @param {number} from
     * @param {number} to
     * @returns {DiffTemplateRow[]}
     */
    templates(from, to) {
        const ret = wasm.gatediff_templates(this.__wbg_ptr, from, to);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * The whole diff as a plain object (`JSON.parse` of `json()`).
     * @returns {DiffDocument}
     */
    toObject() {
        const ret = wasm.gatediff_toObject(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
}
if (Symbol.dispose) GateDiff.prototype[Symbol.dispose] = GateDiff.prototype.free;

/**
 * One gate evaluation: policy, audit log (streamed), test set, verdicts, trajectories, report.
 * A mapping over the core's `session::Session`: JS values in, its results and errors out.
 */
export class GateSession {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        GateSessionFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_gatesession_free(ptr, 0);
    }
    /**
     * Declares the next audit file of a segmented audit log; returns its number.
     * @param {string} name
     * @returns {number}
     */
    addAuditFile(name) {
        const ptr0 = passStringToWasm0(name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatesession_addAuditFile(this.__wbg_ptr, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] >>> 0;
    }
    /**
     * Reads a trajectory file for `role` (`old`/`new` or `old_trajectories`/`new_trajectories`).
     * @param {"old" | "new" | "old_trajectories" | "new_trajectories"} role
     * @param {Uint8Array | number[]} bytes
     * @param {string} file_name
     */
    addTrajectories(role, bytes, file_name) {
        let ptr0, len0, ptr1, len1, ptr2, len2;
        try {
            ptr0 = passStringToWasm0(role, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
            len1 = WASM_VECTOR_LEN;
            ptr2 = passStringToWasm0(file_name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len2 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 1, 1); }
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.gatesession_addTrajectories(this.__wbg_ptr, ptr0, len0, ptr1, len1, ptr2, len2);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Reads a verdict file for `role` (`old`/`new` or `old_verdicts`/`new_verdicts`).
     * @param {"old" | "new" | "old_verdicts" | "new_verdicts"} role
     * @param {Uint8Array | number[]} bytes
     * @param {string} file_name
     */
    addVerdicts(role, bytes, file_name) {
        let ptr0, len0, ptr1, len1, ptr2, len2;
        try {
            ptr0 = passStringToWasm0(role, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
            len1 = WASM_VECTOR_LEN;
            ptr2 = passStringToWasm0(file_name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len2 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 1, 1); }
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.gatesession_addVerdicts(this.__wbg_ptr, ptr0, len0, ptr1, len1, ptr2, len2);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Starts an audit file (the first call also starts a new audit log).
     * @param {string} name
     */
    beginAudit(name) {
        const ptr0 = passStringToWasm0(name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        wasm.gatesession_beginAudit(this.__wbg_ptr, ptr0, len0);
    }
    /**
     * Starts an audit log read as segments scanned elsewhere (`SegmentScanner`, in several
     * workers): declare each file with `addAuditFile`, merge the segments in file order with
     * `mergeSegment`, give each file's size and sha256, then `finishSegmentedAudit`.
     */
    beginSegmentedAudit() {
        wasm.gatesession_beginSegmentedAudit(this.__wbg_ptr);
    }
    /**
     * Builds the test set from the whole audit files (in the order begun), for callers that
     * hold them in memory.
     * @param {Uint8Array[]} files
     * @returns {TestSetInfo}
     */
    buildTestSet(files) {
        const ptr0 = passArrayJsValueToWasm0(files, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatesession_buildTestSet(this.__wbg_ptr, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * True when some record of `role`'s (`old`/`new`) verdict file that a test case may take
     * carries an answer (`output`).
     * @param {string} role
     * @returns {boolean}
     */
    carriesOutputs(role) {
        const ptr0 = passStringToWasm0(role, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatesession_carriesOutputs(this.__wbg_ptr, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] !== 0;
    }
    /**
     * Each test case's latency and tokens for `role` (`old`/`new`), in the test set's order:
     * `{latency_ms, tokens}`, two arrays with NaN where the case's records say nothing (the
     * mean over the records the case counts); undefined when the verdict file carries no cost
     * field.
     * @param {string} role
     * @returns {CaseCosts | undefined}
     */
    caseCosts(role) {
        const ptr0 = passStringToWasm0(role, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatesession_caseCosts(this.__wbg_ptr, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Test case `index`'s trajectory results, old beside new: each the result its verdict
     * record names (`trajectory_id`), or else the last result of its trajectory file that names
     * the case's `pipeline_id`, with its composite and metrics; undefined when neither file has
     * one.
     * @param {number} index
     * @returns {CaseTrajectory | undefined}
     */
    caseTrajectory(index) {
        const ret = wasm.gatesession_caseTrajectory(this.__wbg_ptr, index);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Ends range `i` once all its bytes were fed.
     * @param {number} i
     */
    endRange(i) {
        const ret = wasm.gatesession_endRange(this.__wbg_ptr, i);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Ends audit file `file`'s stream (its ranges still open end here).
     * @param {number} file
     */
    endStream(file) {
        const ret = wasm.gatesession_endStream(this.__wbg_ptr, file);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * The GateReport as JSON text, byte for byte what the CLI writes for the same inputs.
     * @returns {string}
     */
    evaluateJson() {
        let deferred2_0;
        let deferred2_1;
        try {
            const ret = wasm.gatesession_evaluateJson(this.__wbg_ptr);
            var ptr1 = ret[0];
            var len1 = ret[1];
            if (ret[3]) {
                ptr1 = 0; len1 = 0;
                throw takeFromExternrefTable0(ret[2]);
            }
            deferred2_0 = ptr1;
            deferred2_1 = len1;
            return getStringFromWasm0(ptr1, len1);
        } finally {
            wasm.__wbindgen_free(deferred2_0, deferred2_1, 1);
        }
    }
    /**
     * The GateReport as a plain object.
     * @returns {GateReport}
     */
    evaluate() {
        const ret = wasm.gatesession_evaluate(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Feeds the next bytes of range `i` of `neededRanges`.
     * @param {number} i
     * @param {Uint8Array | number[]} bytes
     */
    feedRange(i, bytes) {
        const val2 = +i;
        const ptr0 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatesession_feedRange(this.__wbg_ptr, val2, ptr0, len0);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Feeds the next bytes of audit file `file`'s whole stream (a gzip file's decompressed
     * bytes), in order from its start: the session keeps what the ranges need, skips the rest.
     * Returns whether more of the stream is needed (false after its last range: stop reading).
     * @param {number} file
     * @param {Uint8Array | number[]} bytes
     * @returns {boolean}
     */
    feedStream(file, bytes) {
        const val2 = +file;
        const ptr0 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatesession_feedStream(this.__wbg_ptr, val2, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] !== 0;
    }
    /**
     * The next piece of the verdict file `startVerdicts` started: true to go on, false when the
     * file is to be given whole to `addVerdicts` (it holds something only the whole-file reader
     * names: a JSON syntax error, say); `finishVerdicts` then says so too. In JSONL an unusable
     * record is an error naming its line (the reading is then over).
     * @param {Uint8Array | number[]} piece
     * @returns {boolean}
     */
    feedVerdicts(piece) {
        const ptr0 = passArray8ToWasm0(piece, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatesession_feedVerdicts(this.__wbg_ptr, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] !== 0;
    }
    /**
     * Ends the audit log (all its files) and returns what pass 1 saw.
     * @returns {AuditSummary}
     */
    finishAudit() {
        const ret = wasm.gatesession_finishAudit(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Ends a segmented audit log and returns what pass 1 saw.
     * @returns {AuditSummary}
     */
    finishSegmentedAudit() {
        const ret = wasm.gatesession_finishSegmentedAudit(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Finishes pass 2 after every range was read and ended.
     * @returns {TestSetInfo}
     */
    finishTestSet() {
        const ret = wasm.gatesession_finishTestSet(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * The verdict file `startVerdicts` started is read: true when its verdicts are now the
     * side's; false when the file is to be given whole to `addVerdicts`, which reads it or
     * names what is wrong with it.
     * @returns {boolean}
     */
    finishVerdicts() {
        const ret = wasm.gatesession_finishVerdicts(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] !== 0;
    }
    /**
     * True when the test set and both verdict files are in: `evaluate` can run.
     * @returns {boolean}
     */
    isReady() {
        const ret = wasm.gatesession_isReady(this.__wbg_ptr);
        return ret !== 0;
    }
    /**
     * Merges the next segment (from `SegmentScanner.finish`), in file then offset order.
     * @param {Uint8Array | number[]} bytes
     */
    mergeSegment(bytes) {
        const ptr0 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatesession_mergeSegment(this.__wbg_ptr, ptr0, len0);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * The byte ranges pass 2 reads, as a flat array `[file, start, end, …]` (file = index of
     * the audit file in the order begun; end = -1: to the end of the file). Read each range
     * and feed its bytes in order with `feedRange` (ranges may be read concurrently), then
     * `endRange`; or feed each audit file's whole (decompressed) stream with `feedStream`
     * and `endStream`.
     * @returns {Float64Array}
     */
    neededRanges() {
        const ret = wasm.gatesession_neededRanges(this.__wbg_ptr);
        if (ret[3]) {
            throw takeFromExternrefTable0(ret[2]);
        }
        var v1 = getArrayF64FromWasm0(ret[0], ret[1]).slice();
        wasm.__wbindgen_free(ret[0], ret[1] * 8, 8);
        return v1;
    }
    /**
     * A session with the given policy (defaults for absent fields).
     * @param {PolicyInput | undefined} policy
     */
    constructor(policy) {
        const ret = wasm.gatesession_new(policy);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        GateSessionFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * Where test case `index`'s answer is in `role`'s verdict file (`old`/`new`), or undefined
     * when its record carries none: read those bytes (`File.slice`) and give them to `readOutput`.
     * @param {string} role
     * @param {number} index
     * @returns {OutputAt | undefined}
     */
    outputAt(role, index) {
        const val2 = +index;
        const ptr0 = passStringToWasm0(role, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatesession_outputAt(this.__wbg_ptr, ptr0, len0, val2);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * The policy's pass verdicts (upper-cased), for `SegmentScanner`s in other workers.
     * @returns {string[]}
     */
    passVerdicts() {
        const ret = wasm.gatesession_passVerdicts(this.__wbg_ptr);
        var v1 = getArrayJsValueFromWasm0(ret[0], ret[1]);
        wasm.__wbindgen_free(ret[0], ret[1] * 4, 4);
        return v1;
    }
    /**
     * The current policy, defaults filled in (as the report lists it).
     * @returns {GateReport["policy"]}
     */
    policy() {
        const ret = wasm.gatesession_policy(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Feeds the next chunk of the current audit file.
     * @param {Uint8Array | number[]} chunk
     */
    pushAudit(chunk) {
        const ptr0 = passArray8ToWasm0(chunk, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatesession_pushAudit(this.__wbg_ptr, ptr0, len0);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Forgets a verdict or trajectory file (`old_verdicts`, `new_trajectories`, …).
     * @param {Role} role
     */
    removeInput(role) {
        const ptr0 = passStringToWasm0(role, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatesession_removeInput(this.__wbg_ptr, ptr0, len0);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Gives an audit file's sha256 (hex) after the audit log was scanned (`finishAudit` or
     * `finishSegmentedAudit`): the decision can be shown before the digest is in, but a
     * report is only signed once every input has one.
     * @param {number} file
     * @param {string} sha256
     */
    setAuditDigest(file, sha256) {
        const val2 = +file;
        const ptr0 = passStringToWasm0(sha256, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatesession_setAuditDigest(this.__wbg_ptr, val2, ptr0, len0);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Gives a segmented audit file's size and sha256 (hex; `""` when it is given later with
     * `setAuditDigest`).
     * @param {number} file
     * @param {number} size
     * @param {string} sha256
     */
    setAuditFileDigest(file, size, sha256) {
        const val2 = +file;
        const val3 = +size;
        const ptr0 = passStringToWasm0(sha256, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatesession_setAuditFileDigest(this.__wbg_ptr, val2, val3, ptr0, len0);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Gives the sha256 (hex) of audit file `file` (0-based, in the order begun).
     * @param {number} file
     * @param {string} sha256
     */
    setAuditSha256(file, sha256) {
        const val2 = +file;
        const ptr0 = passStringToWasm0(sha256, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.gatesession_setAuditSha256(this.__wbg_ptr, val2, ptr0, len0);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Whether audit files are hashed as they stream (default true). A caller that hashes in
     * another worker turns it off and gives each digest with `setAuditSha256` before
     * `finishAudit`.
     * @param {boolean} on
     */
    setHashing(on) {
        wasm.gatesession_setHashing(this.__wbg_ptr, on);
    }
    /**
     * Replaces the policy and says what must be redone: `"rescan"` (pass verdicts changed: push
     * the audit log again), `"rebuild"` (test-set size or seed changed: call `neededRanges`
     * again) or `"ready"` (call `evaluate`).
     * @param {PolicyInput} policy
     * @returns {PolicyChange}
     */
    setPolicy(policy) {
        let deferred2_0;
        let deferred2_1;
        try {
            const ret = wasm.gatesession_setPolicy(this.__wbg_ptr, policy);
            var ptr1 = ret[0];
            var len1 = ret[1];
            if (ret[3]) {
                ptr1 = 0; len1 = 0;
                throw takeFromExternrefTable0(ret[2]);
            }
            deferred2_0 = ptr1;
            deferred2_1 = len1;
            return getStringFromWasm0(ptr1, len1);
        } finally {
            wasm.__wbindgen_free(deferred2_0, deferred2_1, 1);
        }
    }
    /**
     * Guesses a file's role from its name and first bytes (a few KiB).
     * @param {string} file_name
     * @param {Uint8Array | number[]} head
     * @returns {RoleGuess}
     */
    static sniffRole(file_name, head) {
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(file_name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passArray8ToWasm0(head, wasm.__wbindgen_malloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.gatesession_sniffRole(ptr0, len0, ptr1, len1);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Starts reading `role`'s verdict file a piece at a time, so that it is never held whole in
     * this module's memory (which never shrinks): `head` is the file's first bytes (at least its
     * first non-blank line; it is not read as a piece). Then `feedVerdicts` every piece in order
     * while it says to go on, and `finishVerdicts`. Always true (false was: give the file whole
     * to `addVerdicts`, which every format now reads in pieces).
     * @param {"old" | "new" | "old_verdicts" | "new_verdicts"} role
     * @param {string} file_name
     * @param {Uint8Array | number[]} head
     * @returns {boolean}
     */
    startVerdicts(role, file_name, head) {
        let ptr0, len0, ptr1, len1, ptr2, len2;
        try {
            ptr0 = passStringToWasm0(role, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passStringToWasm0(file_name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
            ptr2 = passArray8ToWasm0(head, wasm.__wbindgen_malloc);
            len2 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 1, 1); }
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.gatesession_startVerdicts(this.__wbg_ptr, ptr0, len0, ptr1, len1, ptr2, len2);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] !== 0;
    }
    /**
     * The test cases as plain objects.
     * @returns {TestCase[]}
     */
    testCases() {
        const ret = wasm.gatesession_testCases(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * The test set as JSONL (one case per line, the reference's field names).
     * @returns {string}
     */
    testSetJsonl() {
        let deferred2_0;
        let deferred2_1;
        try {
            const ret = wasm.gatesession_testSetJsonl(this.__wbg_ptr);
            var ptr1 = ret[0];
            var len1 = ret[1];
            if (ret[3]) {
                ptr1 = 0; len1 = 0;
                throw takeFromExternrefTable0(ret[2]);
            }
            deferred2_0 = ptr1;
            deferred2_1 = len1;
            return getStringFromWasm0(ptr1, len1);
        } finally {
            wasm.__wbindgen_free(deferred2_0, deferred2_1, 1);
        }
    }
}
if (Symbol.dispose) GateSession.prototype[Symbol.dispose] = GateSession.prototype.free;

/**
 * The trainer's signature over a model, checked file by file.
 *
 * Made from the bundle (verified at once: `result()`), it takes the model's files — every file
 * of the folder, the ignored paths too, each exactly once — streamed (`addFile`, `update`,
 * `finishFile`) or as digests computed elsewhere (`addFileDigests`), then `finish` compares
 * them with the signed resources.
 */
export class ModelCheck {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        ModelCheckFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_modelcheck_free(ptr, 0);
    }
    /**
     * A file hashed elsewhere (`ModelFileHasher.finish()`, or for the `files` method any sha256
     * such as `Sha256Stream`'s): its size, sha256 (hex) and, for `shards`, its shards' sha256
     * in order.
     * @param {string} path
     * @param {number} size
     * @param {string} sha256
     * @param {string[] | null} [shards]
     */
    addFileDigests(path, size, sha256, shards) {
        const val4 = +size;
        let ptr0, len0, ptr1, len1, ptr2, len2;
        try {
            ptr0 = passStringToWasm0(path, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passStringToWasm0(sha256, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
            ptr2 = isLikeNone(shards) ? 0 : passArrayJsValueToWasm0(shards, wasm.__wbindgen_malloc);
            len2 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr2) { wasm.__externref_drop_slice(ptr2, len2); wasm.__wbindgen_free(ptr2, len2 * 4, 4); }
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.modelcheck_addFileDigests(this.__wbg_ptr, ptr0, len0, val4, ptr1, len1, ptr2, len2);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Begins a file streamed through this check (its bytes with `update`, then `finishFile`).
     * @param {string} path
     */
    addFile(path) {
        const ptr0 = passStringToWasm0(path, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.modelcheck_addFile(this.__wbg_ptr, ptr0, len0);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Whether the bundle verified (its files may still differ).
     * @returns {boolean}
     */
    get bundleValid() {
        const ret = wasm.modelcheck_bundleValid(this.__wbg_ptr);
        return ret !== 0;
    }
    /**
     * Ends the current file.
     */
    finishFile() {
        const ret = wasm.modelcheck_finishFile(this.__wbg_ptr);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Compares the files given with the signed resources: the result, `files` filled in (the
     * check can take no more files).
     * @returns {ModelSignatureResult}
     */
    finish() {
        const ret = wasm.modelcheck_finish(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Whether the signature leaves this path out (OMS's defaults and the signed
     * `ignore_paths`, each at the model root with everything below it). An ignored file is
     * still given (the original directory digest counts it) but not compared; nor is a
     * `model.sig` at the model root whose bytes are the bundle's (the signature itself, left
     * out as `deploy-gate verify` leaves out the signature file).
     * @param {string} path
     * @returns {boolean}
     */
    ignored(path) {
        const ptr0 = passStringToWasm0(path, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.modelcheck_ignored(this.__wbg_ptr, ptr0, len0);
        return ret !== 0;
    }
    /**
     * Verifies `bundle` (`model.sig`: bytes or JSON text) against the trusted trainer keys
     * (SPKI PEM, P-256 or P-384) and `options.trusted_roots`. A bundle that fails is a result
     * (`result().failure`), not an exception; an unreadable key or option throws.
     * @param {Uint8Array | string} bundle
     * @param {string[]} trusted_keys
     * @param {ModelSignatureOptions} [options]
     */
    constructor(bundle, trusted_keys, options) {
        const ptr0 = passArrayJsValueToWasm0(trusted_keys, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.modelcheck_new(bundle, ptr0, len0, isLikeNone(options) ? 0 : addToExternrefTable0(options));
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        ModelCheckFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * The result so far: the bundle's verification (and the decision's model, compared by the
     * digest or the signed resources); after `finish`, with the files.
     * @returns {ModelSignatureResult}
     */
    result() {
        const ret = wasm.modelcheck_result(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * The shard size the files are hashed with (0: the `files` method, or no valid bundle).
     * @returns {number}
     */
    get shardSize() {
        const ret = wasm.modelcheck_shardSize(this.__wbg_ptr);
        return ret;
    }
    /**
     * The current file's next bytes.
     * @param {Uint8Array | number[]} bytes
     */
    update(bytes) {
        const ptr0 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.modelcheck_update(this.__wbg_ptr, ptr0, len0);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
}
if (Symbol.dispose) ModelCheck.prototype[Symbol.dispose] = ModelCheck.prototype.free;

/**
 * Hashes one file of a model as a `shards` (or, with shard size 0, `files`) signature needs it,
 * in one pass: for a worker that hashes files while another holds the `ModelCheck`.
 */
export class ModelFileHasher {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        ModelFileHasherFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_modelfilehasher_free(ptr, 0);
    }
    /**
     * The file's size, sha256 and shard digests (hex); the hasher can be used no further.
     * @returns {ModelFileDigests}
     */
    finish() {
        const ptr = this.__destroy_into_raw();
        const ret = wasm.modelfilehasher_finish(ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * A hasher; `shard_size`: the signature's (`TrainerSignature.shard_size`), 0 or null for
     * the `files` method.
     * @param {number | null} [shard_size]
     */
    constructor(shard_size) {
        const ret = wasm.modelfilehasher_new(!isLikeNone(shard_size), isLikeNone(shard_size) ? 0 : shard_size);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        ModelFileHasherFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * Adds the file's next bytes.
     * @param {Uint8Array | number[]} bytes
     */
    update(bytes) {
        const ptr0 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        wasm.modelfilehasher_update(this.__wbg_ptr, ptr0, len0);
    }
}
if (Symbol.dispose) ModelFileHasher.prototype[Symbol.dispose] = ModelFileHasher.prototype.free;

/**
 * Pass 1 over one part of an audit file, in any worker: the bytes from `offset` (0 or just
 * after a newline) to the end of the part. `finish` gives the segment for `mergeSegment`.
 */
export class SegmentScanner {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        SegmentScannerFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_segmentscanner_free(ptr, 0);
    }
    /**
     * Ends the part: the segment as bytes (the scanner can be used no further).
     * @returns {Uint8Array}
     */
    finish() {
        const ptr = this.__destroy_into_raw();
        const ret = wasm.segmentscanner_finish(ptr);
        var v1 = getArrayU8FromWasm0(ret[0], ret[1]).slice();
        wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
        return v1;
    }
    /**
     * A scanner for file number `file`, starting at byte `offset`, with the session's pass
     * verdicts (`GateSession.passVerdicts()`).
     * @param {string[]} pass_verdicts
     * @param {number} file
     * @param {number} offset
     */
    constructor(pass_verdicts, file, offset) {
        const val2 = +file;
        const val3 = +offset;
        const ptr0 = passArrayJsValueToWasm0(pass_verdicts, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.segmentscanner_new(ptr0, len0, val2, val3);
        this.__wbg_ptr = ret;
        SegmentScannerFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * Feeds the next bytes.
     * @param {Uint8Array | number[]} chunk
     */
    push(chunk) {
        const ptr0 = passArray8ToWasm0(chunk, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        wasm.segmentscanner_push(this.__wbg_ptr, ptr0, len0);
    }
}
if (Symbol.dispose) SegmentScanner.prototype[Symbol.dispose] = SegmentScanner.prototype.free;

/**
 * A streaming SHA-256, for hashing a file in another worker while it is scanned (sha2 0.11's
 * WebAssembly SIMD backend).
 */
export class Sha256Stream {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        Sha256StreamFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_sha256stream_free(ptr, 0);
    }
    /**
     * The digest as lowercase hex (the hash can be used no further).
     * @returns {string}
     */
    finish() {
        let deferred1_0;
        let deferred1_1;
        try {
            const ptr = this.__destroy_into_raw();
            const ret = wasm.sha256stream_finish(ptr);
            deferred1_0 = ret[0];
            deferred1_1 = ret[1];
            return getStringFromWasm0(ret[0], ret[1]);
        } finally {
            wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
        }
    }
    /**
     * A new hash.
     */
    constructor() {
        const ret = wasm.sha256stream_new();
        this.__wbg_ptr = ret;
        Sha256StreamFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * Adds bytes.
     * @param {Uint8Array | number[]} bytes
     */
    update(bytes) {
        const ptr0 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        wasm.sha256stream_update(this.__wbg_ptr, ptr0, len0);
    }
}
if (Symbol.dispose) Sha256Stream.prototype[Symbol.dispose] = Sha256Stream.prototype.free;

/**
 * Checks a policy (a whole form, or one field) with the core's parser: `{ok: true, policy}`
 * with the resolved policy, or `{ok: false, field, message}` naming the field at fault.
 * @param {PolicyInput | undefined} input
 * @returns {PolicyCheck}
 */
export function checkPolicy(input) {
    const ret = wasm.checkPolicy(input);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * Checks a policy file's bytes as `deploy-gate evaluate --policy` reads them (a JSON object in
 * the shape of a report's `policy`, or a whole report, read strictly): `{ok: true, policy}` with
 * the resolved policy and its digest, or `{ok: false, field, message}` (`field` null when the
 * file is not a JSON object).
 * @param {Uint8Array | number[]} bytes
 * @returns {PolicyFileCheck}
 */
export function checkPolicyFile(bytes) {
    const ptr0 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.checkPolicyFile(ptr0, len0);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * Co-signs a signed decision with another reviewer's private key (PEM): the envelope as JSON
 * text, the one `deploy-gate sign --envelope EXISTING.json --key KEY.pem` writes for the same
 * envelope and key. The envelope must verify against the trusted keys with the options
 * given (else an error naming the failed check); its statement's bytes are kept.
 * @param {Uint8Array | number[]} envelope
 * @param {string} private_pem
 * @param {string[]} trusted_pems
 * @param {VerifyOptions} options
 * @returns {string}
 */
export function cosignDecision(envelope, private_pem, trusted_pems, options) {
    let deferred5_0;
    let deferred5_1;
    try {
        let ptr0, len0, ptr1, len1, ptr2, len2;
        try {
            ptr0 = passArray8ToWasm0(envelope, wasm.__wbindgen_malloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passStringToWasm0(private_pem, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
            ptr2 = passArrayJsValueToWasm0(trusted_pems, wasm.__wbindgen_malloc);
            len2 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr2) { wasm.__externref_drop_slice(ptr2, len2); wasm.__wbindgen_free(ptr2, len2 * 4, 4); }
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.cosignDecision(ptr0, len0, ptr1, len1, ptr2, len2, options);
        var ptr4 = ret[0];
        var len4 = ret[1];
        if (ret[3]) {
            ptr4 = 0; len4 = 0;
            throw takeFromExternrefTable0(ret[2]);
        }
        deferred5_0 = ptr4;
        deferred5_1 = len4;
        return getStringFromWasm0(ptr4, len4);
    } finally {
        wasm.__wbindgen_free(deferred5_0, deferred5_1, 1);
    }
}

/**
 * The default policy, as the report lists it (the page's form shows these values).
 * @returns {GatePolicy}
 */
export function defaultPolicy() {
    const ret = wasm.defaultPolicy();
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * Compares two documents, each a report or a signed decision (`deploy-gate diff BEFORE AFTER`):
 * a signed one is read only once it verifies against `options.trusted_keys`.
 * @param {Uint8Array | number[]} before
 * @param {Uint8Array | number[]} after
 * @param {DiffOptions | undefined} options
 * @returns {GateDiff}
 */
export function diffDocuments(before, after, options) {
    let ptr0, len0, ptr1, len1;
    try {
        ptr0 = passArray8ToWasm0(before, wasm.__wbindgen_malloc);
        len0 = WASM_VECTOR_LEN;
        ptr1 = passArray8ToWasm0(after, wasm.__wbindgen_malloc);
        len1 = WASM_VECTOR_LEN;
    } catch (e) {
        if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
        if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
        throw e;
    }
    const ret = wasm.diffDocuments(ptr0, len0, ptr1, len1, options);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return GateDiff.__wrap(ret[0]);
}

/**
 * Compares two signed decisions (`decision.dsse.json`), each read only once its signatures
 * verify against the trusted public keys (PEM); their age and target are not checked.
 * @param {Uint8Array | number[]} before
 * @param {Uint8Array | number[]} after
 * @param {string[]} trusted_keys
 * @param {DiffOptions | undefined} options
 * @returns {GateDiff}
 */
export function diffEnvelopes(before, after, trusted_keys, options) {
    let ptr0, len0, ptr1, len1, ptr2, len2;
    try {
        ptr0 = passArray8ToWasm0(before, wasm.__wbindgen_malloc);
        len0 = WASM_VECTOR_LEN;
        ptr1 = passArray8ToWasm0(after, wasm.__wbindgen_malloc);
        len1 = WASM_VECTOR_LEN;
        ptr2 = passArrayJsValueToWasm0(trusted_keys, wasm.__wbindgen_malloc);
        len2 = WASM_VECTOR_LEN;
    } catch (e) {
        if (ptr2) { wasm.__externref_drop_slice(ptr2, len2); wasm.__wbindgen_free(ptr2, len2 * 4, 4); }
        if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
        if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
        throw e;
    }
    const ret = wasm.diffEnvelopes(ptr0, len0, ptr1, len1, ptr2, len2, options);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return GateDiff.__wrap(ret[0]);
}

/**
 * Compares two reports (`deploy-gate/report/v1` JSON, as `evaluateJson()` or `deploy-gate
 * evaluate --out` wrote them, by any build): `before` the earlier evaluation.
 * @param {string} before_json
 * @param {string} after_json
 * @param {DiffOptions | undefined} options
 * @returns {GateDiff}
 */
export function diffReports(before_json, after_json, options) {
    let ptr0, len0, ptr1, len1;
    try {
        ptr0 = passStringToWasm0(before_json, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len0 = WASM_VECTOR_LEN;
        ptr1 = passStringToWasm0(after_json, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len1 = WASM_VECTOR_LEN;
    } catch (e) {
        if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
        if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
        throw e;
    }
    const ret = wasm.diffReports(ptr0, len0, ptr1, len1, options);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return GateDiff.__wrap(ret[0]);
}

/**
 * A new Ed25519 key pair from 32 random bytes (draw them with `crypto.getRandomValues`).
 * @param {Uint8Array | number[]} seed
 * @returns {KeyPair}
 */
export function generateKeyPair(seed) {
    const ptr0 = passArray8ToWasm0(seed, wasm.__wbindgen_malloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.generateKeyPair(ptr0, len0);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * The cases (places in the report's `cases`) whose answers the HTML report shows: read these
 * (`outputAt`, `readOutput`) and give them to `reportHtml`.
 * @param {string} report_json
 * @returns {Uint32Array}
 */
export function htmlAnswerCases(report_json) {
    const ptr0 = passStringToWasm0(report_json, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.htmlAnswerCases(ptr0, len0);
    if (ret[3]) {
        throw takeFromExternrefTable0(ret[2]);
    }
    var v2 = getArrayU32FromWasm0(ret[0], ret[1]).slice();
    wasm.__wbindgen_free(ret[0], ret[1] * 4, 4);
    return v2;
}

/**
 * What a PEM holds: a private or a public key, and its key id.
 * @param {string} pem
 * @returns {KeyInfo}
 */
export function keyInfo(pem) {
    const ptr0 = passStringToWasm0(pem, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.keyInfo(ptr0, len0);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * Opens a signed decision: verifies it as `verifyEnvelope` does and, when it is valid, adds the
 * GateReport read from the verified statement (`report`, and `report_json`: its text as
 * `deploy-gate evaluate` writes it). A rejected envelope's report is never read.
 * @param {Uint8Array | number[]} envelope
 * @param {string[]} trusted_pems
 * @param {VerifyOptions} options
 * @returns {SignedDecision}
 */
export function openSignedDecision(envelope, trusted_pems, options) {
    let ptr0, len0, ptr1, len1;
    try {
        ptr0 = passArray8ToWasm0(envelope, wasm.__wbindgen_malloc);
        len0 = WASM_VECTOR_LEN;
        ptr1 = passArrayJsValueToWasm0(trusted_pems, wasm.__wbindgen_malloc);
        len1 = WASM_VECTOR_LEN;
    } catch (e) {
        if (ptr1) { wasm.__externref_drop_slice(ptr1, len1); wasm.__wbindgen_free(ptr1, len1 * 4, 4); }
        if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
        throw e;
    }
    const ret = wasm.openSignedDecision(ptr0, len0, ptr1, len1, options);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * The answer held by `bytes`, the bytes `at.start..at.end` of its verdict file (`outputAt`), as
 * JSON text; undefined when they do not hold one (the file changed since it was read).
 * @param {Uint8Array | number[]} bytes
 * @param {OutputAt} at
 * @returns {string | undefined}
 */
export function readOutput(bytes, at) {
    const ptr0 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.readOutput(ptr0, len0, at);
    if (ret[3]) {
        throw takeFromExternrefTable0(ret[2]);
    }
    let v2;
    if (ret[0] !== 0) {
        v2 = getStringFromWasm0(ret[0], ret[1]);
        wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
    }
    return v2;
}

/**
 * A review file read against a report's JSON text: its marks by case, the marks of cases the
 * report does not hold, and what signing with it pins. A bad line is an error naming it.
 * @param {string} report_json
 * @param {Uint8Array | number[]} bytes
 * @param {string} name
 * @returns {ReviewRead}
 */
export function readReview(report_json, bytes, name) {
    let ptr0, len0, ptr1, len1, ptr2, len2;
    try {
        ptr0 = passStringToWasm0(report_json, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len0 = WASM_VECTOR_LEN;
        ptr1 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
        len1 = WASM_VECTOR_LEN;
        ptr2 = passStringToWasm0(name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len2 = WASM_VECTOR_LEN;
    } catch (e) {
        if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 1, 1); }
        if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
        if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
        throw e;
    }
    const ret = wasm.readReview(ptr0, len0, ptr1, len1, ptr2, len2);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * A report's JSON text (`evaluateJson()`) as the standalone HTML report, byte for byte what
 * `deploy-gate evaluate --html` writes for the same report.
 * With `review` (a review file's bytes), the HTML report lists its marked cases with their
 * notes: what `evaluate --html --review` writes. With `answers` (the answers of the cases
 * `htmlAnswerCases` names, each as `readOutput` gives it), it shows them: what
 * `evaluate --html` writes for verdict files that carry answers.
 * @param {string} report_json
 * @param {Uint8Array | number[] | null | undefined} review
 * @param {HtmlCaseAnswers[] | undefined} answers
 * @returns {string}
 */
export function reportHtml(report_json, review, answers) {
    let deferred4_0;
    let deferred4_1;
    try {
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(report_json, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = isLikeNone(review) ? 0 : passArray8ToWasm0(review, wasm.__wbindgen_malloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.reportHtml(ptr0, len0, ptr1, len1, answers);
        var ptr3 = ret[0];
        var len3 = ret[1];
        if (ret[3]) {
            ptr3 = 0; len3 = 0;
            throw takeFromExternrefTable0(ret[2]);
        }
        deferred4_0 = ptr3;
        deferred4_1 = len3;
        return getStringFromWasm0(ptr3, len3);
    } finally {
        wasm.__wbindgen_free(deferred4_0, deferred4_1, 1);
    }
}

/**
 * The report's Markdown summary from its JSON (`GateSession.evaluateJson()`, a signed
 * decision's embedded report): the text `deploy-gate evaluate --markdown` writes.
 * With `review` (a review file's bytes), it lists the marked cases with their notes.
 * @param {string} report_json
 * @param {Uint8Array | number[] | null} [review]
 * @returns {string}
 */
export function reportMarkdown(report_json, review) {
    let deferred4_0;
    let deferred4_1;
    try {
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(report_json, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = isLikeNone(review) ? 0 : passArray8ToWasm0(review, wasm.__wbindgen_malloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.reportMarkdown(ptr0, len0, ptr1, len1);
        var ptr3 = ret[0];
        var len3 = ret[1];
        if (ret[3]) {
            ptr3 = 0; len3 = 0;
            throw takeFromExternrefTable0(ret[2]);
        }
        deferred4_0 = ptr3;
        deferred4_1 = len3;
        return getStringFromWasm0(ptr3, len3);
    } finally {
        wasm.__wbindgen_free(deferred4_0, deferred4_1, 1);
    }
}

/**
 * The review file (`deploy-gate/review/v1` JSONL) of marks made on a report's cases, each id
 * written as the report writes it: the bytes `sign --review` and `signDecision` take.
 * @param {string} report_json
 * @param {CaseReviewMark[]} marks
 * @returns {string}
 */
export function reviewFile(report_json, marks) {
    let deferred3_0;
    let deferred3_1;
    try {
        const ptr0 = passStringToWasm0(report_json, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.reviewFile(ptr0, len0, marks);
        var ptr2 = ret[0];
        var len2 = ret[1];
        if (ret[3]) {
            ptr2 = 0; len2 = 0;
            throw takeFromExternrefTable0(ret[2]);
        }
        deferred3_0 = ptr2;
        deferred3_1 = len2;
        return getStringFromWasm0(ptr2, len2);
    } finally {
        wasm.__wbindgen_free(deferred3_0, deferred3_1, 1);
    }
}

/**
 * A case's two answers (each the JSON text `readOutput` gives and whether it was cut, or
 * undefined), side by side with what changed, word by word or line by line.
 * @param {string | null | undefined} old
 * @param {boolean} old_truncated
 * @param {string | null | undefined} _new
 * @param {boolean} new_truncated
 * @returns {SideBySide}
 */
export function sideBySide(old, old_truncated, _new, new_truncated) {
    const val3 = +old_truncated;
    const val4 = +new_truncated;
    let ptr0, len0, ptr1, len1;
    try {
        ptr0 = isLikeNone(old) ? 0 : passStringToWasm0(old, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len0 = WASM_VECTOR_LEN;
        ptr1 = isLikeNone(_new) ? 0 : passStringToWasm0(_new, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        len1 = WASM_VECTOR_LEN;
    } catch (e) {
        if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
        if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
        throw e;
    }
    const ret = wasm.sideBySide(ptr0, len0, val3, ptr1, len1, val4);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * Signs a report's decision: the DSSE envelope as JSON text. `now` is Unix seconds. With
 * `review` (a review file's bytes, `reviewFile`'s), the statement pins it as `sign --review` does.
 * @param {string} report_json
 * @param {string} private_pem
 * @param {string} model_name
 * @param {string} model_digest
 * @param {string} target
 * @param {number} now
 * @param {Uint8Array | number[] | null} [review]
 * @returns {string}
 */
export function signDecision(report_json, private_pem, model_name, model_digest, target, now, review) {
    let deferred9_0;
    let deferred9_1;
    try {
        const val7 = +now;
        let ptr0, len0, ptr1, len1, ptr2, len2, ptr3, len3, ptr4, len4, ptr5, len5;
        try {
            ptr0 = passStringToWasm0(report_json, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passStringToWasm0(private_pem, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
            ptr2 = passStringToWasm0(model_name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len2 = WASM_VECTOR_LEN;
            ptr3 = passStringToWasm0(model_digest, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len3 = WASM_VECTOR_LEN;
            ptr4 = passStringToWasm0(target, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len4 = WASM_VECTOR_LEN;
            ptr5 = isLikeNone(review) ? 0 : passArray8ToWasm0(review, wasm.__wbindgen_malloc);
            len5 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr5) { wasm.__wbindgen_free(ptr5, len5 * 1, 1); }
            if (ptr4) { wasm.__wbindgen_free(ptr4, len4 * 1, 1); }
            if (ptr3) { wasm.__wbindgen_free(ptr3, len3 * 1, 1); }
            if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 1, 1); }
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.signDecision(ptr0, len0, ptr1, len1, ptr2, len2, ptr3, len3, ptr4, len4, val7, ptr5, len5);
        var ptr8 = ret[0];
        var len8 = ret[1];
        if (ret[3]) {
            ptr8 = 0; len8 = 0;
            throw takeFromExternrefTable0(ret[2]);
        }
        deferred9_0 = ptr8;
        deferred9_1 = len8;
        return getStringFromWasm0(ptr8, len8);
    } finally {
        wasm.__wbindgen_free(deferred9_0, deferred9_1, 1);
    }
}

export function start() {
    wasm.start();
}

/**
 * What a trusted trainer key's PEM holds: an ECDSA public key (its key id, model-signing's
 * hint and its curve) or root certificates (how many, and their subjects).
 * @param {string} pem
 * @returns {TrainerKeyInfo}
 */
export function trainerKeyInfo(pem) {
    const ptr0 = passStringToWasm0(pem, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.trainerKeyInfo(ptr0, len0);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * Verifies an envelope against trusted public keys (PEM). Invalid envelopes are a result with
 * `valid: false` and the failed `check`, not an exception.
 * @param {Uint8Array | number[]} envelope
 * @param {string[]} trusted_pems
 * @param {VerifyOptions} options
 * @returns {VerifyResult}
 */
export function verifyEnvelope(envelope, trusted_pems, options) {
    let ptr0, len0, ptr1, len1;
    try {
        ptr0 = passArray8ToWasm0(envelope, wasm.__wbindgen_malloc);
        len0 = WASM_VECTOR_LEN;
        ptr1 = passArrayJsValueToWasm0(trusted_pems, wasm.__wbindgen_malloc);
        len1 = WASM_VECTOR_LEN;
    } catch (e) {
        if (ptr1) { wasm.__externref_drop_slice(ptr1, len1); wasm.__wbindgen_free(ptr1, len1 * 4, 4); }
        if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
        throw e;
    }
    const ret = wasm.verifyEnvelope(ptr0, len0, ptr1, len1, options);
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * Verifies a trainer's `model.sig` (OpenSSF Model Signing v1.0) against trusted trainer keys
 * (SPKI PEM, ECDSA P-256/P-384) and, with `options.trusted_roots`, the certificate method; with
 * `files`, the model's files held in memory are compared with the signed ones (a large folder:
 * `ModelCheck`). A failed check is a result (`valid: false`, `failure`), not an exception.
 * @param {Uint8Array | string} bundle
 * @param {string[]} trusted_keys
 * @param {ModelFileInput[] | null} [files]
 * @param {ModelSignatureOptions} [options]
 * @returns {ModelSignatureResult}
 */
export function verifyModelSignature(bundle, trusted_keys, files, options) {
    const ptr0 = passArrayJsValueToWasm0(trusted_keys, wasm.__wbindgen_malloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.verifyModelSignature(bundle, ptr0, len0, isLikeNone(files) ? 0 : addToExternrefTable0(files), isLikeNone(options) ? 0 : addToExternrefTable0(options));
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}
function __wbg_get_imports() {
    const import0 = {
        __proto__: null,
        __wbg_Error_208446807d0d1e30: function(arg0, arg1) {
            const ret = Error(getStringFromWasm0(arg0, arg1));
            return ret;
        },
        __wbg_Number_ff192a72a0dcdf6d: function(arg0) {
            const ret = Number(arg0);
            return ret;
        },
        __wbg_String_8564e559799eccda: function(arg0, arg1) {
            const ret = String(arg1);
            const ptr1 = passStringToWasm0(ret, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            const len1 = WASM_VECTOR_LEN;
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 1, len1, true);
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, ptr1, true);
        },
        __wbg___wbindgen_bigint_get_as_i64_11da4b52cd0aedef: function(arg0, arg1) {
            const v = arg1;
            const ret = typeof(v) === 'bigint' ? v : undefined;
            getDataViewMemory0().setBigInt64((arg0 >>> 0) + 8 * 1, isLikeNone(ret) ? BigInt(0) : ret, true);
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, !isLikeNone(ret), true);
        },
        __wbg___wbindgen_boolean_get_4f1baf9a00be3c74: function(arg0) {
            const v = arg0;
            const ret = typeof(v) === 'boolean' ? v : undefined;
            return isLikeNone(ret) ? 0xFFFFFF : ret ? 1 : 0;
        },
        __wbg___wbindgen_debug_string_f249a2a76caa9a55: function(arg0, arg1) {
            const ret = debugString(arg1);
            const ptr1 = passStringToWasm0(ret, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            const len1 = WASM_VECTOR_LEN;
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 1, len1, true);
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, ptr1, true);
        },
        __wbg___wbindgen_in_3f58a9d3b3a7eed2: function(arg0, arg1) {
            const ret = arg0 in arg1;
            return ret;
        },
        __wbg___wbindgen_is_bigint_5fa10641e039d3ef: function(arg0) {
            const ret = typeof(arg0) === 'bigint';
            return ret;
        },
        __wbg___wbindgen_is_function_741ff2bb612836f5: function(arg0) {
            const ret = typeof(arg0) === 'function';
            return ret;
        },
        __wbg___wbindgen_is_null_c22311b1cc228e3a: function(arg0) {
            const ret = arg0 === null;
            return ret;
        },
        __wbg___wbindgen_is_object_8b968c3ab8e96595: function(arg0) {
            const val = arg0;
            const ret = typeof(val) === 'object' && val !== null;
            return ret;
        },
        __wbg___wbindgen_is_string_fc456fee5d3317de: function(arg0) {
            const ret = typeof(arg0) === 'string';
            return ret;
        },
        __wbg___wbindgen_is_undefined_be5b34249ff1fc15: function(arg0) {
            const ret = arg0 === undefined;
            return ret;
        },
        __wbg___wbindgen_jsval_eq_38d7bfbe4cc84039: function(arg0, arg1) {
            const ret = arg0 === arg1;
            return ret;
        },
        __wbg___wbindgen_jsval_loose_eq_b2f214e2e4b30e36: function(arg0, arg1) {
            const ret = arg0 == arg1;
            return ret;
        },
        __wbg___wbindgen_number_get_934b640d0889af78: function(arg0, arg1) {
            const obj = arg1;
            const ret = typeof(obj) === 'number' ? obj : undefined;
            getDataViewMemory0().setFloat64((arg0 >>> 0) + 8 * 1, isLikeNone(ret) ? 0 : ret, true);
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, !isLikeNone(ret), true);
        },
        __wbg___wbindgen_string_get_7ce8eee7fd327545: function(arg0, arg1) {
            const obj = arg1;
            const ret = typeof(obj) === 'string' ? obj : undefined;
            var ptr1 = isLikeNone(ret) ? 0 : passStringToWasm0(ret, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            var len1 = WASM_VECTOR_LEN;
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 1, len1, true);
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, ptr1, true);
        },
        __wbg___wbindgen_throw_4c88d8bf264fd984: function(arg0, arg1) {
            throw new Error(getStringFromWasm0(arg0, arg1));
        },
        __wbg_call_40b008ba32f73991: function() { return handleError(function (arg0, arg1) {
            const ret = arg0.call(arg1);
            return ret;
        }, arguments); },
        __wbg_done_57e08d0be6e30c02: function(arg0) {
            const ret = arg0.done;
            return ret;
        },
        __wbg_error_757e9472f8410341: function(arg0, arg1) {
            let deferred0_0;
            let deferred0_1;
            try {
                deferred0_0 = arg0;
                deferred0_1 = arg1;
                console.error(getStringFromWasm0(arg0, arg1));
            } finally {
                wasm.__wbindgen_free(deferred0_0, deferred0_1, 1);
            }
        },
        __wbg_from_eac91875c8a5ffa4: function(arg0) {
            const ret = Array.from(arg0);
            return ret;
        },
        __wbg_getTime_edc91481cbc4cd78: function(arg0) {
            const ret = arg0.getTime();
            return ret;
        },
        __wbg_get_2080c49015e35254: function() { return handleError(function (arg0, arg1) {
            const ret = Reflect.get(arg0, arg1);
            return ret;
        }, arguments); },
        __wbg_get_635eea311fa1a291: function() { return handleError(function (arg0, arg1) {
            const ret = Reflect.get(arg0, arg1);
            return ret;
        }, arguments); },
        __wbg_get_unchecked_e6325ad374eff861: function(arg0, arg1) {
            const ret = arg0[arg1 >>> 0];
            return ret;
        },
        __wbg_get_with_ref_key_fc601247060b7204: function(arg0, arg1) {
            const ret = arg0[arg1];
            return ret;
        },
        __wbg_instanceof_ArrayBuffer_12cdaa4161423e6b: function(arg0) {
            let result;
            try {
                result = arg0 instanceof ArrayBuffer;
            } catch (_) {
                result = false;
            }
            const ret = result;
            return ret;
        },
        __wbg_instanceof_Uint8Array_d7aeb0dcb3108fea: function(arg0) {
            let result;
            try {
                result = arg0 instanceof Uint8Array;
            } catch (_) {
                result = false;
            }
            const ret = result;
            return ret;
        },
        __wbg_isArray_bcf1376d0d732d08: function(arg0) {
            const ret = Array.isArray(arg0);
            return ret;
        },
        __wbg_isSafeInteger_1a35ba4d31e71d38: function(arg0) {
            const ret = Number.isSafeInteger(arg0);
            return ret;
        },
        __wbg_iterator_e4c5e8f68ada7b58: function() {
            const ret = Symbol.iterator;
            return ret;
        },
        __wbg_length_186163212ffe79c3: function(arg0) {
            const ret = arg0.length;
            return ret;
        },
        __wbg_length_b03a0fabb109b1e9: function(arg0) {
            const ret = arg0.length;
            return ret;
        },
        __wbg_new_0_36d738a0c8cfac43: function() {
            const ret = new Date();
            return ret;
        },
        __wbg_new_13de428334042d26: function(arg0) {
            const ret = new Uint8Array(arg0);
            return ret;
        },
        __wbg_new_37eb45aaf5eeb820: function() {
            const ret = new Array();
            return ret;
        },
        __wbg_new_7075786089b89c5e: function() {
            const ret = new Map();
            return ret;
        },
        __wbg_new_bb74001155cb8ca8: function() {
            const ret = new Error();
            return ret;
        },
        __wbg_new_cd4348290afae586: function() {
            const ret = new Object();
            return ret;
        },
        __wbg_new_from_slice_aaf85a9746711968: function(arg0, arg1) {
            const ret = new Float64Array(getArrayF64FromWasm0(arg0, arg1));
            return ret;
        },
        __wbg_next_178c1651c11432b3: function(arg0) {
            const ret = arg0.next;
            return ret;
        },
        __wbg_next_af5ac6a08bb0a717: function() { return handleError(function (arg0) {
            const ret = arg0.next();
            return ret;
        }, arguments); },
        __wbg_parse_c3f72b5a24f83c01: function() { return handleError(function (arg0, arg1) {
            const ret = JSON.parse(getStringFromWasm0(arg0, arg1));
            return ret;
        }, arguments); },
        __wbg_prototypesetcall_13162965d1fe7aa3: function(arg0, arg1, arg2) {
            Uint8Array.prototype.set.call(getArrayU8FromWasm0(arg0, arg1), arg2);
        },
        __wbg_set_2793479888329cb6: function() { return handleError(function (arg0, arg1, arg2) {
            const ret = Reflect.set(arg0, arg1, arg2);
            return ret;
        }, arguments); },
        __wbg_set_8282f7e0d2d01336: function(arg0, arg1, arg2) {
            const ret = arg0.set(arg1, arg2);
            return ret;
        },
        __wbg_set_d2d33b52458e984a: function(arg0, arg1, arg2) {
            arg0[arg1 >>> 0] = arg2;
        },
        __wbg_set_e4b9a833d288759a: function(arg0, arg1, arg2) {
            arg0[arg1] = arg2;
        },
        __wbg_stack_575c4e0918581b9c: function(arg0, arg1) {
            const ret = arg1.stack;
            const ptr1 = passStringToWasm0(ret, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            const len1 = WASM_VECTOR_LEN;
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 1, len1, true);
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, ptr1, true);
        },
        __wbg_stringify_0a0fbf2ef722380a: function() { return handleError(function (arg0) {
            const ret = JSON.stringify(arg0);
            return ret;
        }, arguments); },
        __wbg_value_e0f328965e184931: function(arg0) {
            const ret = arg0.value;
            return ret;
        },
        __wbindgen_generic_0000000000000001: function(arg0) {
            // Cast intrinsic for `F64 -> Externref`.
            const ret = arg0;
            return ret;
        },
        __wbindgen_generic_0000000000000002: function(arg0) {
            // Cast intrinsic for `I64 -> Externref`.
            const ret = arg0;
            return ret;
        },
        __wbindgen_generic_0000000000000003: function(arg0, arg1) {
            // Cast intrinsic for `Ref(String) -> Externref`.
            const ret = getStringFromWasm0(arg0, arg1);
            return ret;
        },
        __wbindgen_generic_0000000000000004: function(arg0) {
            // Cast intrinsic for `U64 -> Externref`.
            const ret = BigInt.asUintN(64, arg0);
            return ret;
        },
        __wbindgen_init_externref_table: function() {
            const table = wasm.__wbindgen_externrefs;
            table.set(0, undefined);
            table.set(1024, undefined);
            table.set(1025, null);
            table.set(1026, true);
            table.set(1027, false);
        },
    };
    return {
        __proto__: null,
        "./deploy_gate_bg.js": import0,
    };
}

const GateDiffFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_gatediff_free(ptr, 1));
const GateSessionFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_gatesession_free(ptr, 1));
const ModelCheckFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_modelcheck_free(ptr, 1));
const ModelFileHasherFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_modelfilehasher_free(ptr, 1));
const SegmentScannerFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_segmentscanner_free(ptr, 1));
const Sha256StreamFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_sha256stream_free(ptr, 1));

function addToExternrefTable0(obj) {
    const idx = wasm.__externref_table_alloc();
    wasm.__wbindgen_externrefs.set(idx, obj);
    return idx;
}

function debugString(val) {
    switch (typeof val) {
        // primitive types
        case 'number':
        case 'boolean':
        case 'undefined':
        return `${val}`;
        case 'string':
        return JSON.stringify(val);
        case 'bigint':
        return `${val}n`;
        case 'symbol':
        return val.description !== undefined
            ? `Symbol(${val.description})`
            : 'Symbol';
        case 'function':
        return typeof val.name === 'string' && val.name !== ''
            ? `Function(${val.name})`
            : 'Function';
        case 'object': {
            if (val === null) {
                return 'null';
            }
            // objects
            if (Array.isArray(val)) {
                return '[' + Array.from(val, debugString).join(', ') + ']';
            }
            // errors
            if (val instanceof Error) {
                return `${val.name}: ${val.message}\n${val.stack}`;
            }

            const toStringOutput = toString.call(val);
            // Test for built-in
            const className = /\[object ([^\]]+)\]/.exec(toStringOutput)?.[1];

            // Failed to match the standard '[object ClassName]'
            if (className === undefined) {
                return toStringOutput;
            }
            if (className === 'Object') {
                // we're a user defined class or Object
                // JSON.stringify avoids problems with cycles, and is generally much
                // easier than looping through ownProperties of `val`.
                try {
                    return 'Object(' + JSON.stringify(val) + ')';
                } catch (_) {
                    return 'Object';
                }
            }
            // TODO we could test for more things here, like `Set`s and `Map`s.
            return className;
        }
        // Per MDN: 'This list of values is exhaustive.'
        // https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Operators/typeof#description
    }
}

function getArrayF64FromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return getFloat64ArrayMemory0().subarray(ptr / 8, ptr / 8 + len);
}

function getArrayJsValueFromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    const mem = getDataViewMemory0();
    const result = [];
    for (let i = ptr; i < ptr + 4 * len; i += 4) {
        result.push(wasm.__wbindgen_externrefs.get(mem.getUint32(i, true)));
    }
    wasm.__externref_drop_slice(ptr, len);
    return result;
}

function getArrayU32FromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return getUint32ArrayMemory0().subarray(ptr / 4, ptr / 4 + len);
}

function getArrayU8FromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return getUint8ArrayMemory0().subarray(ptr / 1, ptr / 1 + len);
}

let cachedDataViewMemory0 = null;
function getDataViewMemory0() {
    if (cachedDataViewMemory0 === null || cachedDataViewMemory0.buffer.detached === true || (cachedDataViewMemory0.buffer.detached === undefined && cachedDataViewMemory0.buffer !== wasm.memory.buffer)) {
        cachedDataViewMemory0 = new DataView(wasm.memory.buffer);
    }
    return cachedDataViewMemory0;
}

let cachedFloat64ArrayMemory0 = null;
function getFloat64ArrayMemory0() {
    if (cachedFloat64ArrayMemory0 === null || cachedFloat64ArrayMemory0.byteLength === 0) {
        cachedFloat64ArrayMemory0 = new Float64Array(wasm.memory.buffer);
    }
    return cachedFloat64ArrayMemory0;
}

function getStringFromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return decodeText(getUint8ArrayMemory0().subarray(ptr, ptr + len));
}

let cachedUint32ArrayMemory0 = null;
function getUint32ArrayMemory0() {
    if (cachedUint32ArrayMemory0 === null || cachedUint32ArrayMemory0.byteLength === 0) {
        cachedUint32ArrayMemory0 = new Uint32Array(wasm.memory.buffer);
    }
    return cachedUint32ArrayMemory0;
}

let cachedUint8ArrayMemory0 = null;
function getUint8ArrayMemory0() {
    if (cachedUint8ArrayMemory0 === null || cachedUint8ArrayMemory0.byteLength === 0) {
        cachedUint8ArrayMemory0 = new Uint8Array(wasm.memory.buffer);
    }
    return cachedUint8ArrayMemory0;
}

function handleError(f, args) {
    try {
        return f.apply(this, args);
    } catch (e) {
        const idx = addToExternrefTable0(e);
        wasm.__wbindgen_exn_store(idx);
    }
}

function isLikeNone(x) {
    return x === undefined || x === null;
}

function passArray8ToWasm0(arg, malloc) {
    const ptr = malloc(arg.length * 1, 1) >>> 0;
    getUint8ArrayMemory0().set(arg, ptr / 1);
    WASM_VECTOR_LEN = arg.length;
    return ptr;
}

function passArrayJsValueToWasm0(array, malloc) {
    const ptr = malloc(array.length * 4, 4) >>> 0;
    for (let i = 0; i < array.length; i++) {
        const add = addToExternrefTable0(array[i]);
        getDataViewMemory0().setUint32(ptr + 4 * i, add, true);
    }
    WASM_VECTOR_LEN = array.length;
    return ptr;
}

function passStringToWasm0(arg, malloc, realloc) {
    if (realloc === undefined) {
        const buf = cachedTextEncoder.encode(arg);
        const ptr = malloc(buf.length, 1) >>> 0;
        getUint8ArrayMemory0().subarray(ptr, ptr + buf.length).set(buf);
        WASM_VECTOR_LEN = buf.length;
        return ptr;
    }

    let len = arg.length;
    let ptr = malloc(len, 1) >>> 0;

    const mem = getUint8ArrayMemory0();

    let offset = 0;

    for (; offset < len; offset++) {
        const code = arg.charCodeAt(offset);
        if (code > 0x7F) break;
        mem[ptr + offset] = code;
    }
    if (offset !== len) {
        if (offset !== 0) {
            arg = arg.slice(offset);
        }
        ptr = realloc(ptr, len, len = offset + arg.length * 3, 1) >>> 0;
        const view = getUint8ArrayMemory0().subarray(ptr + offset, ptr + len);
        const ret = cachedTextEncoder.encodeInto(arg, view);

        offset += ret.written;
        ptr = realloc(ptr, len, offset, 1) >>> 0;
    }

    WASM_VECTOR_LEN = offset;
    return ptr;
}

function takeFromExternrefTable0(idx) {
    const value = wasm.__wbindgen_externrefs.get(idx);
    wasm.__externref_table_dealloc(idx);
    return value;
}

let cachedTextDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
cachedTextDecoder.decode();
const MAX_SAFARI_DECODE_BYTES = 2146435072;
let numBytesDecoded = 0;
function decodeText(bytes) {
    numBytesDecoded += bytes.length;
    if (numBytesDecoded >= MAX_SAFARI_DECODE_BYTES) {
        cachedTextDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
        cachedTextDecoder.decode();
        numBytesDecoded = bytes.length;
    }
    return cachedTextDecoder.decode(bytes);
}

const cachedTextEncoder = new TextEncoder();

if (!('encodeInto' in cachedTextEncoder)) {
    cachedTextEncoder.encodeInto = function (arg, view) {
        const buf = cachedTextEncoder.encode(arg);
        view.set(buf);
        return {
            read: arg.length,
            written: buf.length
        };
    };
}

let WASM_VECTOR_LEN = 0;

let wasmModule, wasmInstance, wasm;
function __wbg_finalize_init(instance, module) {
    wasmInstance = instance;
    wasm = instance.exports;
    wasmModule = module;
    cachedDataViewMemory0 = null;
    cachedFloat64ArrayMemory0 = null;
    cachedUint32ArrayMemory0 = null;
    cachedUint8ArrayMemory0 = null;
    wasm.__wbindgen_start();
    return wasm;
}

async function __wbg_load(module, imports) {
    if (typeof Response === 'function' && module instanceof Response) {
        if (!module.ok) {
            throw new Error(`failed to fetch Wasm: ${module.status} ${module.statusText} fetching '${module.url}'`);
        }

        if (typeof WebAssembly.instantiateStreaming === 'function') {
            try {
                return await WebAssembly.instantiateStreaming(module, imports);
            } catch (e) {
                const validResponse = expectedResponseType(module.type);

                if (validResponse && module.headers.get('Content-Type') !== 'application/wasm') {
                    console.warn("`WebAssembly.instantiateStreaming` failed because your server does not serve Wasm with `application/wasm` MIME type. Falling back to `WebAssembly.instantiate` which is slower. Original error:\n", e);

                } else { throw e; }
            }
        }

        const bytes = await module.arrayBuffer();
        return await WebAssembly.instantiate(bytes, imports);
    } else {
        const instance = await WebAssembly.instantiate(module, imports);

        if (instance instanceof WebAssembly.Instance) {
            return { instance, module };
        } else {
            return instance;
        }
    }

    function expectedResponseType(type) {
        switch (type) {
            case 'basic': case 'cors': case 'default': return true;
        }
        return false;
    }
}

function initSync(module) {
    if (wasm !== undefined) return wasm;


    if (module !== undefined) {
        if (Object.getPrototypeOf(module) === Object.prototype) {
            ({module} = module)
        } else {
            console.warn('using deprecated parameters for `initSync()`; pass a single object instead')
        }
    }

    const imports = __wbg_get_imports();
    if (!(module instanceof WebAssembly.Module)) {
        module = new WebAssembly.Module(module);
    }
    const instance = new WebAssembly.Instance(module, imports);
    return __wbg_finalize_init(instance, module);
}

let __wbg_init_promise;
async function __wbg_init(module_or_path) {
    if (wasm !== undefined) return wasm;
    if (__wbg_init_promise === undefined) {
        __wbg_init_promise = __wbg_init_once(module_or_path);
        __wbg_init_promise.catch(() => { __wbg_init_promise = undefined; });
    }
    return __wbg_init_promise;
}

async function __wbg_init_once(module_or_path) {

    if (module_or_path !== undefined) {
        if (Object.getPrototypeOf(module_or_path) === Object.prototype) {
            ({module_or_path} = module_or_path)
        } else {
            console.warn('using deprecated parameters for the initialization function; pass a single object instead')
        }
    }

    if (module_or_path === undefined) {
        module_or_path = new URL('deploy_gate_bg.wasm', import.meta.url);
    }
    const imports = __wbg_get_imports();

    if (typeof module_or_path === 'string' || (typeof Request === 'function' && module_or_path instanceof Request) || (typeof URL === 'function' && module_or_path instanceof URL)) {
        module_or_path = fetch(module_or_path);
    }

    const { instance, module } = await __wbg_load(await module_or_path, imports);

    return __wbg_finalize_init(instance, module);
}

export { initSync, __wbg_init as default };
