//! The config's YAML as a tree of nodes with byte positions, built from `saphyr-parser`'s
//! events, and how the upstream bridge's loader (PyYAML's `safe_load`, YAML 1.1) reads its
//! scalars: which keys are the same key, which values are empty or false.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};

use super::ConfigError;

/// How deep collections may nest (the tree is walked recursively).
pub(crate) const MAX_DEPTH: usize = 200;

/// The YAML core schema's tag prefix (`!!`).
const CORE: &str = "tag:yaml.org,2002:";

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

/// The canonical identity of a scalar as PyYAML's `safe_load` constructs it: `null`, `n:<int>`
/// (ints, bools and integral floats, which Python's dict equality merges), `f:<float>`,
/// `s:<string>`, `merge` (`<<`), or `t:<tag>:<text>` for timestamps, binary and the rest.
pub(crate) fn scalar_key(value: &str, plain: bool, tag: Option<&str>) -> String {
    let kind = match tag {
        None if plain => resolve_plain(value),
        None | Some("!") => "str",
        Some(t) => t.strip_prefix(CORE).unwrap_or(t),
    };
    match kind {
        "str" => format!("s:{value}"),
        "null" => "null".to_owned(),
        "merge" => "merge".to_owned(),
        "bool" => match value.to_ascii_lowercase().as_str() {
            "yes" | "true" | "on" => "n:1".to_owned(),
            "no" | "false" | "off" => "n:0".to_owned(),
            _ => format!("t:bool:{value}"),
        },
        "int" => match parse_int(value) {
            Some(n) => format!("n:{n}"),
            None => format!("t:int:{value}"),
        },
        "float" => match parse_float(value) {
            Some(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e30 => format!("n:{}", f as i128),
            // NaN is never equal to itself: every NaN key is its own.
            Some(f) if f.is_nan() => format!("t:nan:{value}:{:p}", value as *const str),
            Some(f) => format!("f:{f:e}"),
            None => format!("t:float:{value}"),
        },
        other => format!("t:{other}:{value}"),
    }
}

/// The tag PyYAML's resolver (YAML 1.1) gives a plain scalar.
pub(crate) fn resolve_plain(v: &str) -> &'static str {
    if matches!(
        v,
        "yes"
            | "Yes"
            | "YES"
            | "no"
            | "No"
            | "NO"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    ) {
        return "bool";
    }
    if is_float_1_1(v) {
        return "float";
    }
    if is_int_1_1(v) {
        return "int";
    }
    match v {
        "<<" => "merge",
        "" | "~" | "null" | "Null" | "NULL" => "null",
        "=" => "value",
        _ if is_timestamp_1_1(v) => "timestamp",
        _ => "str",
    }
}

fn strip_sign(v: &str) -> (bool, &str) {
    match v.as_bytes().first() {
        Some(b'-') => (true, &v[1..]),
        Some(b'+') => (false, &v[1..]),
        _ => (false, v),
    }
}

fn all(s: &str, f: impl Fn(u8) -> bool) -> bool {
    s.bytes().all(f)
}

/// `:[0-5]?[0-9]` repeated at least once.
fn is_sexagesimal_tail(s: &str) -> bool {
    !s.is_empty()
        && s.split(':').skip(1).all(|p| {
            let b = p.as_bytes();
            match b.len() {
                1 => b[0].is_ascii_digit(),
                2 => (b'0'..=b'5').contains(&b[0]) && b[1].is_ascii_digit(),
                _ => false,
            }
        })
        && s.starts_with(':')
}

fn is_int_1_1(v: &str) -> bool {
    let (_, u) = strip_sign(v);
    let b = u.as_bytes();
    if let Some(r) = u.strip_prefix("0b") {
        return !r.is_empty() && all(r, |c| matches!(c, b'0' | b'1' | b'_'));
    }
    if let Some(r) = u.strip_prefix("0x") {
        return !r.is_empty() && all(r, |c| c.is_ascii_hexdigit() || c == b'_');
    }
    if u == "0" {
        return true;
    }
    if b.len() > 1 && b[0] == b'0' {
        return all(&u[1..], |c| matches!(c, b'0'..=b'7' | b'_'));
    }
    if b.first().is_some_and(|c| (b'1'..=b'9').contains(c)) {
        let head_len = u.find(':').unwrap_or(u.len());
        let (head, tail) = u.split_at(head_len);
        return all(head, |c| c.is_ascii_digit() || c == b'_') && (tail.is_empty() || is_sexagesimal_tail(tail));
    }
    false
}

fn is_float_1_1(v: &str) -> bool {
    let (_, u) = strip_sign(v);
    if matches!(u, ".inf" | ".Inf" | ".INF") {
        return true;
    }
    if matches!(v, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    // `[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*`
    if let Some(dot) = u.find('.') {
        let (int, rest) = u.split_at(dot);
        let frac_exp = &rest[1..];
        if let Some(colon) = int.find(':') {
            let (head, tail) = int.split_at(colon);
            return head.as_bytes().first().is_some_and(u8::is_ascii_digit)
                && all(head, |c| c.is_ascii_digit() || c == b'_')
                && is_sexagesimal_tail(tail)
                && all(frac_exp, |c| c.is_ascii_digit() || c == b'_');
        }
        let (frac, exp) = match frac_exp.find(['e', 'E']) {
            Some(e) => (&frac_exp[..e], Some(&frac_exp[e + 1..])),
            None => (frac_exp, None),
        };
        let exp_ok = exp.is_none_or(|e| {
            let b = e.as_bytes();
            b.len() >= 2 && matches!(b[0], b'-' | b'+') && all(&e[1..], |c| c.is_ascii_digit())
        });
        if int.is_empty() {
            // `\.[0-9][0-9_]*…`, unsigned only
            return u.len() == v.len()
                && frac.as_bytes().first().is_some_and(u8::is_ascii_digit)
                && all(frac, |c| c.is_ascii_digit() || c == b'_')
                && exp_ok;
        }
        return int.as_bytes()[0].is_ascii_digit()
            && all(int, |c| c.is_ascii_digit() || c == b'_')
            && all(frac, |c| c.is_ascii_digit() || c == b'_')
            && exp_ok;
    }
    false
}

fn is_timestamp_1_1(v: &str) -> bool {
    let b = v.as_bytes();
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    if b.len() == 10 && digits(&b[..4]) && b[4] == b'-' && digits(&b[5..7]) && b[7] == b'-' && digits(&b[8..]) {
        return true;
    }
    // The long form: YYYY-M-D(T| )H:MM:SS(.f)?( ?(Z|±H(:MM)?))?
    if b.len() < 14 || !digits(&b[..4]) || b[4] != b'-' {
        return false;
    }
    let rest = &v[5..];
    let take_digits = |s: &str, min: usize, max: usize| -> Option<usize> {
        let n = s.bytes().take_while(u8::is_ascii_digit).count();
        (n >= min && n <= max).then_some(n)
    };
    let mut s = rest;
    let Some(n) = take_digits(s, 1, 2) else { return false };
    s = &s[n..];
    let Some(s2) = s.strip_prefix('-') else { return false };
    s = s2;
    let Some(n) = take_digits(s, 1, 2) else { return false };
    s = &s[n..];
    if let Some(s2) = s.strip_prefix(['T', 't']) {
        s = s2;
    } else {
        let n = s.bytes().take_while(|c| matches!(c, b' ' | b'\t')).count();
        if n == 0 {
            return false;
        }
        s = &s[n..];
    }
    let Some(n) = take_digits(s, 1, 2) else { return false };
    s = &s[n..];
    for _ in 0..2 {
        let Some(s2) = s.strip_prefix(':') else { return false };
        if take_digits(s2, 2, 2).is_none() {
            return false;
        }
        s = &s2[2..];
    }
    if let Some(s2) = s.strip_prefix('.') {
        s = &s2[s2.bytes().take_while(u8::is_ascii_digit).count()..];
    }
    let s = s.trim_start_matches([' ', '\t']);
    if s.is_empty() || s == "Z" {
        return true;
    }
    let Some(s) = s.strip_prefix(['+', '-']) else {
        return false;
    };
    let Some(n) = take_digits(s, 1, 2) else { return false };
    let s = &s[n..];
    s.is_empty()
        || s.strip_prefix(':')
            .is_some_and(|m| m.len() == 2 && digits(m.as_bytes()))
}

/// PyYAML's `construct_yaml_int`.
fn parse_int(v: &str) -> Option<i128> {
    let v = v.replace('_', "");
    let (neg, u) = strip_sign(&v);
    let n = if u == "0" {
        0
    } else if let Some(r) = u.strip_prefix("0b") {
        i128::from_str_radix(r, 2).ok()?
    } else if let Some(r) = u.strip_prefix("0x") {
        i128::from_str_radix(r, 16).ok()?
    } else if u.starts_with('0') {
        i128::from_str_radix(u, 8).ok()?
    } else if u.contains(':') {
        u.split(':').try_fold(0i128, |acc, p| {
            acc.checked_mul(60)?.checked_add(p.parse::<i128>().ok()?)
        })?
    } else {
        u.parse().ok()?
    };
    Some(if neg { -n } else { n })
}

/// PyYAML's `construct_yaml_float`.
fn parse_float(v: &str) -> Option<f64> {
    let v = v.replace('_', "").to_ascii_lowercase();
    let (neg, u) = strip_sign(&v);
    let f = if u == ".inf" {
        f64::INFINITY
    } else if u == ".nan" {
        f64::NAN
    } else if u.contains(':') {
        u.split(':')
            .try_fold(0f64, |acc, p| Some(acc * 60.0 + p.parse::<f64>().ok()?))?
    } else {
        u.parse().ok()?
    };
    Some(if neg { -f } else { f })
}

/// The tags PyYAML's `SafeConstructor` builds; any other makes `safe_load` fail.
fn tag_supported(tag: &str) -> bool {
    tag == "!"
        || tag.strip_prefix(CORE).is_some_and(|s| {
            matches!(
                s,
                "null"
                    | "bool"
                    | "int"
                    | "float"
                    | "binary"
                    | "timestamp"
                    | "omap"
                    | "pairs"
                    | "set"
                    | "str"
                    | "seq"
                    | "map"
            )
        })
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

/// Where a node's properties (anchor, tag) or block-scalar header begin, if they lie before
/// the parser's span: the first `&`, `!`, `|` or `>` outside comments between the end of the
/// previous event and the span.
fn properties_start(text: &str, from: usize, to: usize, wanted: &[u8]) -> usize {
    let region = &text.as_bytes()[from..to];
    let mut i = 0;
    while i < region.len() {
        let c = region[i];
        if c == b'#' && (i == 0 || matches!(region[i - 1], b' ' | b'\t' | b'\n' | b'\r')) {
            while i < region.len() && region[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if wanted.contains(&c) {
            return from + i;
        }
        i += 1;
    }
    to
}

/// The closing bracket of a flow collection: the first `]`/`}` at or after `from` outside
/// comments (the parser's end event can sit on a trailing comma).
fn flow_close(text: &str, from: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b']' | b'}' => return Some(i + 1),
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b' ' | b'\t' | b'\r' | b'\n' | b',' => i += 1,
            _ => return None,
        }
    }
    None
}

/// Parses `text` (one YAML document at most) into a [`Doc`], refusing what the upstream
/// bridge's loader refuses (unknown tags, unhashable keys, several documents) and what is
/// unsafe to edit (duplicate keys, nesting deeper than [`MAX_DEPTH`]).
pub(crate) fn parse(text: &str) -> Result<Doc, ConfigError> {
    // The parser's positions count characters; the edit needs bytes.
    let mut offsets: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    offsets.push(text.len());
    let byte = |span_index: usize| offsets[span_index.min(offsets.len() - 1)];
    let locator = Locator::new(text, &offsets);

    let mut nodes: Vec<Node> = Vec::new();
    let mut root = None;
    let mut anchors: HashMap<usize, usize> = HashMap::new();
    // Open collections: node id, and for a mapping the key waiting for its value.
    let mut stack: Vec<(usize, Option<usize>)> = Vec::new();
    // Keys seen per open mapping: key id → key node.
    let mut keys: Vec<HashMap<String, usize>> = Vec::new();
    let mut documents = 0;
    let mut prev_end = 0;
    // Anchor names defined so far: YAML 1.2 lets a name be defined again, YAML 1.1 readers
    // (PyYAML) refuse it.
    let mut anchor_names: HashMap<String, usize> = HashMap::new();
    let mut name_anchor = |text: &str, start: usize, line: usize, column: usize| -> Result<(), ConfigError> {
        let Some(at) = text[start..].find('&') else {
            return Ok(());
        };
        let name: String = text[start + at + 1..]
            .chars()
            .take_while(|c| !c.is_whitespace() && !",[]{}".contains(*c))
            .collect();
        if !is_anchor_name_1_1(&name) {
            return Err(differently_read(line, column, &format!("anchor name `&{name}`")));
        }
        let after = text[start + at + 1 + name.len()..].chars().next();
        if after.is_some_and(|c| !c.is_whitespace() && !"?:,]}%@`".contains(c)) {
            return Err(differently_read(
                line,
                column,
                &format!("anchor `&{name}` not followed by a blank"),
            ));
        }
        if let Some(first) = anchor_names.insert(name.clone(), line) {
            return Err(ConfigError::Unsupported {
                what: format!("anchor `&{name}` is defined again (first at line {first}); YAML 1.1 readers such as upstream's refuse that"),
                line,
                column,
            });
        }
        Ok(())
    };

    for event in Parser::new_from_str(text) {
        let (event, span): (Event, Span) = event.map_err(|e| ConfigError::Syntax {
            line: e.marker().line(),
            column: e.marker().col() + 1,
            message: e.info().to_owned(),
        })?;
        let (s, e) = (
            byte(span.start.index()),
            byte(span.end.index()).max(byte(span.start.index())),
        );
        let mut new_node = None;
        let is_map = matches!(event, Event::MappingStart(..));
        match event {
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    let (line, column) = line_column(text, s);
                    return Err(ConfigError::MultiDocument { line, column });
                }
            }
            Event::Alias(anchor) => {
                let target = *anchors.get(&anchor).ok_or_else(|| {
                    let (line, column) = line_column(text, s);
                    ConfigError::Syntax {
                        line,
                        column,
                        message: "an alias to an unknown anchor".into(),
                    }
                })?;
                let name = text[s..e].trim_start_matches('*');
                if !is_anchor_name_1_1(name) {
                    let (line, column) = line_column(text, s);
                    return Err(differently_read(line, column, &format!("alias name `*{name}`")));
                }
                new_node = Some(Node {
                    kind: Kind::Alias(target),
                    start: s,
                    end: e,
                    line: 0,
                    column: 0,
                    anchor: 0,
                    tag: None,
                    flow: false,
                    indent: 0,
                });
            }
            Event::Scalar(value, style, anchor, tag) => {
                let tag = tag.map(|t| format!("{}{}", t.handle, t.suffix));
                let mut wanted = Vec::new();
                if anchor != 0 {
                    wanted.push(b'&');
                }
                if tag.is_some() {
                    wanted.push(b'!');
                }
                if matches!(style, ScalarStyle::Literal | ScalarStyle::Folded) {
                    wanted.extend_from_slice(b"|>");
                }
                let start = if wanted.is_empty() {
                    s
                } else {
                    properties_start(text, prev_end.min(s), s, &wanted).min(s)
                };
                let plain = style == ScalarStyle::Plain;
                // An empty plain scalar takes no bytes (the parser may give it the next token's span).
                let end = if plain && value.is_empty() && anchor == 0 && tag.is_none() {
                    start
                } else {
                    e
                };
                new_node = Some(Node {
                    kind: Kind::Scalar {
                        value: value.into_owned(),
                        plain,
                    },
                    start,
                    end,
                    line: 0,
                    column: 0,
                    anchor,
                    tag,
                    flow: false,
                    indent: 0,
                });
            }
            Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) => {
                if stack.len() >= MAX_DEPTH {
                    let (line, column) = line_column(text, s);
                    return Err(ConfigError::Unsupported {
                        what: format!("collections nested more than {MAX_DEPTH} deep"),
                        line,
                        column,
                    });
                }
                let tag = tag.map(|t| format!("{}{}", t.handle, t.suffix));
                let flow = text[s..e].trim_end().ends_with(['[', '{']);
                let mut wanted = Vec::new();
                if anchor != 0 {
                    wanted.push(b'&');
                }
                if tag.is_some() {
                    wanted.push(b'!');
                }
                if !flow && !is_map {
                    // An indentless sequence starts at its first item, after the `-`.
                    wanted.push(b'-');
                }
                let start = if wanted.is_empty() {
                    s
                } else {
                    properties_start(text, prev_end.min(s), s, &wanted).min(s)
                };
                // A block mapping's entries are at the column its event ends on (after any
                // properties; at the `?` of an explicit key).
                let indent = if flow || !is_map { 0 } else { locator.at(e).1 - 1 };
                let (line, column) = locator.at(start);
                check_tag(tag.as_deref(), line, column)?;
                if tag.is_some() {
                    check_tag_separated(text, start, line, column)?;
                }
                let fits = match tag.as_deref().and_then(|t| t.strip_prefix(CORE)) {
                    None => true,
                    Some("map" | "set") => is_map,
                    Some("seq" | "omap" | "pairs") => !is_map,
                    Some(_) => false,
                };
                if !fits {
                    return Err(ConfigError::UnsupportedTag {
                        tag: tag.clone().unwrap_or_default(),
                        line,
                        column,
                    });
                }
                if anchor != 0 {
                    name_anchor(text, start, line, column)?;
                }
                nodes.push(Node {
                    kind: if is_map {
                        Kind::Map(Vec::new())
                    } else {
                        Kind::Seq(Vec::new())
                    },
                    start,
                    end: e,
                    line,
                    column,
                    anchor,
                    tag,
                    flow,
                    indent,
                });
                let id = nodes.len() - 1;
                if anchor != 0 {
                    anchors.insert(anchor, id);
                }
                stack.push((id, None));
                keys.push(HashMap::new());
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (id, _) = stack.pop().expect("the parser balances collections");
                keys.pop();
                let node = &nodes[id];
                let end = if node.flow {
                    flow_close(text, s).unwrap_or(e)
                } else {
                    let last = match &node.kind {
                        Kind::Seq(items) => items.last().copied(),
                        Kind::Map(entries) => entries
                            .last()
                            .map(|&(k, v)| if nodes[v].end >= nodes[k].end { v } else { k }),
                        _ => None,
                    };
                    last.map_or(node.end, |l| nodes[l].end)
                };
                nodes[id].end = end.max(nodes[id].start);
                attach(text, &mut nodes, &mut stack, &mut keys, &mut root, id)?;
            }
        }
        if let Some(mut node) = new_node {
            let (line, column) = locator.at(node.start);
            node.line = line;
            node.column = column;
            if let Kind::Scalar { value, plain } = &node.kind {
                check_tag(node.tag.as_deref(), line, column)?;
                if node.tag.is_some() {
                    check_tag_separated(text, node.start, line, column)?;
                }
                let in_flow = stack.iter().any(|&(id, _)| nodes[id].flow);
                if *plain && in_flow && (value.starts_with(':') || value.contains('?')) {
                    // YAML 1.1 readers take `?`/`:` in flow context as indicators.
                    return Err(differently_read(
                        line,
                        column,
                        &format!("plain scalar `{value}` in a flow collection"),
                    ));
                }
                if *plain
                    && value.starts_with([
                        '|', '>', '\'', '"', '%', '@', '`', '!', '&', '*', '#', ',', '[', ']', '{', '}',
                    ])
                {
                    return Err(differently_read(line, column, &format!("plain scalar `{value}`")));
                }
                let explicit_key = text[..node.start].trim_end().ends_with('?');
                let is_key_here = stack
                    .last()
                    .is_some_and(|&(id, pending)| matches!(nodes[id].kind, Kind::Map(_)) && pending.is_none());
                if is_key_here && *plain && value.is_empty() && node.tag.is_none() && node.anchor == 0 && !explicit_key
                {
                    return Err(differently_read(line, column, "an empty key"));
                }
                if matches!(
                    node.tag.as_deref().and_then(|t| t.strip_prefix(CORE)),
                    Some("seq" | "map" | "omap" | "pairs" | "set")
                ) {
                    return Err(ConfigError::UnsupportedTag {
                        tag: node.tag.clone().unwrap_or_default(),
                        line,
                        column,
                    });
                }
                let is_key = stack
                    .last()
                    .is_some_and(|&(id, pending)| matches!(nodes[id].kind, Kind::Map(_)) && pending.is_none());
                let explicit = text[..node.start].trim_end().ends_with('?');
                if is_key
                    && !explicit
                    && text[node.start..node.end].contains('\n')
                    && text[node.end..].trim_start().starts_with(':')
                {
                    return Err(differently_read(line, column, "an implicit key over several lines"));
                }
                if is_key && !explicit && node.end > node.start {
                    let after = &text[node.end..];
                    let rest = after.trim_start_matches([' ', '\t']);
                    if rest.starts_with(['\r', '\n']) && rest.trim_start().starts_with(':') {
                        return Err(differently_read(
                            line,
                            column,
                            "an implicit key and its `:` on different lines",
                        ));
                    }
                }
                if matches!(style_of(text, &node), Style::Block) && node.end == text.len() && !text.ends_with('\n') {
                    return Err(ConfigError::Unsupported {
                        what: "the config ends inside a block scalar without a final line break (YAML 1.1 and 1.2 readers disagree on its value once anything follows)".into(),
                        line,
                        column,
                    });
                }
                let key_position = stack
                    .last()
                    .is_some_and(|&(id, pending)| matches!(nodes[id].kind, Kind::Map(_)) && pending.is_none());
                if node.tag.is_none() && *plain && resolve_plain(value) == "merge" && !key_position {
                    return Err(ConfigError::UnsupportedTag {
                        tag: format!("{CORE}merge"),
                        line,
                        column,
                    });
                }
                if node.tag.is_none() && *plain && resolve_plain(value) == "value" {
                    return Err(ConfigError::UnsupportedTag {
                        tag: format!("{CORE}value"),
                        line,
                        column,
                    });
                }
            }
            let anchor = node.anchor;
            if anchor != 0 {
                name_anchor(text, node.start, line, column)?;
            }
            nodes.push(node);
            let id = nodes.len() - 1;
            if anchor != 0 {
                anchors.insert(anchor, id);
            }
            attach(text, &mut nodes, &mut stack, &mut keys, &mut root, id)?;
        }
        prev_end = prev_end.max(e);
    }
    if root.is_none() {
        // PyYAML fails on a document end marker with no document before it.
        for (n, line) in text.split_inclusive('\n').enumerate() {
            let bare = line.trim_start_matches('\u{feff}');
            if bare == "..." || bare.starts_with("...") && bare[3..].starts_with([' ', '\t', '\r', '\n']) {
                return Err(ConfigError::Syntax {
                    line: n + 1,
                    column: 1,
                    message: "a document end marker (`...`) with no document before it (upstream's loader fails on it)"
                        .into(),
                });
            }
        }
    }
    let doc = Doc { nodes, root };
    check_characters(text, &doc)?;
    check_directives(text)?;
    check_merges(&doc)?;
    Ok(doc)
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

/// A merge key's value must be a mapping or a sequence of mappings (PyYAML fails otherwise).
fn check_merges(doc: &Doc) -> Result<(), ConfigError> {
    let is_map = |id: usize| matches!(doc.nodes[doc.resolve(id)].kind, Kind::Map(_));
    for node in &doc.nodes {
        let Kind::Map(entries) = &node.kind else { continue };
        for &(k, v) in entries {
            if doc.key_id(k).as_deref() != Some("merge") {
                continue;
            }
            let ok = match &doc.nodes[doc.resolve(v)].kind {
                Kind::Map(_) => true,
                Kind::Seq(items) => items.iter().all(|&i| is_map(i)),
                _ => false,
            };
            if !ok {
                return Err(ConfigError::Unsupported {
                    what: "a merge key (`<<`) whose value is not a mapping or a list of mappings".into(),
                    line: doc.nodes[v].line,
                    column: doc.nodes[v].column,
                });
            }
        }
    }
    Ok(())
}

/// What YAML 1.1 readers such as PyYAML refuse and `saphyr-parser` lets through: characters
/// outside YAML's printable set, and tabs anywhere but in quoted or block scalars and comments;
/// and the line breaks only YAML 1.1 has (NEL, LS, PS), which the two read differently.
fn check_characters(text: &str, doc: &Doc) -> Result<(), ConfigError> {
    let syntax = |at: usize, message: String| {
        let (line, column) = line_column(text, at);
        ConfigError::Syntax { line, column, message }
    };
    if let Some((at, c)) = text.char_indices().find(|&(_, c)| {
        !matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
    }) {
        return Err(syntax(at, format!("character U+{:04X} is not allowed in YAML", c as u32)));
    }
    if let Some(at) = text.find(['\u{85}', '\u{2028}', '\u{2029}']) {
        let c = text[at..].chars().next().expect("found");
        return Err(syntax(
            at,
            format!(
                "character U+{:04X} is a line break to YAML 1.1 readers (upstream's) and not to YAML 1.2 ones",
                c as u32
            ),
        ));
    }
    if !text.contains(['\t', '\u{feff}']) {
        return Ok(());
    }
    // Byte ranges of scalars: quoted and block ones may hold tabs.
    let mut scalars: Vec<(usize, usize, bool)> = doc
        .nodes
        .iter()
        .filter_map(|n| match &n.kind {
            Kind::Scalar { plain, .. } if n.end > n.start => {
                // A block scalar's header line is not content.
                let own = &text[n.start..n.end];
                let (start, end) = match style_of(text, n) {
                    Style::Block => (own.find('\n').map_or(n.end, |i| n.start + i), n.end),
                    // A quoted scalar's content ends at its closing quote.
                    Style::Other if !*plain => (n.start, own.rfind(['\'', '"']).map_or(n.end, |i| n.start + i + 1)),
                    Style::Other => (n.start, n.end),
                };
                Some((start, end, !*plain))
            }
            _ => None,
        })
        .collect();
    scalars.sort_unstable();
    let in_scalar = |at: usize| {
        let i = scalars.partition_point(|&(s, _, _)| s <= at);
        i.checked_sub(1).map(|i| scalars[i]).filter(|&(_, e, _)| at < e)
    };
    for (at, _) in text.match_indices('\u{feff}').filter(|&(at, _)| at > 0) {
        if !in_scalar(at).is_some_and(|(_, _, content)| content) {
            return Err(differently_read(
                line_column(text, at).0,
                line_column(text, at).1,
                "a byte-order mark after the start",
            ));
        }
    }
    let b = text.as_bytes();
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let this = line_start;
        line_start += line.len();
        if !line.contains('\t') {
            continue;
        }
        // Where the line's comment starts (a `#` after a blank or at the line start, outside scalars).
        let comment = (this..this + line.len())
            .find(|&h| b[h] == b'#' && (h == this || matches!(b[h - 1], b' ' | b'\t')) && in_scalar(h).is_none());
        for (i, _) in line.match_indices('\t') {
            let at = this + i;
            if in_scalar(at).is_some_and(|(_, _, may_hold_tabs)| may_hold_tabs) || comment.is_some_and(|h| h < at) {
                continue;
            }
            return Err(syntax(
                at,
                "a tab outside quoted or block scalars and comments (YAML 1.1 readers such as upstream's refuse it)"
                    .into(),
            ));
        }
    }
    Ok(())
}

/// PyYAML's anchor names: letters, digits, `-` and `_`.
fn is_anchor_name_1_1(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
}

fn differently_read(line: usize, column: usize, what: &str) -> ConfigError {
    ConfigError::Syntax {
        line,
        column,
        message: format!("{what}: YAML 1.1 readers (upstream's) and YAML 1.2 ones read this differently or not at all"),
    }
}

enum Style {
    Block,
    Other,
}

/// Whether a scalar node is a block scalar (`|`, `>`): its text past its properties starts so.
fn style_of(text: &str, node: &Node) -> Style {
    let own = &text[node.start..node.end];
    let mut rest = own;
    loop {
        rest = rest.trim_start();
        if rest.starts_with(['&', '!']) {
            rest = rest.find(char::is_whitespace).map_or("", |i| &rest[i..]);
        } else {
            break;
        }
    }
    if rest.starts_with(['|', '>']) {
        Style::Block
    } else {
        Style::Other
    }
}

fn check_directives(text: &str) -> Result<(), ConfigError> {
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let line = line.trim_start_matches('\u{feff}').trim_end_matches(['\r', '\n']);
        if line == "---" || line.starts_with("--- ") || line.starts_with("---\t") {
            break;
        }
        let Some(directive) = line.strip_prefix('%') else {
            continue;
        };
        let name_len = directive
            .bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_'))
            .count();
        let (name, rest) = directive.split_at(name_len);
        let ok = match name {
            "YAML" => {
                let v = rest.trim_start_matches(' ');
                let v = v.split([' ', '#']).next().unwrap_or("");
                rest.starts_with(' ')
                    && v.split_once('.')
                        .is_some_and(|(a, b)| a == "1" && !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit()))
            }
            "" => false,
            _ => rest.is_empty() || rest.starts_with(' '),
        };
        if !ok {
            return Err(differently_read(n + 1, 1, &format!("directive `%{directive}`")));
        }
    }
    Ok(())
}

/// PyYAML wants a blank (or the end) after a tag: `[!!str]` and `!!str{…}` fail there.
fn check_tag_separated(text: &str, start: usize, line: usize, column: usize) -> Result<(), ConfigError> {
    let Some(at) = text[start..].find('!').map(|i| start + i) else {
        return Ok(());
    };
    let rest = &text[at..];
    let len = if rest.starts_with("!<") {
        rest.find('>').map_or(rest.len(), |i| i + 1)
    } else {
        rest.find(|c: char| c.is_whitespace() || ",[]{}".contains(c))
            .unwrap_or(rest.len())
    };
    match rest[len..].chars().next() {
        None | Some(' ' | '\n' | '\r') => Ok(()),
        Some(_) => Err(differently_read(
            line,
            column,
            &format!("tag `{}` not followed by a blank", &rest[..len]),
        )),
    }
}

fn check_tag(tag: Option<&str>, line: usize, column: usize) -> Result<(), ConfigError> {
    match tag {
        Some(t) if !tag_supported(t) => Err(ConfigError::UnsupportedTag {
            tag: t.to_owned(),
            line,
            column,
        }),
        _ => Ok(()),
    }
}

/// Puts a finished node into its parent (or makes it the root), checking mapping keys.
fn attach(
    text: &str,
    nodes: &mut [Node],
    stack: &mut [(usize, Option<usize>)],
    keys: &mut [HashMap<String, usize>],
    root: &mut Option<usize>,
    id: usize,
) -> Result<(), ConfigError> {
    let Some((parent, pending)) = stack.last_mut() else {
        if root.is_none() {
            *root = Some(id);
        }
        return Ok(());
    };
    let parent = *parent;
    match pending.take() {
        Some(key) => {
            if let Kind::Map(entries) = &mut nodes[parent].kind {
                entries.push((key, id));
            }
        }
        None => {
            if matches!(nodes[parent].kind, Kind::Map(_)) {
                let target = match nodes[id].kind {
                    Kind::Alias(t) => t,
                    _ => id,
                };
                let key_id = match &nodes[target].kind {
                    Kind::Scalar { value, plain } => scalar_key(value, *plain, nodes[target].tag.as_deref()),
                    _ => {
                        let (line, column) = line_column(text, nodes[id].start);
                        return Err(ConfigError::UnhashableKey {
                            found: if matches!(nodes[target].kind, Kind::Map(_)) {
                                "mapping"
                            } else {
                                "sequence"
                            },
                            line,
                            column,
                        });
                    }
                };
                if key_id != "merge" {
                    let seen = keys.last_mut().expect("one key set per open collection");
                    if let Some(&first) = seen.get(&key_id) {
                        let (line, column) = line_column(text, nodes[id].start);
                        let key = match &nodes[target].kind {
                            Kind::Scalar { value, .. } => value.clone(),
                            _ => String::new(),
                        };
                        return Err(ConfigError::DuplicateKey {
                            key,
                            line,
                            column,
                            first_line: nodes[first].line,
                            first_column: nodes[first].column,
                        });
                    }
                    seen.insert(key_id, id);
                }
                *pending = Some(id);
            } else if let Kind::Seq(items) = &mut nodes[parent].kind {
                items.push(id);
            }
        }
    }
    Ok(())
}
