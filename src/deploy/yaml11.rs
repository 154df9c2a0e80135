//! What YAML 1.1 readers such as PyYAML (upstream's loader) refuse or read otherwise while
//! `saphyr-parser` (YAML 1.2) accepts it: checked on the config and on the edited text.

use super::doc::{line_column, Doc, Kind, Node};
use super::resolve::tag_supported;
use super::ConfigError;

/// A merge key's value must be a mapping or a sequence of mappings (PyYAML fails otherwise).
pub(crate) fn check_merges(doc: &Doc) -> Result<(), ConfigError> {
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
pub(crate) fn check_characters(text: &str, doc: &Doc) -> Result<(), ConfigError> {
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
pub(crate) fn is_anchor_name_1_1(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
}

pub(crate) fn differently_read(line: usize, column: usize, what: &str) -> ConfigError {
    ConfigError::Syntax {
        line,
        column,
        message: format!("{what}: YAML 1.1 readers (upstream's) and YAML 1.2 ones read this differently or not at all"),
    }
}

pub(crate) enum Style {
    Block,
    Other,
}

/// Whether a scalar node is a block scalar (`|`, `>`): its text past its properties starts so.
pub(crate) fn style_of(text: &str, node: &Node) -> Style {
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

pub(crate) fn check_directives(text: &str) -> Result<(), ConfigError> {
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
pub(crate) fn check_tag_separated(text: &str, start: usize, line: usize, column: usize) -> Result<(), ConfigError> {
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

pub(crate) fn check_tag(tag: Option<&str>, line: usize, column: usize) -> Result<(), ConfigError> {
    match tag {
        Some(t) if !tag_supported(t) => Err(ConfigError::UnsupportedTag {
            tag: t.to_owned(),
            line,
            column,
        }),
        _ => Ok(()),
    }
}
