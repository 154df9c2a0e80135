//! The house without circles: no file imports another that imports it back (directly or round a
//! loop), in the core library, the CLI, the Python extension, the Python package and the page's
//! JavaScript; and at most [`MAX_UPWARD`] imports point from a lower layer to a higher one, the
//! layers being the ones the crate's root documentation names (`src/lib.rs`, `docs/architecture.md`).
//!
//! An import is a path through `crate::`, `super::` or `self::` in Rust (in `use` or in an
//! expression, comments and strings left out; a path through a module's `pub use` counts for
//! the file that defines the item), `from .x import` or `from . import x` in Python (including the
//! ones under `TYPE_CHECKING` or inside a function: Python runs them too), and `import … from
//! './x.js'` or `import('./x.js')` in JavaScript. Test code (`#[cfg(test)]` modules and the files
//! they declare) may reach any layer and is left out of the count; its imports still may not
//! close a circle. Run `cargo test --test it layers -- --nocapture` to see every upward import.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom to top. A module may import from its own layer and the ones below.
const LAYERS: [&str; 7] = [
    "inputs",
    "evidence",
    "decision",
    "report",
    "attest/deploy",
    "renderings",
    "shells",
];

/// At most this many imports (distinct pairs of files) point from a lower layer to a higher one.
const MAX_UPWARD: usize = 10;

/// Where each module of the core library sits: the longest prefix of a file's module path that
/// is listed here gives its layer. The run concept is placed by name, wherever it lives: the
/// worker protocol, its records and the endpoints (`run`, `endpoint`) are
/// evidence (they produce verdict records); the engine that runs models (`native::run`) is part
/// of `native`, the shells' shared IO.
const RUST_LAYERS: &[(&str, &str)] = &[
    // inputs: bytes into values; the policy and the test set.
    ("input", "inputs"),
    ("lines", "inputs"),
    ("compat", "inputs"),
    ("json", "inputs"),
    ("parallel", "inputs"),
    ("audit", "inputs"),
    ("policy", "inputs"),
    ("attest::jcs", "inputs"),
    ("attest::strict", "inputs"),
    ("attest::time", "inputs"),
    ("testset", "inputs"),
    ("sniff", "inputs"),
    ("review", "inputs"),
    // evidence: what the models did.
    ("verdicts", "evidence"),
    ("cost", "evidence"),
    ("trajectory", "evidence"),
    ("run", "evidence"),
    ("endpoint", "evidence"),
    // decision: scores, statistics and the policy's rule.
    ("scoring", "decision"),
    ("stats", "decision"),
    ("decision", "decision"),
    ("sequential", "decision"),
    ("guardrail", "decision"),
    // report: the evaluation as one document, and the session and calls that make it.
    ("report", "report"),
    ("session", "report"),
    ("gate", "report"),
    // attest/deploy: signing and verifying decisions, model signatures, the config edit, and
    // what compares two evaluations (reports or signed decisions, read through the verifier).
    ("diff", "attest/deploy"),
    ("attest", "attest/deploy"),
    ("oms", "attest/deploy"),
    ("deploy", "attest/deploy"),
    // renderings: the report for people and CI systems.
    ("render", "renderings"),
    // shells: the IO native shells share (files, the deploy step, the run engine), the
    // `deploy-gate` command and the wasm API.
    ("native", "shells"),
    ("cli", "shells"),
    ("native::run", "shells"),
    ("wasm", "shells"),
];

/// Where each module of the Python package sits (`python/deploy_gate/`); `_core` is the
/// extension, outside the graph.
const PYTHON_LAYERS: &[(&str, &str)] = &[
    ("errors", "inputs"),
    ("_progress", "inputs"),
    ("_trajectories", "evidence"),
    ("_runners", "evidence"),
    ("_target", "evidence"),
    ("_endpoint", "evidence"),
    ("_run", "evidence"),
    ("_decision", "decision"),
    ("_evaluate", "report"),
    ("_trainer", "attest/deploy"),
    ("_diff", "attest/deploy"),
    ("_attest", "attest/deploy"),
    ("_deploy", "attest/deploy"),
    ("_gate", "shells"),
    ("_cli", "shells"),
    ("__main__", "shells"),
    ("__init__", "shells"),
];

/// One file's imports: the file and the files it imports, each with whether only test code does.
type Graph = BTreeMap<String, BTreeMap<String, bool>>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if !path.ends_with("node_modules") {
                files(&path, ext, out);
            }
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

fn rel(path: &Path) -> String {
    path.strip_prefix(root()).unwrap().to_string_lossy().replace('\\', "/")
}

/// Rust text with comments, strings and character literals blanked out (lengths kept).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if b[i] == b'r'
            && (b[i + 1..].starts_with(b"\"") || b[i + 1..].starts_with(b"#"))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            let start = i + 2 + hashes;
            let end = b[start..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| start + p + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, (j + 1).min(b.len()));
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..].iter().position(|&c| c == b'\'').map(|p| i + 2 + p + 1)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(i + 3)
            } else {
                let ch = text[i + 1..].chars().next();
                ch.and_then(|c| (b.get(i + 1 + c.len_utf8()) == Some(&b'\'')).then(|| i + 2 + c.len_utf8()))
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Punct(char),
    Colons,
}

fn tokens(code: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let b: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(b[start..i].iter().collect()));
        } else if c == ':' && b.get(i + 1) == Some(&':') {
            out.push(Tok::Colons);
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(Tok::Punct(c));
            }
            i += 1;
        }
    }
    out
}

/// The paths of a use tree or a path expression starting at `toks[i]` (after `crate::` or a
/// chain of `super::`), each a list of segments; returns them and the index after.
fn paths(toks: &[Tok], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        match toks.get(i) {
            Some(Tok::Ident(name)) => {
                prefix.push(name.clone());
                i += 1;
                if toks.get(i) == Some(&Tok::Colons) {
                    i += 1;
                    continue;
                }
                return (vec![prefix], i);
            }
            Some(Tok::Punct('{')) => {
                let mut all = Vec::new();
                i += 1;
                loop {
                    match toks.get(i) {
                        Some(Tok::Punct('}')) | None => return (all, i + 1),
                        Some(Tok::Punct(',')) => i += 1,
                        Some(Tok::Punct('*')) => {
                            all.push(prefix.clone());
                            i += 1;
                        }
                        Some(Tok::Ident(kw)) if kw == "as" => i += 2,
                        Some(Tok::Ident(kw)) if kw == "self" => {
                            all.push(prefix.clone());
                            i += 1;
                        }
                        _ => {
                            let (inner, next) = paths(toks, i);
                            all.extend(inner.into_iter().map(|p| prefix.iter().cloned().chain(p).collect()));
                            i = next.max(i + 1);
                        }
                    }
                }
            }
            _ => return (vec![prefix], i),
        }
    }
}

/// The module path of a Rust file of a crate rooted at `src_root` (`foo/bar.rs` and
/// `foo/bar/mod.rs` are `foo::bar`; the crate root is empty).
fn module_of(src_root: &Path, file: &Path, crate_root: &str) -> Vec<String> {
    let rel = file.strip_prefix(src_root).unwrap();
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    if last != "mod.rs" && last != crate_root {
        parts.push(last.trim_end_matches(".rs").to_owned());
    }
    parts
}

/// One reference of a Rust file: the absolute module path it names, whether only test code
/// makes it, and whether it is a `pub use` (a re-export, which passes a name on).
struct Reference {
    path: Vec<String>,
    test: bool,
    reexport: bool,
}

/// The references of one file whose module path is `here`: paths through `crate::`, `super::`,
/// `self::` and (with `children`) a child module's name; and the files its `#[cfg(test)] mod
/// name;` declare.
fn references(
    toks: &[Tok],
    here: &[String],
    modules: &BTreeMap<Vec<String>, String>,
    children: bool,
) -> (Vec<Reference>, Vec<Vec<String>>) {
    let mut refs = Vec::new();
    let mut test_files = Vec::new();
    // The inline modules open at this point: (name, brace depth inside it, test only).
    let mut inline: Vec<(String, usize, bool)> = Vec::new();
    let (mut depth, mut cfg_test, mut pub_use) = (0usize, false, false);
    let is = |i: usize, s: &str| matches!(toks.get(i), Some(Tok::Ident(x)) if x == s);
    let mut i = 0;
    while i < toks.len() {
        let current = || -> Vec<String> { here.iter().cloned().chain(inline.iter().map(|m| m.0.clone())).collect() };
        match &toks[i] {
            Tok::Punct('#') if toks.get(i + 1) == Some(&Tok::Punct('[')) => {
                cfg_test = is(i + 2, "cfg") && is(i + 4, "test") && toks.get(i + 5) == Some(&Tok::Punct(')'));
                // Skip the attribute.
                let mut level = 0;
                i += 1;
                while i < toks.len() {
                    match toks[i] {
                        Tok::Punct('[') => level += 1,
                        Tok::Punct(']') => {
                            level -= 1;
                            if level == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                continue;
            }
            Tok::Ident(kw) if kw == "mod" => {
                if let Some(Tok::Ident(m)) = toks.get(i + 1) {
                    let test = cfg_test || inline.last().is_some_and(|m| m.2);
                    match toks.get(i + 2) {
                        Some(Tok::Punct('{')) => {
                            depth += 1;
                            inline.push((m.clone(), depth, test));
                            i += 3;
                            cfg_test = false;
                            continue;
                        }
                        Some(Tok::Punct(';')) if test => {
                            let mut child = current();
                            child.push(m.clone());
                            test_files.push(child);
                        }
                        _ => {}
                    }
                }
            }
            Tok::Ident(kw) if kw == "use" => {
                // `pub use`, `pub(crate) use`, `pub(super) use`.
                pub_use = is(i.wrapping_sub(1), "pub")
                    || (toks.get(i.wrapping_sub(1)) == Some(&Tok::Punct(')')) && is(i.wrapping_sub(4), "pub"));
            }
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if inline.last().is_some_and(|m| m.1 == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Punct(';') => {
                cfg_test = false;
                pub_use = false;
            }
            Tok::Ident(first) if toks.get(i + 1) == Some(&Tok::Colons) && !(i > 0 && toks[i - 1] == Tok::Colons) => {
                let mut base = current();
                let mut j = i;
                let known = match first.as_str() {
                    "crate" => {
                        base.clear();
                        j += 2;
                        true
                    }
                    "self" => {
                        j += 2;
                        true
                    }
                    "super" => {
                        while is(j, "super") && toks.get(j + 1) == Some(&Tok::Colons) {
                            base.pop();
                            j += 2;
                        }
                        true
                    }
                    name => children && modules.contains_key(&[base.clone(), vec![name.to_owned()]].concat()),
                };
                if known {
                    let (found, next) = paths(toks, j);
                    let test = cfg_test || inline.iter().any(|m| m.2);
                    for path in found {
                        refs.push(Reference {
                            path: base.iter().cloned().chain(path).collect(),
                            test,
                            reexport: pub_use,
                        });
                    }
                    i = next.max(i + 1);
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    (refs, test_files)
}

/// The file a path leads to: the longest prefix that is a file's module, followed through the
/// re-exports (`pub use`) of the modules on the way, so that an import through a module's
/// facade counts for the file that defines the item.
fn resolve<'m>(
    path: &[String],
    modules: &'m BTreeMap<Vec<String>, String>,
    reexports: &BTreeMap<(Vec<String>, String), Vec<String>>,
    hops: usize,
) -> Option<&'m String> {
    let n = (0..=path.len()).rev().find(|n| modules.contains_key(&path[..*n]))?;
    if hops < 8 {
        if let Some(name) = path.get(n) {
            if let Some(target) = reexports.get(&(path[..n].to_vec(), name.clone())) {
                let next: Vec<String> = target.iter().chain(&path[n + 1..]).cloned().collect();
                if next != path {
                    return resolve(&next, modules, reexports, hops + 1);
                }
            }
        }
    }
    modules.get(&path[..n])
}

/// The import graph of the Rust crate whose root file is `src_root/crate_root`, over the files
/// under `src_root` except those under `skip` (another crate's files). With `children`, a
/// module's use of its own child modules counts too.
fn rust_graph(src_root: &Path, crate_root: &str, skip: &[&str], children: bool) -> Graph {
    let mut all = Vec::new();
    files(src_root, "rs", &mut all);
    all.retain(|f| !skip.iter().any(|s| rel(f).starts_with(s)));
    let modules: BTreeMap<Vec<String>, String> = all
        .iter()
        .map(|f| (module_of(src_root, f, crate_root), rel(f)))
        .collect();
    let mut test_files: Vec<Vec<String>> = Vec::new();
    let mut per_file = Vec::new();
    for file in &all {
        let here = module_of(src_root, file, crate_root);
        let toks = tokens(&code_only(&fs::read_to_string(file).unwrap()));
        // Re-exports are followed whether or not children count.
        let (refs, tests) = references(&toks, &here, &modules, true);
        test_files.extend(tests);
        per_file.push((here, rel(file), refs));
    }
    let mut reexports = BTreeMap::new();
    for (here, _, refs) in &per_file {
        for r in refs.iter().filter(|r| r.reexport && !r.test) {
            if let Some(last) = r.path.last().filter(|l| *l != "self") {
                reexports.insert((here.clone(), last.clone()), r.path.clone());
            }
        }
    }
    let mut graph = Graph::new();
    for (here, name, refs) in &per_file {
        let mut edges: BTreeMap<String, bool> = BTreeMap::new();
        let test_file = test_files.iter().any(|t| here.starts_with(t));
        for r in refs.iter().filter(|r| !r.reexport) {
            // A child's name counts only with `children` (crate::, self::, super:: always).
            let through_child = r.path.len() > here.len()
                && r.path.starts_with(here)
                && !children
                && modules.contains_key(&r.path[..here.len() + 1]);
            if through_child {
                continue;
            }
            if let Some(target) = resolve(&r.path, &modules, &reexports, 0).filter(|t| *t != name) {
                let e = edges.entry(target.clone()).or_insert(true);
                *e &= r.test || test_file;
            }
        }
        graph.insert(name.clone(), edges);
    }
    graph
}

/// The Python package's import graph: `from .x import …`, `from . import x`.
fn python_graph(dir: &Path) -> Graph {
    let mut all = Vec::new();
    files(dir, "py", &mut all);
    let names: BTreeSet<String> = all
        .iter()
        .map(|f| f.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut graph = Graph::new();
    for file in &all {
        let mut edges = BTreeMap::new();
        for line in fs::read_to_string(file).unwrap().lines() {
            let line = line.trim_start();
            let Some(rest) = line.strip_prefix("from .") else {
                continue;
            };
            let imported: Vec<String> = match rest.split_once(" import ") {
                Some(("", what)) => what
                    .split(',')
                    .map(|w| w.split_whitespace().next().unwrap_or("").to_owned())
                    .collect(),
                Some((module, _)) => vec![module.to_owned()],
                None => continue,
            };
            for m in imported.into_iter().filter(|m| names.contains(m)) {
                edges.insert(rel(&dir.join(format!("{m}.py"))), false);
            }
        }
        graph.insert(rel(file), edges);
    }
    graph
}

/// The page's JavaScript import graph: static imports and `import()`.
fn js_graph(dir: &Path) -> Graph {
    let mut all = Vec::new();
    files(dir, "js", &mut all);
    let known: BTreeSet<String> = all.iter().map(|f| rel(f)).collect();
    let mut graph = Graph::new();
    for file in &all {
        let text = fs::read_to_string(file).unwrap();
        let mut edges = BTreeMap::new();
        for (at, _) in text.match_indices("import") {
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                continue;
            }
            // The module specifier: the first string after `from`, `import` or `import(`.
            let rest = &text[at + "import".len()..];
            let statement_end = rest.find(';').unwrap_or(rest.len()).min(2000);
            let stmt = &rest[..statement_end];
            let spec = stmt
                .trim_start()
                .strip_prefix('(')
                .map(str::trim_start)
                .or_else(|| Some(stmt.trim_start()).filter(|s| s.starts_with(['\'', '"'])))
                .or_else(|| stmt.find(" from ").map(|p| stmt[p + 6..].trim_start()))
                .or_else(|| stmt.find("}from").map(|p| stmt[p + 5..].trim_start()));
            let Some(spec) = spec else { continue };
            let Some(quote) = spec.chars().next().filter(|c| *c == '\'' || *c == '"') else {
                continue;
            };
            let Some(end) = spec[1..].find(quote) else { continue };
            let target = &spec[1..1 + end];
            if !target.starts_with('.') {
                continue;
            }
            let mut path = file.parent().unwrap().to_path_buf();
            for part in target.split('/') {
                match part {
                    "." => {}
                    ".." => {
                        path.pop();
                    }
                    p => path.push(p),
                }
            }
            if path.starts_with(root()) && known.contains(&rel(&path)) {
                edges.insert(rel(&path), false);
            }
        }
        graph.insert(rel(file), edges);
    }
    graph
}

/// The circles of a graph: its strongly connected components with more than one file.
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    // Tarjan's algorithm, iteratively small enough to be recursive here.
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.graph.get(v).into_iter().flat_map(|e| e.keys()) {
            let w = w.as_str();
            if !s.graph.contains_key(w) {
                continue;
            }
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn layer_of(name: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| *l == name)
        .unwrap_or_else(|| panic!("no layer {name}"))
}

/// The layer of a core library file, from the longest listed prefix of its module path.
fn rust_layer(file: &str) -> Option<usize> {
    let module = module_of(&root().join("src"), &root().join(file), "lib.rs");
    (1..=module.len()).rev().find_map(|n| {
        let key = module[..n].join("::");
        RUST_LAYERS.iter().find(|(m, _)| *m == key).map(|(_, l)| layer_of(l))
    })
}

fn python_layer(file: &str) -> Option<usize> {
    let stem = Path::new(file).file_stem()?.to_str()?;
    PYTHON_LAYERS.iter().find(|(m, _)| *m == stem).map(|(_, l)| layer_of(l))
}

#[test]
fn layers() {
    let src = root().join("src");
    let core = rust_graph(&src, "lib.rs", &["src/bin/"], false);
    let extension = rust_graph(&root().join("python/src"), "lib.rs", &[], false);
    let python = python_graph(&root().join("python/deploy_gate"));
    let js = js_graph(&root().join("www"));

    let mut failures = Vec::new();
    for (what, graph) in [
        ("core", &core),
        ("extension", &extension),
        ("Python", &python),
        ("page", &js),
    ] {
        let imports: usize = graph.values().map(BTreeMap::len).sum();
        println!("{what}: {} files, {imports} imports between them", graph.len());
        for circle in circles(graph) {
            failures.push(format!("import circle: {}", circle.join(" ↔ ")));
        }
    }

    // Every core module and Python module has a layer.
    let mut upward = Vec::new();
    for (graph, layer) in [
        (&core, rust_layer as fn(&str) -> Option<usize>),
        (&python, python_layer),
    ] {
        for (from, edges) in graph {
            if from.ends_with("src/lib.rs") {
                continue;
            }
            let Some(lf) = layer(from) else {
                failures.push(format!("{from} has no layer in tests/it/layers.rs"));
                continue;
            };
            for (to, &test_only) in edges {
                let lt = layer(to).unwrap_or(lf);
                if lt > lf && !test_only {
                    upward.push(format!("{from} ({}) → {to} ({})", LAYERS[lf], LAYERS[lt]));
                }
            }
        }
    }
    // Shown, not failed: a folder's `mod.rs` that uses its own files (by their names, not
    // through `crate::`/`super::`) while they use what it defines.
    for circle in circles(&rust_graph(&src, "lib.rs", &["src/bin/"], true)) {
        if !circles(&core).contains(&circle) {
            println!("inside a folder, through its mod.rs: {}", circle.join(" ↔ "));
        }
    }
    println!("{} upward imports (at most {MAX_UPWARD}):", upward.len());
    for u in &upward {
        println!("  {u}");
    }
    if upward.len() > MAX_UPWARD {
        failures.push(format!(
            "{} upward imports, more than {MAX_UPWARD}:\n  {}",
            upward.len(),
            upward.join("\n  ")
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
