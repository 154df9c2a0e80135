//! The serving-config edit (`deploy_config`). The input is the config; its length picks the
//! model path, the backend and the stage models from small lists. Oracle: an independent YAML
//! parser (libyaml, as upstream's PyYAML uses) loads the input and the output, and when the
//! edit succeeds the output is exactly upstream's change of the input (modelled below from the
//! bridge's Python), and the input is one upstream does not fail on. Inputs libyaml itself refuses are skipped:
//! which configs are refused is judged against PyYAML by `tests/it/yaml_oracle.rs`.
#![no_main]

use deploy_gate::deploy::{deploy_config, normalize_model_path, Change, BACKENDS};
use libfuzzer_sys::fuzz_target;
use serde_yaml_ng::{Mapping, Value};

const MODELS: &[&str] = &[
    "/models/new",
    "./models/new/",
    "models//new",
    "m: x # y",
    "\"q\" 'é' \\",
    "-",
];
const STAGES: &[&str] = &["plan", "respond", "default_model"];

/// The document as a mapping; `None` if it is not one.
fn mapping(doc: Value) -> Option<Mapping> {
    match doc {
        Value::Mapping(m) => Some(m),
        _ => None,
    }
}

/// Python's truth value of a loaded YAML value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Sequence(s) => !s.is_empty(),
        Value::Mapping(m) => !m.is_empty(),
        Value::Tagged(_) => true,
    }
}

/// The upstream bridge's change (`deploy_trained_model`) on the loaded document, written
/// independently from its Python: `safe_load(f) or {}`, `default_model` and `backend` set, the
/// stage map applied to a non-empty `stages` list by `id`, else to a `stages` mapping (made
/// when missing or not a mapping). `None` where upstream raises.
fn upstream(doc: Value, model: &str, backend: &str, stage_models: &[(String, String)]) -> Option<Mapping> {
    let mut config = if truthy(&doc) { mapping(doc)? } else { Mapping::new() };
    config.insert(Value::String("default_model".into()), Value::String(model.into()));
    config.insert(Value::String("backend".into()), Value::String(backend.into()));
    if stage_models.is_empty() {
        return Some(config);
    }
    // A dict: the last path given for a stage wins.
    let path_of = |id: &str| stage_models.iter().rev().find(|(s, _)| s == id).map(|(_, p)| p.clone());
    let key = Value::String("stages".into());
    match config.get_mut(&key) {
        Some(Value::Sequence(list)) if !list.is_empty() => {
            for item in list.iter_mut() {
                if let Value::Mapping(m) = item {
                    let id = m
                        .get(Value::String("id".into()))
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    if let Some(path) = id.as_deref().and_then(path_of) {
                        m.insert(Value::String("model".into()), Value::String(path));
                    }
                }
            }
        }
        _ => {
            if !matches!(config.get(&key), Some(Value::Mapping(_))) {
                config.insert(key.clone(), Value::Mapping(Mapping::new()));
            }
            let Some(Value::Mapping(stages)) = config.get_mut(&key) else {
                unreachable!("just made a mapping")
            };
            for (stage, _) in stage_models {
                let path = path_of(stage).expect("named");
                let stage_key = Value::String(stage.clone());
                if !stages.contains_key(&stage_key) {
                    stages.insert(stage_key.clone(), Value::Mapping(Mapping::new()));
                }
                match stages.get_mut(&stage_key) {
                    Some(Value::Mapping(m)) => {
                        m.insert(Value::String("model".into()), Value::String(path));
                    }
                    _ => return None,
                }
            }
        }
    }
    Some(config)
}

fuzz_target!(|config: &[u8]| {
    let n = config.len();
    let model = MODELS[n % MODELS.len()];
    let backend = BACKENDS[(n / MODELS.len()) % BACKENDS.len()];
    let stage_models: Vec<(String, String)> = match n % 3 {
        0 => vec![],
        1 => vec![(STAGES[n % STAGES.len()].into(), "/models/stage".into())],
        _ => STAGES.iter().map(|s| (s.to_string(), format!("/models/{s}"))).collect(),
    };
    let change = Change {
        model_path: model,
        backend,
        stage_models: &stage_models,
    };
    let Ok(out) = deploy_config(config, &change) else {
        return;
    };
    let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    // A leading byte-order mark is not content (PyYAML drops it; this loader reads it as text).
    let strip = |b: &[u8]| -> Vec<u8> { b.strip_prefix("\u{feff}".as_bytes()).unwrap_or(b).to_vec() };
    // libyaml is stricter than PyYAML's pure-Python loader in a few places (unknown directives,
    // some flow forms), so an input it refuses says nothing here: which configs are refused is
    // judged against PyYAML itself by tests/it/yaml_oracle.rs.
    let Ok(before) = serde_yaml_ng::from_slice::<Value>(&strip(config)) else {
        return;
    };
    // So is a top level that is a plain scalar: YAML 1.1 (PyYAML) and this YAML 1.2 loader
    // resolve some differently (`00` is 0, falsy, to PyYAML), and upstream's `or {}` depends on it.
    if !matches!(before, Value::Null | Value::Mapping(_) | Value::Sequence(_)) {
        return;
    }
    // A stage reached through an alias is one object shared by every alias in upstream's
    // Python, so setting its `model` shows at each of them (and deploy-gate edits the anchored
    // node to match); this loader copies aliased values, so it cannot model that. Such configs
    // are judged against PyYAML by tests/it/yaml_oracle.rs.
    if !stage_models.is_empty() && config.contains(&b'*') {
        return;
    }
    let after: Value = serde_yaml_ng::from_slice(&strip(&out)).unwrap_or_else(|e| {
        panic!(
            "the edited config does not parse ({e}):\n--- before\n{}\n--- after\n{}",
            show(config),
            show(&out)
        )
    });
    let expected = upstream(before, &normalize_model_path(model), backend, &stage_models)
        .unwrap_or_else(|| panic!("deployed a config upstream's change fails on:\n{}", show(config)));
    let after = mapping(after).unwrap_or_else(|| panic!("the edited config is not a mapping:\n{}", show(&out)));
    assert_eq!(
        after,
        expected,
        "the edited config is not upstream's change\n--- before\n{}\n--- after\n{}",
        show(config),
        show(&out)
    );
});
