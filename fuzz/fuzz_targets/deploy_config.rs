//! The serving-config edit (`deploy_config`). The input is the config; its length picks the
//! model path, the backend and the stage models from small lists. Oracle (an independent YAML
//! parser): when the edit succeeds, the input was one YAML mapping (or empty), the output is
//! one too, and the two are equal except `default_model`, `backend` and the named stages'
//! `model`, which hold the new values.
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

/// A mapping's entry by string key.
fn get<'a>(m: &'a Mapping, key: &str) -> Option<&'a Value> {
    m.get(Value::String(key.into()))
}

/// The document as a mapping (an empty document is an empty mapping); `None` if it is not one.
fn mapping(doc: Value) -> Option<Mapping> {
    match doc {
        Value::Null => Some(Mapping::new()),
        Value::Mapping(m) => Some(m),
        _ => None,
    }
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
    let before: Value = serde_yaml_ng::from_slice(config).unwrap_or_else(|e| {
        panic!(
            "deployed a config that is not one YAML document ({e}):\n{}",
            show(config)
        )
    });
    let after: Value = serde_yaml_ng::from_slice(&out).unwrap_or_else(|e| {
        panic!(
            "the edited config does not parse ({e}):\n--- before\n{}\n--- after\n{}",
            show(config),
            show(&out)
        )
    });
    let mut before =
        mapping(before).unwrap_or_else(|| panic!("deployed a config that is not a mapping:\n{}", show(config)));
    let mut after = mapping(after).unwrap_or_else(|| panic!("the edited config is not a mapping:\n{}", show(&out)));
    let path = normalize_model_path(model);
    let diff = || format!("--- before\n{}\n--- after\n{}", show(config), show(&out));
    assert_eq!(
        get(&after, "default_model").and_then(Value::as_str),
        Some(path.as_str()),
        "default_model\n{}",
        diff()
    );
    assert_eq!(
        get(&after, "backend").and_then(Value::as_str),
        Some(backend),
        "backend\n{}",
        diff()
    );
    for m in [&mut before, &mut after] {
        m.remove("default_model");
        m.remove("backend");
    }
    // The named stages' `model`: set where the stage is a mapping in the edited config.
    let stage_key = Value::String("stages".into());
    for (stage, stage_path) in &stage_models {
        let key = Value::String(stage.clone());
        let existed = matches!(before.get(&stage_key), Some(Value::Mapping(s)) if s.contains_key(&key));
        if let Some(Value::Mapping(stages)) = after.get_mut(&stage_key) {
            if let Some(Value::Mapping(s)) = stages.get_mut(&key) {
                assert_eq!(
                    get(s, "model").and_then(Value::as_str),
                    Some(normalize_model_path(stage_path).as_str()),
                    "stage {stage}'s model\n{}",
                    diff()
                );
                s.remove("model");
                if !existed && s.is_empty() {
                    stages.remove(&key);
                }
            }
        }
        if let Some(Value::Mapping(stages)) = before.get_mut(&stage_key) {
            if let Some(Value::Mapping(s)) = stages.get_mut(&key) {
                s.remove("model");
            }
        }
    }
    assert_eq!(before, after, "keys other than the deployed ones changed\n{}", diff());
});
