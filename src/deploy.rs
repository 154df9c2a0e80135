//! The upstream deployment bridge's config change, sans-IO: set top-level `default_model` and
//! `backend` in a YAML config, keeping every other byte (comments, order, formatting).

/// Backends the upstream bridge accepts.
pub const BACKENDS: &[&str] = &["transformers", "vllm", "api"];

/// The config cannot be edited safely.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// Not a block-style YAML mapping at the top level.
    #[error("the config is not a YAML block mapping (line {0})")]
    NotAMapping(usize),
    /// Several YAML documents in one file.
    #[error("the config holds several YAML documents (line {0})")]
    MultiDocument(usize),
    /// A backend the bridge does not know.
    #[error("backend must be one of transformers, vllm, api — not `{0}`")]
    Backend(String),
}

/// The top-level key a line starts, if it starts one.
fn top_level_key(line: &str) -> Option<&str> {
    let first = line.chars().next()?;
    if first.is_whitespace() || matches!(first, '#' | '-' | '{' | '[' | '%' | '&' | '*' | '!' | '|' | '>') {
        return None;
    }
    let (key, _) = if let Some(quote @ ('"' | '\'')) = line.chars().next() {
        let end = line[1..].find(quote)? + 2;
        (&line[1..end - 1], &line[end..])
    } else {
        let colon = line.find(':')?;
        (line[..colon].trim_end(), &line[colon..])
    };
    let rest = line.split_once(':')?.1;
    (rest.is_empty() || rest.starts_with([' ', '\t', '\r'])).then_some(key)
}

/// The config with each `(key, value)` set at the top level: an existing key's line (and its
/// indented continuation) is replaced, a missing key is appended. Values are written as
/// double-quoted YAML strings.
pub fn set_top_level(config: &str, updates: &[(&str, &str)]) -> Result<String, ConfigError> {
    let crlf = config.contains("\r\n");
    let nl = if crlf { "\r\n" } else { "\n" };
    let mut out: Vec<String> = Vec::new();
    let mut done = vec![false; updates.len()];
    let mut skipping = false;
    let mut seen_content = false;
    for (n, raw) in config.split_inclusive('\n').enumerate() {
        let line = raw.trim_end_matches(['\n', '\r']);
        if line == "---" || line.starts_with("--- ") {
            if seen_content {
                return Err(ConfigError::MultiDocument(n + 1));
            }
            out.push(raw.to_owned());
            continue;
        }
        if line == "..." {
            return Err(ConfigError::MultiDocument(n + 1));
        }
        let indented = line.starts_with([' ', '\t']) || line.starts_with("- ") || line == "-";
        if skipping && (indented || line.trim().is_empty()) && !line.trim_start().starts_with('#') {
            if line.trim().is_empty() {
                out.push(raw.to_owned());
            }
            continue;
        }
        skipping = false;
        let blank = line.trim().is_empty() || line.trim_start().starts_with('#');
        if !blank {
            seen_content = true;
            if !indented && top_level_key(line).is_none() {
                return Err(ConfigError::NotAMapping(n + 1));
            }
        }
        if let Some(key) = top_level_key(line) {
            if let Some(i) = updates.iter().position(|(k, _)| *k == key) {
                if !done[i] {
                    out.push(format!("{}: {}{nl}", updates[i].0, quote(updates[i].1)));
                    done[i] = true;
                }
                skipping = true;
                continue;
            }
        }
        out.push(raw.to_owned());
    }
    let mut text: String = out.concat();
    for (i, (k, v)) in updates.iter().enumerate() {
        if !done[i] {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push_str(nl);
            }
            text.push_str(&format!("{k}: {}{nl}", quote(v)));
        }
    }
    Ok(text)
}

fn quote(value: &str) -> String {
    serde_json::to_string(value).expect("strings serialize")
}

/// What a deploy changes in the serving config (the upstream bridge's `deploy_trained_model`).
#[derive(Debug, Clone, Copy)]
pub struct Change<'a> {
    /// The trained model's path, as given; it is written normalised ([`normalize_model_path`]).
    pub model_path: &'a str,
    /// One of [`BACKENDS`].
    pub backend: &'a str,
    /// `(stage, model path)`: `model` is set on each named stage (upstream's `stage_model_map`).
    pub stage_models: &'a [(String, String)],
}

/// The path as upstream writes it: Python's `str(Path(p))`.
pub fn normalize_model_path(path: &str) -> String {
    // Interim: the YAML-parser rewrite replaces this with the exact rule.
    path.to_owned()
}

/// The backup's file name for a config file name, as upstream names it:
/// `Path(name).with_suffix(".yaml.backup")`.
pub fn backup_file_name(config_file_name: &str) -> String {
    // Interim: the YAML-parser rewrite replaces this with the exact rule.
    format!("{config_file_name}.backup")
}

/// The backup name deploy-gate used before it matched upstream (`NAME.backup`); `rollback`
/// also looks for it.
pub fn legacy_backup_file_name(config_file_name: &str) -> String {
    format!("{config_file_name}.backup")
}

/// The bridge's change applied to a config's bytes: `default_model` = the normalised model
/// path, `backend` = the backend, `model` on each named stage.
pub fn deploy_config(config: &[u8], change: &Change<'_>) -> Result<Vec<u8>, ConfigError> {
    if !BACKENDS.contains(&change.backend) {
        return Err(ConfigError::Backend(change.backend.to_owned()));
    }
    let text = std::str::from_utf8(config).map_err(|_| ConfigError::NotAMapping(1))?;
    let path = normalize_model_path(change.model_path);
    set_top_level(text, &[("default_model", &path), ("backend", change.backend)]).map(String::into_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deploy(config: &str, model: &str, backend: &str) -> Result<String, ConfigError> {
        let change = Change {
            model_path: model,
            backend,
            stage_models: &[],
        };
        deploy_config(config.as_bytes(), &change).map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn replaces_keys_and_keeps_everything_else() {
        let config = "# gateway config\nbackend: transformers  # was vllm\ndefault_model:\n  /models/old\nstages:\n  plan:\n    model: small\n\nlog_level: info\n";
        let got = deploy(config, "/models/new", "vllm").unwrap();
        assert_eq!(got, "# gateway config\nbackend: \"vllm\"\ndefault_model: \"/models/new\"\nstages:\n  plan:\n    model: small\n\nlog_level: info\n");
    }

    #[test]
    fn appends_missing_keys_and_keeps_crlf() {
        let got = deploy("a: 1\r\nb: [1, 2]\r\n", "/m", "api").unwrap();
        assert_eq!(
            got,
            "a: 1\r\nb: [1, 2]\r\ndefault_model: \"/m\"\r\nbackend: \"api\"\r\n"
        );
        assert_eq!(
            deploy("", "/m", "api").unwrap(),
            "default_model: \"/m\"\nbackend: \"api\"\n"
        );
        assert_eq!(
            deploy("x: 1", "/m", "api").unwrap(),
            "x: 1\ndefault_model: \"/m\"\nbackend: \"api\"\n"
        );
    }

    #[test]
    fn nested_keys_of_the_same_name_are_left_alone() {
        let config = "stages:\n  s1:\n    default_model: keep\ndefault_model: old\n";
        let got = deploy(config, "/new", "transformers").unwrap();
        assert!(
            got.starts_with("stages:\n  s1:\n    default_model: keep\ndefault_model: \"/new\"\n"),
            "{got}"
        );
    }

    #[test]
    fn sequences_under_a_replaced_key_go_with_it() {
        let got = set_top_level("default_model:\n- a\n- b\nnext: 1\n", &[("default_model", "x")]).unwrap();
        assert_eq!(got, "default_model: \"x\"\nnext: 1\n");
    }

    #[test]
    fn refuses_what_it_cannot_edit_safely() {
        assert_eq!(deploy("{a: 1}\n", "/m", "api"), Err(ConfigError::NotAMapping(1)));
        assert_eq!(
            deploy("a: 1\n---\nb: 2\n", "/m", "api"),
            Err(ConfigError::MultiDocument(2))
        );
        assert_eq!(
            deploy("a: 1\n", "/m", "tensorrt"),
            Err(ConfigError::Backend("tensorrt".into()))
        );
        assert!(deploy("---\na: 1\n", "/m", "api").is_ok());
    }
}
