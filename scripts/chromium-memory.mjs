// Chromium's processes below this one and their memory, read from /proc (Linux): what the page
// benchmarks (bench-page.mjs, bench-compare.mjs) sample while the page works.
import fs from "node:fs";

/** The live processes below `pid`, each with whether it is a renderer (a tab). */
export function descendants(pid) {
  const parent = new Map();
  for (const p of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, "utf8");
      parent.set(Number(p), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // gone
    }
  }
  const below = (p) => {
    for (let q = p; q > 1; q = parent.get(q)) if (q === pid) return true;
    return false;
  };
  const out = [];
  for (const p of parent.keys()) {
    if (p === pid || !below(p)) continue;
    try {
      out.push({ pid: p, renderer: fs.readFileSync(`/proc/${p}/cmdline`, "utf8").includes("--type=renderer") });
    } catch {
      // gone
    }
  }
  return out;
}

/** Resident set (bytes) of the largest renderer and of all the processes listed. */
export function residents(procs) {
  const out = { renderer: 0, all: 0 };
  for (const { pid, renderer } of procs) {
    try {
      const rss = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]) * 1024;
      out.all += rss;
      if (renderer) out.renderer = Math.max(out.renderer, rss);
    } catch {
      // gone
    }
  }
  return out;
}
