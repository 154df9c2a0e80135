//! The config's YAML as a tree of nodes with byte positions (what `tree::parse` builds and the
//! checks, the resolver and the editor read), and lines/columns of byte offsets.

use super::resolve::scalar_key;

/// A node of the document.
#[derive(Debug)]
pub(crate) struct Node {
    pub kind: Kind,
    /// The first byte of the node, its properties (anchor, tag) and block-scalar header included.
    pub start: usize,
    /// One past its last byte (a block collection ends with its last entry).
    pub end: usize,
    /// 1-based line and column of `start`.
    pub line: usize,
    pub column: usize,
    /// The parser's anchor id (0: none).
    pub anchor: usize,
    /// The resolved tag (`tag:yaml.org,2002:str`, `!local`; `!` for the non-specific tag).
    pub tag: Option<String>,
    /// A flow collection (`[…]`, `{…}`).
    pub flow: bool,
    /// A block mapping: the indentation of its keys, in spaces.
    pub indent: usize,
}

#[derive(Debug)]
pub(crate) enum Kind {
    Scalar {
        value: String,
        plain: bool,
    },
    Seq(Vec<usize>),
    Map(Vec<(usize, usize)>),
    /// An alias; the node it refers to.
    Alias(usize),
}

/// A parsed config: one document at most.
#[derive(Debug)]
pub(crate) struct Doc {
    pub nodes: Vec<Node>,
    /// The document's top node; `None` for a stream without a document (empty, comments only).
    pub root: Option<usize>,
}

impl Doc {
    /// The node an alias refers to (any other node: itself).
    pub fn resolve(&self, id: usize) -> usize {
        match self.nodes[id].kind {
            Kind::Alias(target) => target,
            _ => id,
        }
    }

    /// How the upstream loader identifies a scalar as a mapping key (Python's equality: `1`,
    /// `1.0`, `0x1` and `true` are one key); `None` for a collection.
    pub fn key_id(&self, id: usize) -> Option<String> {
        let node = &self.nodes[self.resolve(id)];
        match &node.kind {
            Kind::Scalar { value, plain } => Some(scalar_key(value, *plain, node.tag.as_deref())),
            _ => None,
        }
    }

    /// The value of the entry whose key is the string `key`, in mapping `map` (resolved).
    pub fn get(&self, map: usize, key: &str) -> Option<(usize, usize)> {
        let want = format!("s:{key}");
        match &self.nodes[self.resolve(map)].kind {
            Kind::Map(entries) => entries
                .iter()
                .copied()
                .find(|&(k, _)| self.key_id(k).as_deref() == Some(want.as_str())),
            _ => None,
        }
    }

    /// Whether mapping `map` holds a merge key (`<<`).
    pub fn has_merge(&self, map: usize) -> bool {
        match &self.nodes[self.resolve(map)].kind {
            Kind::Map(entries) => entries.iter().any(|&(k, _)| self.key_id(k).as_deref() == Some("merge")),
            _ => false,
        }
    }

    /// What a node is, for messages.
    pub fn describe(&self, id: usize) -> &'static str {
        let node = &self.nodes[self.resolve(id)];
        match &node.kind {
            Kind::Seq(items) if items.is_empty() => "an empty sequence",
            Kind::Seq(_) => "a sequence",
            Kind::Map(_) => "a mapping",
            Kind::Scalar { value, plain } => match scalar_key(value, *plain, node.tag.as_deref()).as_str() {
                "null" => "null",
                _ => "a scalar",
            },
            Kind::Alias(_) => unreachable!("resolved"),
        }
    }

    /// Python's truth value of the node as the loader builds it is false (`None`, `0`, `0.0`,
    /// `False`, `""`, `[]`, `{}`).
    pub fn is_falsy(&self, id: usize) -> bool {
        let node = &self.nodes[self.resolve(id)];
        match &node.kind {
            Kind::Seq(items) => items.is_empty(),
            Kind::Map(entries) => entries.is_empty(),
            Kind::Scalar { value, plain } => {
                matches!(
                    scalar_key(value, *plain, node.tag.as_deref()).as_str(),
                    "null" | "n:0" | "s:"
                )
            }
            Kind::Alias(_) => unreachable!("resolved"),
        }
    }
}

/// Lines and columns of byte offsets, in logarithmic time (for every node of a large file).
pub(crate) struct Locator<'a> {
    text: &'a str,
    /// Byte offset of each line's start.
    line_starts: Vec<usize>,
    /// Byte offset of each character (and the end).
    offsets: &'a [usize],
}

impl<'a> Locator<'a> {
    pub(crate) fn new(text: &'a str, offsets: &'a [usize]) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Locator {
            text,
            line_starts,
            offsets,
        }
    }

    /// As [`line_column`].
    pub(crate) fn at(&self, at: usize) -> (usize, usize) {
        let line = self.line_starts.partition_point(|&s| s <= at);
        let start = self.line_starts[line - 1];
        let chars = |b: usize| self.offsets.partition_point(|&o| o < b);
        let bom = usize::from(start == 0 && at > 0 && self.text.starts_with('\u{feff}'));
        (line, chars(at) - chars(start) - bom + 1)
    }
}

/// 1-based line and column (in characters) of byte `at`.
pub(crate) fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].trim_start_matches('\u{feff}').chars().count() + 1;
    (line, column)
}

impl Doc {
    /// Whether mapping `map` is merged into another one (`<<: *it` or `<<: [*it, …]`): the
    /// loader copies its entries there when loading, so a change to it must not show there.
    pub fn is_merged(&self, map: usize) -> bool {
        self.nodes.iter().any(|node| {
            let Kind::Map(entries) = &node.kind else { return false };
            entries.iter().any(|&(k, v)| {
                self.key_id(k).as_deref() == Some("merge")
                    && match &self.nodes[self.resolve(v)].kind {
                        Kind::Map(_) => self.resolve(v) == map,
                        Kind::Seq(items) => items.iter().any(|&i| self.resolve(i) == map),
                        _ => false,
                    }
            })
        })
    }
}
