// The cases' view in the URL fragment (docs/review.md): the report's sha256 and a prefix of
// each input's, then the filter, the search, the template, the sort, the page and the open case.
// A fragment is never sent to a server; the link reopens the view once the same files are
// dropped, and says so when others are.
//
//   #report=<sha256>&in=audit:<16 hex>,old_verdicts:<16 hex>,…&filter=regressed&q=timeout
//    &template=<JSON>&sort=status:asc&page=2&case=17

/** Hex digits of each input's sha256 a link keeps (enough to name the file). */
const PREFIX = 16;

/** The link in `hash` (location.hash), or null when it names no report. */
export function readLink(hash) {
  const p = new URLSearchParams(String(hash || "").replace(/^#/, ""));
  const report = p.get("report");
  if (!report || !/^[0-9a-f]{64}$/.test(report)) return null;
  const inputs = (p.get("in") || "")
    .split(",")
    .map((pair) => pair.split(":"))
    .filter(([role, sha]) => role && sha && /^[0-9a-f]+$/.test(sha));
  const int = (name, min = 0) => {
    const v = p.get(name);
    return v !== null && /^\d{1,9}$/.test(v) && Number(v) >= min ? Number(v) : undefined;
  };
  const page = int("page", 1);
  return {
    report,
    inputs,
    view: {
      filter: p.get("filter") || undefined,
      q: p.get("q") || "",
      template: p.get("template"),
      sort: p.get("sort") || null,
      page: page === undefined ? undefined : page - 1,
      open: int("case"),
    },
  };
}

/** Writes the view of report `report` (its inputs `[[role, sha256]]`) into the URL fragment,
 * replacing the history entry; returns the fragment written. */
export function writeLink({ report, inputs, view }) {
  const p = new URLSearchParams();
  p.set("report", report);
  p.set("in", inputs.filter(([, sha]) => sha).map(([role, sha]) => `${role}:${sha.slice(0, PREFIX)}`).join(","));
  if (view.filter && view.filter !== "all") p.set("filter", view.filter);
  if (view.q) p.set("q", view.q);
  if (view.template !== null && view.template !== undefined) p.set("template", view.template);
  if (view.sort) p.set("sort", view.sort);
  if (view.page) p.set("page", String(view.page + 1));
  if (view.open !== null && view.open !== undefined) p.set("case", String(view.open));
  // `:` and `,` need no escape in a fragment: the digests stay readable.
  const hash = `#${p.toString().replace(/%3A/g, ":").replace(/%2C/g, ",")}`;
  if (location.hash !== hash) history.replaceState(history.state, "", hash);
  return location.hash;
}
