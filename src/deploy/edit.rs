//! The text edit: new scalars spliced in at the parser's positions, missing keys added in the
//! mapping's own style, anchors of replaced values moved to their first alias. Every other
//! byte of the config stays.

use super::doc::{Doc, Kind};
use super::resolve::resolve_plain;
use super::ConfigError;

/// A value to write.
#[derive(Debug, Clone)]
pub(crate) enum New {
    Str(String),
    /// A new mapping (key, value) in order.
    Map(Vec<(String, New)>),
}

/// One splice: bytes `start..end` become `text`.
#[derive(Debug)]
struct Splice {
    start: usize,
    end: usize,
    text: String,
    /// Among splices at one place: an empty value filled first, then insertions (into deeper
    /// mappings before shallower ones), then replacements.
    rank: usize,
}

const REPLACE: usize = 1 << 20;

/// A string as a YAML double-quoted scalar that reads back as the same string in YAML 1.1
/// and 1.2: `"`, `\`, and every character that is not printable in both (controls, DEL, C1,
/// NEL, the line and paragraph separators, the BOM, non-characters) escaped.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            ' '..='~' => out.push(c),
            '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fefe}' | '\u{ff00}'..='\u{fffd}' | '\u{10000}'..='\u{10ffff}'
                if !matches!(c, '\u{2028}' | '\u{2029}') =>
            {
                out.push(c)
            }
            c if (c as u32) <= 0xff => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Whether a key is written plain: a simple word that every YAML 1.1 and 1.2 reader takes as
/// that string.
pub(crate) fn key_is_plain(key: &str) -> bool {
    let mut chars = key.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && resolve_plain(key) == "str"
        && !matches!(key, "y" | "Y" | "n" | "N" | "true" | "false" | "null")
}

pub(crate) fn key_text(key: &str) -> String {
    if key_is_plain(key) {
        key.to_owned()
    } else {
        quote(key)
    }
}

fn inline(value: &New) -> String {
    match value {
        New::Str(s) => quote(s),
        New::Map(entries) => format!("{{{}}}", inline_entries(entries)),
    }
}

fn inline_entries(entries: &[(String, New)]) -> String {
    entries
        .iter()
        .map(|(k, v)| format!("{}: {}", key_text(k), inline(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn block(entries: &[(String, New)], indent: usize, nl: &str, out: &mut String) {
    for (k, v) in entries {
        out.push_str(&" ".repeat(indent));
        out.push_str(&key_text(k));
        out.push(':');
        match v {
            New::Str(s) => {
                out.push(' ');
                out.push_str(&quote(s));
                out.push_str(nl);
            }
            New::Map(inner) if inner.is_empty() => {
                out.push_str(" {}");
                out.push_str(nl);
            }
            New::Map(inner) => {
                out.push_str(nl);
                block(inner, indent + 2, nl, out);
            }
        }
    }
}

/// The edit being planned over one parsed config.
pub(crate) struct Editor<'a> {
    text: &'a str,
    doc: &'a Doc,
    nl: &'static str,
    splices: Vec<Splice>,
    /// Byte ranges of replaced nodes (their anchors must move).
    replaced: Vec<(usize, usize)>,
}

impl<'a> Editor<'a> {
    pub fn new(text: &'a str, doc: &'a Doc) -> Self {
        let nl = match text.find('\n') {
            Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
            _ => "\n",
        };
        Editor {
            text,
            doc,
            nl,
            splices: Vec::new(),
            replaced: Vec::new(),
        }
    }

    fn position(&self, at: usize) -> (usize, usize) {
        super::doc::line_column(self.text, at)
    }

    /// Sets `key` in mapping `map` (resolved through an alias) to each value: an existing
    /// entry's value is replaced, missing keys are added in one place, in order.
    pub fn assign(&mut self, map: usize, assignments: &[(String, New)]) -> Result<(), ConfigError> {
        let map = self.doc.resolve(map);
        let mut missing = Vec::new();
        for (key, value) in assignments {
            match self.doc.get(map, key) {
                Some((k, v)) => self.replace_value(Some(k), v, value)?,
                None => missing.push((key.clone(), value.clone())),
            }
        }
        if !missing.is_empty() {
            self.add_entries(map, &missing)?;
        }
        Ok(())
    }

    /// Replaces node `id` (the value of key `key`, if a mapping value) with `value`.
    pub fn replace_value(&mut self, key: Option<usize>, id: usize, value: &New) -> Result<(), ConfigError> {
        let node = &self.doc.nodes[id];
        let text = inline(value);
        let b = self.text.as_bytes();
        if node.start == node.end {
            // An empty value: after the key's `:` if there is one, else `: value` after the key.
            let mut q = node.start;
            while q < b.len() && matches!(b[q], b' ' | b'\t') {
                q += 1;
            }
            if q < b.len() && b[q] == b':' {
                self.splices.push(Splice {
                    start: q + 1,
                    end: q + 1,
                    text: format!(" {text}"),
                    rank: 0,
                });
            } else if key.is_some() {
                self.splices.push(Splice {
                    start: node.start,
                    end: node.start,
                    text: format!(": {text}"),
                    rank: 0,
                });
            } else {
                self.splices.push(Splice {
                    start: node.start,
                    end: node.start,
                    text,
                    rank: REPLACE,
                });
            }
            return Ok(());
        }
        let mut start = node.start;
        // Line breaks and blanks that end a block scalar stay (they separate lines).
        let mut end = node.end;
        while end > start && matches!(b[end - 1], b'\n' | b'\r' | b' ' | b'\t') {
            end -= 1;
        }
        if let (Some(k), false) = (key, node.flow) {
            if matches!(node.kind, Kind::Seq(_) | Kind::Map(_)) {
                // A block collection: from just after the key's `:`, so that a sequence at the
                // key's own indentation goes too.
                let key_node = &self.doc.nodes[k];
                let mut q = key_node.end;
                while q < b.len() && matches!(b[q], b' ' | b'\t') {
                    q += 1;
                }
                if q < b.len() && b[q] == b':' && node.column <= key_node.column {
                    start = q + 1;
                }
                let sep = if start == q + 1 { " " } else { "" };
                self.replaced.push((node.start, node.end));
                self.splices.push(Splice {
                    start,
                    end,
                    text: format!("{sep}{text}"),
                    rank: REPLACE,
                });
                return Ok(());
            }
        }
        self.replaced.push((node.start, node.end));
        self.splices.push(Splice {
            start,
            end,
            text,
            rank: REPLACE,
        });
        Ok(())
    }

    /// Adds entries to mapping `map`: in a flow mapping after its last entry, in a block
    /// mapping on new lines after its last entry at its indentation.
    fn add_entries(&mut self, map: usize, entries: &[(String, New)]) -> Result<(), ConfigError> {
        let node = &self.doc.nodes[map];
        let Kind::Map(existing) = &node.kind else {
            unreachable!("a mapping")
        };
        let b = self.text.as_bytes();
        let last_end = existing
            .last()
            .map(|&(k, v)| self.doc.nodes[k].end.max(self.doc.nodes[v].end));
        if node.flow {
            let text = inline_entries(entries);
            // After an empty last value, past its `:` (`{a: }`). A `:` right before the `,`
            // (`{a:, b: 1}`) is YAML but refused by libyaml-based readers, so a blank goes
            // between them.
            let last_end = last_end.map(|at| {
                let mut q = at;
                while q < b.len() && matches!(b[q], b' ' | b'\t') {
                    q += 1;
                }
                if q < b.len() && b[q] == b':' {
                    q += 1;
                    let after_colon = q;
                    while q < b.len() && matches!(b[q], b' ' | b'\t') {
                        q += 1;
                    }
                    (q, q == after_colon)
                } else {
                    (at, false)
                }
            });
            match last_end {
                Some((at, tight)) => self.splices.push(Splice {
                    start: at,
                    end: at,
                    text: format!("{}, {text}", if tight { " " } else { "" }),
                    rank: 1,
                }),
                None => {
                    let open = self.text[node.start..]
                        .find('{')
                        .map(|i| node.start + i + 1)
                        .ok_or_else(|| {
                            let (line, column) = self.position(node.start);
                            ConfigError::Unsupported {
                                what: "a flow mapping without `{`".into(),
                                line,
                                column,
                            }
                        })?;
                    self.splices.push(Splice {
                        start: open,
                        end: open,
                        text,
                        rank: 1,
                    });
                }
            }
            return Ok(());
        }
        let indent = node.indent;
        let Some(mut at) = last_end else {
            return Err(ConfigError::Unsupported {
                what: "an empty block mapping".into(),
                line: node.line,
                column: node.column,
            });
        };
        if let Some(&(_, v)) = existing.last() {
            let value = &self.doc.nodes[v];
            if value.start == value.end {
                // An empty last value: after its `:`, which may be on the next line (`? key`).
                let rest = &self.text[at..];
                let skipped = rest.len() - rest.trim_start().len();
                if rest[skipped..].starts_with(':') {
                    at += skipped + 1;
                }
            }
        }
        let mut text = String::new();
        let insert_at = if at > 0 && b[at - 1] == b'\n' {
            at
        } else {
            match self.text[at..].find('\n') {
                Some(i) => at + i + 1,
                None => {
                    text.push_str(self.nl);
                    self.text.len()
                }
            }
        };
        block(entries, indent, self.nl, &mut text);
        self.splices.push(Splice {
            start: insert_at,
            end: insert_at,
            text,
            rank: REPLACE - 1 - indent.min(REPLACE - 2),
        });
        Ok(())
    }

    /// A config without a document (empty, comments only): the entries as a block mapping
    /// at the end.
    pub fn add_document(&mut self, entries: &[(String, New)]) {
        let mut text = String::new();
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            text.push_str(self.nl);
        }
        block(entries, 0, self.nl, &mut text);
        self.splices.push(Splice {
            start: self.text.len(),
            end: self.text.len(),
            text,
            rank: 0,
        });
    }

    /// Replaces the top-level node (null or another empty value) with a mapping.
    pub fn replace_root(&mut self, root: usize, entries: &[(String, New)]) -> Result<(), ConfigError> {
        let node = &self.doc.nodes[root];
        if node.start == node.end {
            let mut text = String::new();
            if node.start > 0 && self.text.as_bytes()[node.start - 1] != b'\n' {
                text.push_str(self.nl);
            }
            block(entries, 0, self.nl, &mut text);
            self.splices.push(Splice {
                start: node.start,
                end: node.start,
                text,
                rank: 0,
            });
            Ok(())
        } else {
            self.replace_value(None, root, &New::Map(entries.to_vec()))
        }
    }

    /// Moves every anchor defined inside a replaced node, and used after it, to the first
    /// alias left that refers to it: that alias becomes the anchored node's own text (or, for
    /// a multi-line string, the same string double-quoted).
    fn move_anchors(&mut self) -> Result<(), ConfigError> {
        let inside = |r: &[(usize, usize)], s: usize, e: usize| r.iter().any(|&(a, b)| a <= s && e <= b && a < b);
        let replaced = self.replaced.clone();
        // Moved nodes: their old range and where their copy went.
        let mut moved: Vec<(usize, usize, usize)> = Vec::new();
        for (id, node) in self.doc.nodes.iter().enumerate() {
            if node.anchor == 0 || !inside(&replaced, node.start, node.end) {
                continue;
            }
            let first_alias = self
                .doc
                .nodes
                .iter()
                .filter(|n| matches!(n.kind, Kind::Alias(t) if t == id) && !inside(&replaced, n.start, n.end))
                .min_by_key(|n| n.start);
            let Some(alias) = first_alias else { continue };
            // An anchor inside a node already moved went with its copy.
            if let Some(&(_, _, copy_at)) = moved.iter().find(|&&(s, e, _)| s <= node.start && node.end <= e) {
                if alias.start > copy_at {
                    continue;
                }
                return Err(ConfigError::Unsupported {
                    what: format!(
                        "the replaced value's anchor `&{}` is used at line {} before the value it is in can be moved",
                        alias_name(&self.text[alias.start..alias.end]),
                        alias.line
                    ),
                    line: node.line,
                    column: node.column,
                });
            }
            moved.push((node.start, node.end, alias.start));
            let own = &self.text[node.start..node.end];
            let text = if !own.contains(['\n', '\r']) {
                own.to_owned()
            } else {
                match &node.kind {
                    Kind::Scalar { value, plain: false }
                        if node
                            .tag
                            .as_deref()
                            .is_none_or(|t| t == "!" || t == "tag:yaml.org,2002:str") =>
                    {
                        let name = alias_name(&self.text[alias.start..alias.end]);
                        let tag = if node.tag.is_some() { "!!str " } else { "" };
                        format!("&{name} {tag}{}", quote(value))
                    }
                    _ => {
                        let (line, column) = (node.line, node.column);
                        return Err(ConfigError::Unsupported {
                            what: format!(
                                "the replaced value's anchor `&{}` is used at line {}, and the value spans several lines; it cannot be moved there",
                                alias_name(&self.text[alias.start..alias.end]),
                                alias.line
                            ),
                            line,
                            column,
                        });
                    }
                }
            };
            self.splices.push(Splice {
                start: alias.start,
                end: alias.end,
                text,
                rank: REPLACE,
            });
        }
        Ok(())
    }

    /// The edited text.
    pub fn finish(mut self) -> Result<String, ConfigError> {
        self.move_anchors()?;
        let mut splices = std::mem::take(&mut self.splices);
        // Stable: insertions at one place keep the order they were planned in.
        splices.sort_by_key(|s| (s.start, s.rank));
        let mut out = String::with_capacity(self.text.len() + 256);
        let mut at = 0;
        for s in &splices {
            if s.start < at {
                let (line, column) = self.position(s.start);
                return Err(ConfigError::Unsupported {
                    what: "two changes overlap".into(),
                    line,
                    column,
                });
            }
            out.push_str(&self.text[at..s.start]);
            out.push_str(&s.text);
            at = s.end;
        }
        out.push_str(&self.text[at..]);
        Ok(out)
    }
}

fn alias_name(alias_text: &str) -> &str {
    alias_text.trim_start_matches('*')
}
