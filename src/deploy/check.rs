//! The re-parse check: the document as the upstream bridge would change it (its Python
//! semantics run over the old tree: assignment replaces a value, containers reached through
//! aliases are shared and change everywhere), compared with the edited text parsed again.

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;

use super::doc::{Doc, Kind};
use super::resolve::scalar_key;

/// A loaded value: scalars compare by style class (plain or not), tag and text; collections
/// are shared where the YAML aliases them, as the loader shares them.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    Scalar(Rc<Scalar>),
    Seq(Rc<RefCell<Collection<Value>>>),
    Map(Rc<RefCell<Collection<(Value, Value)>>>),
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Scalar {
    pub plain: bool,
    pub tag: Option<String>,
    pub value: String,
}

#[derive(Debug)]
pub(crate) struct Collection<T> {
    pub tag: Option<String>,
    pub items: Vec<T>,
}

impl Scalar {
    fn key(&self) -> String {
        scalar_key(&self.value, self.plain, self.tag.as_deref())
    }
}

impl Value {
    /// A string written double-quoted.
    pub fn quoted(s: &str) -> Value {
        Value::Scalar(Rc::new(Scalar {
            plain: false,
            tag: None,
            value: s.to_owned(),
        }))
    }

    /// A key as [`super::edit::key_text`] writes it.
    pub fn key(s: &str) -> Value {
        Value::Scalar(Rc::new(Scalar {
            plain: super::edit::key_is_plain(s),
            tag: None,
            value: s.to_owned(),
        }))
    }

    pub fn new_map() -> Value {
        Value::Map(Rc::new(RefCell::new(Collection {
            tag: None,
            items: Vec::new(),
        })))
    }

    fn key_id(&self) -> Option<String> {
        match self {
            Value::Scalar(s) => Some(s.key()),
            _ => None,
        }
    }
}

/// A loaded document. A collection that holds an alias of itself (`&a [*a]`) is a cycle of
/// `Rc`s, so dropping this empties every collection it loaded: nothing leaks.
pub(crate) struct Loaded {
    /// The document's root value.
    pub(crate) root: Option<Value>,
    nodes: Vec<Option<Value>>,
}

impl Drop for Loaded {
    fn drop(&mut self) {
        for value in self.nodes.iter().flatten() {
            match value {
                Value::Seq(c) => c.borrow_mut().items.clear(),
                Value::Map(c) => c.borrow_mut().items.clear(),
                Value::Scalar(_) => {}
            }
        }
    }
}

/// The loaded value of each node of `doc` (aliases give the very value of their anchor).
pub(crate) fn load(doc: &Doc) -> Loaded {
    let mut memo: Vec<Option<Value>> = vec![None; doc.nodes.len()];
    let root = doc.root.map(|root| load_node(doc, root, &mut memo));
    Loaded { root, nodes: memo }
}

fn load_node(doc: &Doc, id: usize, memo: &mut Vec<Option<Value>>) -> Value {
    let id = doc.resolve(id);
    if let Some(v) = &memo[id] {
        return v.clone();
    }
    let node = &doc.nodes[id];
    match &node.kind {
        Kind::Scalar { value, plain } => {
            let v = Value::Scalar(Rc::new(Scalar {
                plain: *plain,
                tag: node.tag.clone(),
                value: value.clone(),
            }));
            memo[id] = Some(v.clone());
            v
        }
        Kind::Seq(items) => {
            let rc = Rc::new(RefCell::new(Collection {
                tag: node.tag.clone(),
                items: Vec::new(),
            }));
            memo[id] = Some(Value::Seq(rc.clone()));
            let loaded: Vec<Value> = items.iter().map(|&i| load_node(doc, i, memo)).collect();
            rc.borrow_mut().items = loaded;
            Value::Seq(rc)
        }
        Kind::Map(entries) => {
            let rc = Rc::new(RefCell::new(Collection {
                tag: node.tag.clone(),
                items: Vec::new(),
            }));
            memo[id] = Some(Value::Map(rc.clone()));
            let loaded: Vec<(Value, Value)> = entries
                .iter()
                .map(|&(k, v)| (load_node(doc, k, memo), load_node(doc, v, memo)))
                .collect();
            rc.borrow_mut().items = loaded;
            Value::Map(rc)
        }
        Kind::Alias(_) => unreachable!("resolved"),
    }
}

fn get(map: &Value, key: &str) -> Option<Value> {
    let Value::Map(m) = map else { return None };
    let want = format!("s:{key}");
    let found = m
        .borrow()
        .items
        .iter()
        .find(|(k, _)| k.key_id().as_deref() == Some(&want))
        .map(|(_, v)| v.clone());
    found
}

/// Python's `d[key] = value`: an existing key keeps its place (and its spelling).
fn set(map: &Value, key: &str, value: Value) {
    let Value::Map(m) = map else { return };
    let want = format!("s:{key}");
    let mut m = m.borrow_mut();
    if let Some(entry) = m.items.iter_mut().find(|(k, _)| k.key_id().as_deref() == Some(&want)) {
        entry.1 = value;
    } else {
        m.items.push((Value::key(key), value));
    }
}

/// The upstream bridge's change over the loaded config (`yaml.safe_load(f) or {}`, then the
/// assignments of `deploy_trained_model`). The caller has refused what upstream fails on.
pub(crate) fn expected(
    root: Option<Value>,
    root_falsy: bool,
    default_model: &str,
    backend: &str,
    stages: &[(String, String)],
) -> Value {
    let config = match root {
        Some(v @ Value::Map(_)) if !root_falsy => v,
        _ => Value::new_map(),
    };
    set(&config, "default_model", Value::quoted(default_model));
    set(&config, "backend", Value::quoted(backend));
    if stages.is_empty() {
        return config;
    }
    match get(&config, "stages") {
        Some(Value::Seq(list)) if !list.borrow().items.is_empty() => {
            let items = list.borrow().items.clone();
            for item in items {
                if let Some(Value::Scalar(id)) = get(&item, "id") {
                    if let Some(name) = id.key().strip_prefix("s:") {
                        if let Some((_, path)) = stages.iter().find(|(s, _)| s == name) {
                            set(&item, "model", Value::quoted(path));
                        }
                    }
                }
            }
        }
        found => {
            let map = match found {
                Some(m @ Value::Map(_)) => m,
                _ => {
                    let m = Value::new_map();
                    set(&config, "stages", m.clone());
                    m
                }
            };
            for (stage, path) in stages {
                let stage_map = match get(&map, stage) {
                    Some(m) => m,
                    None => {
                        let m = Value::new_map();
                        set(&map, stage, m.clone());
                        m
                    }
                };
                set(&stage_map, "model", Value::quoted(path));
            }
        }
    }
    config
}

fn ptr(v: &Value) -> usize {
    match v {
        Value::Scalar(s) => Rc::as_ptr(s) as usize,
        Value::Seq(s) => Rc::as_ptr(s) as *const u8 as usize,
        Value::Map(m) => Rc::as_ptr(m) as *const u8 as usize,
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::Scalar(s) => {
            let mut text = format!("{:?}", s.value);
            if text.chars().count() > 60 {
                text = text.chars().take(57).chain("...".chars()).collect();
            }
            match &s.tag {
                Some(t) => format!("{t} {text}"),
                None if s.plain => format!("{text} (plain)"),
                None => text,
            }
        }
        Value::Seq(s) => format!("a sequence of {}", s.borrow().items.len()),
        Value::Map(m) => format!("a mapping of {}", m.borrow().items.len()),
    }
}

/// Where the edited config first differs from the one expected, and how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: expected {expected}, found {found}")]
pub(crate) struct Difference {
    /// The key path (`the top level`, `` `a`.`b`[2] ``, a key as `… (the key)`).
    pub path: String,
    /// The value expected there, described.
    pub expected: String,
    /// The value found, described.
    pub found: String,
}

/// The first difference between `want` and `got`, named by its key path.
pub(crate) fn compare(want: &Value, got: &Value) -> Result<(), Difference> {
    let mut assumed = HashSet::new();
    eq(want, got, "the top level", &mut assumed)
}

fn eq(want: &Value, got: &Value, path: &str, assumed: &mut HashSet<(usize, usize)>) -> Result<(), Difference> {
    if !assumed.insert((ptr(want), ptr(got))) {
        return Ok(());
    }
    let differ = || {
        Err(Difference {
            path: path.to_owned(),
            expected: show(want),
            found: show(got),
        })
    };
    match (want, got) {
        (Value::Scalar(a), Value::Scalar(b)) => {
            if a != b {
                return differ();
            }
        }
        (Value::Seq(a), Value::Seq(b)) => {
            let (a, b) = (a.borrow(), b.borrow());
            if a.tag != b.tag || a.items.len() != b.items.len() {
                return differ();
            }
            for (i, (x, y)) in a.items.iter().zip(&b.items).enumerate() {
                eq(x, y, &format!("{path}[{i}]"), assumed)?;
            }
        }
        (Value::Map(a), Value::Map(b)) => {
            let (a, b) = (a.borrow(), b.borrow());
            if a.tag != b.tag || a.items.len() != b.items.len() {
                return differ();
            }
            for ((ka, va), (kb, vb)) in a.items.iter().zip(&b.items) {
                let name = match ka {
                    Value::Scalar(s) => format!("`{}`", s.value),
                    other => show(other),
                };
                let here = if path == "the top level" {
                    name
                } else {
                    format!("{path}.{name}")
                };
                eq(ka, kb, &format!("{here} (the key)"), assumed)?;
                eq(va, vb, &here, assumed)?;
            }
        }
        _ => return differ(),
    }
    Ok(())
}
