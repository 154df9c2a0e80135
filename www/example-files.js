// The bundled example's files (gen_audit --size 400K --seed 1 --answers), found next to this module. Only
// www/example.js imports it, so a portal that does not ask for the example does not ship it:
// each file is named by a literal `new URL(…, import.meta.url)`, which bundlers (Vite, webpack,
// Parcel) copy into a build only when this module is part of it. The single-file viewer
// (scripts/build-single.mjs) replaces this module with one that has the files inline.

/** Each example file with its role, in the order the viewer lists them. */
const FILES = [
  ["audit", "audit.jsonl", () => new URL("./examples/audit.jsonl", import.meta.url)],
  ["old_verdicts", "old_verdicts.jsonl", () => new URL("./examples/old_verdicts.jsonl", import.meta.url)],
  ["new_verdicts", "new_verdicts.jsonl", () => new URL("./examples/new_verdicts.jsonl", import.meta.url)],
  ["old_trajectories", "old_trajectories.jsonl", () => new URL("./examples/old_trajectories.jsonl", import.meta.url)],
  ["new_trajectories", "new_trajectories.jsonl", () => new URL("./examples/new_trajectories.jsonl", import.meta.url)],
];

/** The example as the viewer's file entries: [{file, role}]. */
export async function exampleFiles() {
  return Promise.all(
    FILES.map(async ([role, name, url]) => {
      const response = await fetch(url());
      if (!response.ok) throw new Error(`cannot load the example ${name}: HTTP ${response.status}`);
      return { role, file: new File([await response.blob()], name, { type: "application/x-ndjson" }) };
    }),
  );
}
