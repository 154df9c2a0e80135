//! The upstream deployment bridge's config change, sans-IO: `default_model`, `backend` and the
//! stages' `model` set in a YAML serving config, every other byte kept.
//!
//! Upstream (`deploy_trained_model` in AgentTune's `decide/model_deployment.py`) loads the
//! config with PyYAML's `safe_load` (`or {}`), sets `default_model = str(Path(model))` and
//! `backend`, applies `stage_model_map`, and writes the whole document again with `yaml.dump`
//! (comments, order and quoting lost). Here the same change is made on the text:
//!
//! 1. The config is parsed with [`saphyr-parser`](https://docs.rs/saphyr-parser), a YAML 1.2
//!    event parser (the maintained successor of `yaml-rust`/`yaml-rust2`, run against the
//!    whole yaml-test-suite) whose events carry start and end positions, anchors and tags.
//!    It was chosen over `yaml-rust2` (same parser, the older line; its markers have no end)
//!    and the lossless `yaml-edit` (a young hand-written CST parser, Apache-2.0 only, whose
//!    conformance is not measured against the suite): the edit needs only exact positions,
//!    and the check below needs a parser that reads YAML the way other readers do.
//! 2. The values to change are found in that tree; new values are spliced in as
//!    double-quoted scalars (`edit::quote`: `yes`, `1e3`, `~`, `#x` stay strings); missing
//!    keys are added in the mapping's own style (block: new lines at its indentation, with
//!    the file's line ending; flow: `, key: value` after its last entry).
//! 3. Where a replaced value carries an anchor that is used later (`default_model: &base old`
//!    and `judge_model: *base`), the first alias becomes the old value with the anchor, so
//!    the other keys keep their old values.
//! 4. The result is parsed again and compared, as a tree, with the old document changed the
//!    way upstream changes it (`check::expected`); any other difference is an error naming
//!    it, and the caller keeps the old config.
//!
//! Refused, the config untouched: what upstream's `safe_load` or its assignments fail on (a
//! top level that is a non-empty sequence or a scalar other than an empty one, several
//! documents, tags the safe loader does not know or on the wrong kind of node, mapping keys
//! that are collections, a named stage that is not a mapping, a stage `id` that is a
//! collection, a merge key on a scalar, duplicate anchor names), what YAML 1.1 readers such
//! as PyYAML and YAML 1.2 ones read differently (tabs between tokens, NEL/LS/PS, anchor names
//! beyond `[A-Za-z0-9_-]`, `?` in flow plain scalars, implicit keys over lines, empty keys, a
//! byte-order mark after the start, malformed directives; see `yaml11` and the checks in
//! `tree::parse`), and what is unsafe to edit (duplicate keys, which readers
//! resolve differently; merge keys where a key looked up is only merged in; a moved anchor on
//! a multi-line value; a block scalar that ends the file without a line break; nesting
//! deeper than 200).
//! An empty or comment-only config, or one whose top level is null or another empty value,
//! is deployed as upstream does (`safe_load` gives `None`, `or {}` makes a new mapping).

mod check;
mod doc;
mod edit;
mod resolve;
pub(crate) mod spanned;
mod tree;
mod yaml11;

use edit::{Editor, New};

/// Backends the upstream bridge accepts.
pub const BACKENDS: &[&str] = &["transformers", "vllm", "api"];

/// The config cannot be edited safely; it is left as it was. Lines and columns are 1-based
/// (columns in characters).
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum ConfigError {
    /// A backend the bridge does not know.
    #[error("backend must be one of transformers, vllm, api — not `{0}`")]
    Backend(String),
    /// The bytes are not UTF-8.
    #[error("line {line}, column {column}: the config is not UTF-8")]
    NotUtf8 {
        /// Where the first invalid byte is.
        line: usize,
        /// Its column.
        column: usize,
    },
    /// Not YAML.
    #[error("line {line}, column {column}: not valid YAML: {message}")]
    Syntax {
        /// Where the parser stopped.
        line: usize,
        /// Its column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// Several YAML documents in one file (upstream's `safe_load` refuses them).
    #[error("line {line}, column {column}: a second YAML document; the config must hold one")]
    MultiDocument {
        /// Where the second document starts.
        line: usize,
        /// Its column.
        column: usize,
    },
    /// The top level is not a mapping (upstream fails on a non-empty sequence or a scalar).
    #[error("line {line}, column {column}: the top level is {found}, not a mapping")]
    NotAMapping {
        /// What it is.
        found: &'static str,
        /// Where it starts.
        line: usize,
        /// Its column.
        column: usize,
    },
    /// A key appears twice in one mapping.
    #[error("line {line}, column {column}: duplicate key `{key}` (first at line {first_line}, column {first_column})")]
    DuplicateKey {
        /// The key.
        key: String,
        /// The second occurrence.
        line: usize,
        /// Its column.
        column: usize,
        /// The first occurrence.
        first_line: usize,
        /// Its column.
        first_column: usize,
    },
    /// A mapping key that is a sequence or a mapping (upstream's loader cannot hash it).
    #[error("line {line}, column {column}: a mapping key that is a {found}")]
    UnhashableKey {
        /// `sequence` or `mapping`.
        found: &'static str,
        /// Where the key starts.
        line: usize,
        /// Its column.
        column: usize,
    },
    /// A tag the safe loader has no constructor for (`!vault`, `!!python/object`, plain `=`).
    #[error("line {line}, column {column}: tag `{tag}` is not one a safe YAML loader reads")]
    UnsupportedTag {
        /// The resolved tag.
        tag: String,
        /// Where the node starts.
        line: usize,
        /// Its column.
        column: usize,
    },
    /// A stage named by the change exists but is not a mapping (upstream fails on it).
    #[error("line {line}, column {column}: stage `{stage}` is {found}, not a mapping; its `model` cannot be set")]
    StageNotMapping {
        /// The stage.
        stage: String,
        /// What it is.
        found: &'static str,
        /// Where its value starts.
        line: usize,
        /// Its column.
        column: usize,
    },
    /// Valid YAML this edit does not make safely.
    #[error("line {line}, column {column}: {what}")]
    Unsupported {
        /// What and why.
        what: String,
        /// Where.
        line: usize,
        /// Its column.
        column: usize,
    },
    /// The edited text, parsed again, differs from the old document beyond the keys changed.
    #[error("the edited config would differ from the old one beyond the keys changed: {0}")]
    Unverified(String),
    /// Larger than [`MAX_CONFIG_BYTES`]: not edited (its parse could take memory far beyond it).
    #[error("the config is {bytes} bytes, more than the {MAX_CONFIG_BYTES} bytes a serving config may have")]
    TooLarge {
        /// Its size.
        bytes: usize,
    },
}

/// The largest config edited: 1 MiB. Serving configs are a few kilobytes; a pathological one
/// (a 4 MB flow sequence of two million items) takes over a gigabyte to parse and check.
pub const MAX_CONFIG_BYTES: usize = 1 << 20;

/// What a deploy changes in the serving config (the upstream bridge's `deploy_trained_model`).
#[derive(Debug, Clone, Copy)]
pub struct Change<'a> {
    /// The trained model's path, as given; it is written normalised ([`normalize_model_path`]).
    pub model_path: &'a str,
    /// One of [`BACKENDS`].
    pub backend: &'a str,
    /// `(stage, model path)`: upstream's `stage_model_map`, a dict (a stage named twice: the
    /// last path, in the place of the first). The paths are written as given, as upstream
    /// does. With a non-empty `stages` sequence, `model` is set on each mapping item whose
    /// `id` is a named stage (others are left alone); otherwise `stages` is a mapping (made
    /// if missing or not a mapping) and each named stage gets `model` (made if missing).
    pub stage_models: &'a [(String, String)],
}

/// The path as upstream writes it: Python's `str(Path(p))` on POSIX (empty and `.`
/// components and trailing slashes dropped, `..` kept, exactly two leading slashes kept,
/// `""` → `.`).
pub fn normalize_model_path(path: &str) -> String {
    let root = if path.starts_with("//") && !path.starts_with("///") {
        "//"
    } else if path.starts_with('/') {
        "/"
    } else {
        ""
    };
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if root.is_empty() && parts.is_empty() {
        return ".".to_owned();
    }
    format!("{root}{}", parts.join("/"))
}

/// The backup's name for a config path or file name, as upstream names it (and its
/// `rollback_deployment` looks for it): Python's `str(Path(name).with_suffix(".yaml.backup"))`
/// — the last suffix replaced (`serving.yml` → `serving.yaml.backup`, `a.b.c` →
/// `a.b.yaml.backup`), appended when there is none (`gateway`, `.env`, `name.`). Python
/// refuses a path without a final component (`""`, `.`, `/`); for those this appends to the
/// normalised path.
pub fn backup_file_name(config_file_name: &str) -> String {
    let path = normalize_model_path(config_file_name);
    let (dir, name) = match path.rfind('/') {
        Some(i) => path.split_at(i + 1),
        None => ("", path.as_str()),
    };
    let stem = match name.rfind('.') {
        Some(i) if i > 0 && i + 1 < name.len() => &name[..i],
        _ => name,
    };
    format!("{dir}{stem}.yaml.backup")
}

/// The backup name deploy-gate used before it matched upstream (`NAME.backup`); `rollback`
/// also looks for it.
pub fn legacy_backup_file_name(config_file_name: &str) -> String {
    format!("{config_file_name}.backup")
}

/// A list of pairs with Python dict semantics: each key once, in the place it first had, with
/// the last value.
fn as_dict(pairs: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in pairs {
        match out.iter_mut().find(|(seen, _)| seen == k) {
            Some(entry) => entry.1 = v.clone(),
            None => out.push((k.clone(), v.clone())),
        }
    }
    out
}

/// Assignments grouped by the mapping they go into (a mapping reached twice through aliases
/// is one mapping); a key set twice keeps the last value.
#[derive(Default)]
struct Plan(Vec<(usize, Vec<(String, New)>)>);

impl Plan {
    fn set(&mut self, map: usize, key: &str, value: New) {
        let group = match self.0.iter().position(|(m, _)| *m == map) {
            Some(i) => &mut self.0[i].1,
            None => {
                self.0.push((map, Vec::new()));
                &mut self.0.last_mut().expect("just pushed").1
            }
        };
        match group.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value,
            None => group.push((key.to_owned(), value)),
        }
    }
}

fn stages_map(stages: &[(String, String)]) -> New {
    New::Map(
        stages
            .iter()
            .map(|(s, p)| (s.clone(), New::Map(vec![("model".to_owned(), New::Str(p.clone()))])))
            .collect(),
    )
}

/// A collection the loader builds as a plain list or dict (no tag, `!`, `!!seq`, `!!map`).
fn plain_collection(tag: Option<&str>) -> bool {
    matches!(
        tag,
        None | Some("!" | "tag:yaml.org,2002:seq" | "tag:yaml.org,2002:map")
    )
}

fn unsupported(doc: &doc::Doc, id: usize, what: String) -> ConfigError {
    let node = &doc.nodes[id];
    ConfigError::Unsupported {
        what,
        line: node.line,
        column: node.column,
    }
}

/// The bridge's change applied to a config's bytes: `default_model` = the normalised model
/// path, `backend` = the backend, `model` on each named stage. The result is checked by
/// parsing it again (see the module docs); on any error the config must be kept.
pub fn deploy_config(config: &[u8], change: &Change<'_>) -> Result<Vec<u8>, ConfigError> {
    if config.len() > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge { bytes: config.len() });
    }
    if !BACKENDS.contains(&change.backend) {
        return Err(ConfigError::Backend(change.backend.to_owned()));
    }
    let text = std::str::from_utf8(config).map_err(|e| {
        let valid = std::str::from_utf8(&config[..e.valid_up_to()]).expect("valid up to here");
        let (line, column) = doc::line_column(valid, valid.len());
        ConfigError::NotUtf8 { line, column }
    })?;
    let doc = tree::parse(text)?;
    let path = normalize_model_path(change.model_path);
    let stages = as_dict(change.stage_models);
    let top = vec![
        ("default_model".to_owned(), New::Str(path.clone())),
        ("backend".to_owned(), New::Str(change.backend.to_owned())),
    ];
    let mut editor = Editor::new(text, &doc);
    let mut root_replaced = true;
    match doc.root {
        None => {
            let mut entries = top;
            if !stages.is_empty() {
                entries.push(("stages".to_owned(), stages_map(&stages)));
            }
            editor.add_document(&entries);
        }
        Some(root) => {
            let node = &doc.nodes[root];
            match &node.kind {
                doc::Kind::Map(_) => {
                    if !plain_collection(node.tag.as_deref()) {
                        return Err(unsupported(
                            &doc,
                            root,
                            format!(
                                "the top-level mapping is tagged `{}`",
                                node.tag.clone().unwrap_or_default()
                            ),
                        ));
                    }
                    root_replaced = false;
                    let mut plan = Plan::default();
                    for (k, v) in top {
                        plan.set(root, &k, v);
                    }
                    if !stages.is_empty() {
                        plan_stages(&doc, root, &stages, &mut plan)?;
                    }
                    for (map, entries) in &plan.0 {
                        if doc.is_merged(*map) {
                            return Err(unsupported(
                                &doc,
                                *map,
                                "this mapping, which the change edits, is merged into another one with `<<`; the edit would show there too, where upstream's does not".into(),
                            ));
                        }
                        editor.assign(*map, entries)?;
                    }
                }
                doc::Kind::Seq(items) if items.is_empty() && plain_collection(node.tag.as_deref()) => {
                    let mut entries = top;
                    if !stages.is_empty() {
                        entries.push(("stages".to_owned(), stages_map(&stages)));
                    }
                    editor.replace_root(root, &entries)?;
                }
                doc::Kind::Scalar { .. } if doc.is_falsy(root) => {
                    let mut entries = top;
                    if !stages.is_empty() {
                        entries.push(("stages".to_owned(), stages_map(&stages)));
                    }
                    editor.replace_root(root, &entries)?;
                }
                _ => {
                    return Err(ConfigError::NotAMapping {
                        found: doc.describe(root),
                        line: node.line,
                        column: node.column,
                    });
                }
            }
        }
    }
    let out = editor.finish()?;
    let reparsed =
        tree::parse(&out).map_err(|e| ConfigError::Unverified(format!("the edited config does not load: {e}")))?;
    let (old, new) = (check::load(&doc), check::load(&reparsed));
    let want = check::expected(old.root.clone(), root_replaced, &path, change.backend, &stages);
    let got = new
        .root
        .clone()
        .ok_or_else(|| ConfigError::Unverified("the edited config is empty".into()))?;
    let compared = check::compare(&want, &got).map_err(|d| ConfigError::Unverified(d.to_string()));
    // The values made for the comparison go before the loaded documents empty themselves.
    drop((want, got));
    compared?;
    Ok(out.into_bytes())
}

/// Plans upstream's `stage_model_map` over the top-level mapping `root`.
fn plan_stages(doc: &doc::Doc, root: usize, stages: &[(String, String)], plan: &mut Plan) -> Result<(), ConfigError> {
    let Some((_, value)) = doc.get(root, "stages") else {
        if doc.has_merge(root) {
            return Err(unsupported(
                doc,
                root,
                "`stages` would come from a merge key (`<<`); set it explicitly".into(),
            ));
        }
        plan.set(root, "stages", stages_map(stages));
        return Ok(());
    };
    let target = doc.resolve(value);
    let node = &doc.nodes[target];
    if !plain_collection(node.tag.as_deref()) && !matches!(node.kind, doc::Kind::Scalar { .. }) {
        return Err(unsupported(
            doc,
            target,
            format!("`stages` is tagged `{}`", node.tag.clone().unwrap_or_default()),
        ));
    }
    match &node.kind {
        doc::Kind::Seq(items) if !items.is_empty() => {
            for &item in items {
                let item = doc.resolve(item);
                let item_node = &doc.nodes[item];
                if !matches!(item_node.kind, doc::Kind::Map(_)) || !plain_collection(item_node.tag.as_deref()) {
                    continue;
                }
                let Some((_, id)) = doc.get(item, "id") else {
                    if doc.has_merge(item) {
                        return Err(unsupported(
                            doc,
                            item,
                            "this stage's `id` would come from a merge key (`<<`)".into(),
                        ));
                    }
                    continue;
                };
                let Some(key) = doc.key_id(id) else {
                    let id_node = &doc.nodes[doc.resolve(id)];
                    return Err(ConfigError::UnhashableKey {
                        found: if matches!(id_node.kind, doc::Kind::Map(_)) {
                            "mapping"
                        } else {
                            "sequence"
                        },
                        line: doc.nodes[id].line,
                        column: doc.nodes[id].column,
                    });
                };
                if let Some((_, path)) = key
                    .strip_prefix("s:")
                    .and_then(|name| stages.iter().find(|(s, _)| s == name))
                {
                    plan.set(item, "model", New::Str(path.clone()));
                }
            }
        }
        doc::Kind::Map(_) => {
            for (stage, path) in stages {
                match doc.get(target, stage) {
                    Some((_, v)) => {
                        let stage_node = doc.resolve(v);
                        if !matches!(doc.nodes[stage_node].kind, doc::Kind::Map(_)) {
                            return Err(ConfigError::StageNotMapping {
                                stage: stage.clone(),
                                found: doc.describe(stage_node),
                                line: doc.nodes[v].line,
                                column: doc.nodes[v].column,
                            });
                        }
                        if !plain_collection(doc.nodes[stage_node].tag.as_deref()) {
                            return Err(unsupported(
                                doc,
                                stage_node,
                                format!("stage `{stage}` is a tagged mapping"),
                            ));
                        }
                        plan.set(stage_node, "model", New::Str(path.clone()));
                    }
                    None => {
                        if doc.has_merge(target) {
                            return Err(unsupported(
                                doc,
                                target,
                                format!("stage `{stage}` would come from a merge key (`<<`); set it explicitly"),
                            ));
                        }
                        plan.set(
                            target,
                            stage,
                            New::Map(vec![("model".to_owned(), New::Str(path.clone()))]),
                        );
                    }
                }
            }
        }
        // Missing, null, an empty sequence, a scalar: upstream makes `stages` a new mapping.
        _ => plan.set(root, "stages", stages_map(stages)),
    }
    Ok(())
}

#[cfg(test)]
mod tests;
