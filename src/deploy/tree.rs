//! The config's YAML as a tree of nodes with byte positions, built from `saphyr-parser`'s
//! events.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};

use super::doc::{line_column, Doc, Kind, Locator, Node};
use super::resolve::CORE;
use super::resolve::{resolve_plain, scalar_key};
use super::yaml11::{
    check_characters, check_directives, check_merges, check_tag, check_tag_separated, differently_read,
    is_anchor_name_1_1, style_of, Style,
};
use super::ConfigError;

/// How deep collections may nest (the tree is walked recursively).
pub(crate) const MAX_DEPTH: usize = 200;

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

/// The end (after the closing quote) of the quoted scalar whose opening quote is at or after
/// `from`: in double quotes a backslash escapes the next character, in single quotes `''` is a
/// quote. `None` when there is no such scalar.
fn quoted_end(text: &str, from: usize, double: bool) -> Option<usize> {
    let b = text.as_bytes();
    let quote = if double { b'"' } else { b'\'' };
    let mut i = from + b[from..].iter().position(|&c| c == quote)? + 1;
    while i < b.len() {
        match b[i] {
            b'\\' if double => i += 2,
            c if c == quote => {
                if !double && b.get(i + 1) == Some(&b'\'') {
                    i += 2;
                } else {
                    return Some(i + 1);
                }
            }
            _ => i += 1,
        }
    }
    None
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
                } else if matches!(style, ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted) {
                    // A quoted scalar ends at its closing quote: the parser's span can run on over
                    // the spaces and comment after it, which an edit must keep.
                    quoted_end(text, s, style == ScalarStyle::DoubleQuoted).map_or(e, |q| q.min(e))
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
                    && text[node.start..node.end].contains(['\n', '\r'])
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
