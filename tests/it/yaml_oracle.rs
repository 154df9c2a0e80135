//! The config edit against an independent YAML reader: PyYAML, which the upstream bridge loads
//! configs with (`tests/yaml_oracle.py`). For every config of a corpus, of configs generated
//! from parts, and of a proptest run: `yaml.safe_load(after)` is exactly upstream's change of
//! `yaml.safe_load(before)` (`default_model` = `str(Path(model))`, `backend`, the stages'
//! `model`), and a config is refused exactly when upstream fails on it or it is unsafe to edit
//! (duplicate keys, or a case the corpus names). Path names are checked against pathlib.
//!
//! Needs `python3` with PyYAML (`scripts/setup.sh` installs it).

use std::io::Write;
use std::process::{Command, Stdio};

use deploy_gate::deploy::{backup_file_name, deploy_config, normalize_model_path, Change};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRng, TestRunner};
use serde_json::{json, Value};

fn oracle(request: &Value) -> Vec<Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/yaml_oracle.py");
    let mut child = Command::new("python3")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 runs (scripts/setup.sh installs it with PyYAML)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the oracle failed: is PyYAML installed (pip install pyyaml)?"
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// One config to deploy into, the stage map, and why deploy-gate refuses it when upstream
/// does not (`None`: it must do as upstream does).
struct Case {
    before: String,
    model: String,
    backend: &'static str,
    stages: Vec<(String, String)>,
    unsafe_because: Option<&'static str>,
}

fn case(before: &str, stages: &[(&str, &str)]) -> Case {
    Case {
        before: before.to_owned(),
        model: "./runs/dpo//checkpoint-final/".to_owned(),
        backend: "vllm",
        stages: stages.iter().map(|(s, p)| (s.to_string(), p.to_string())).collect(),
        unsafe_because: None,
    }
}

fn refused(before: &str, stages: &[(&str, &str)], why: &'static str) -> Case {
    Case {
        unsafe_because: Some(why),
        ..case(before, stages)
    }
}

fn corpus() -> Vec<Case> {
    let plan = &[("plan", "/models/plan")][..];
    let two = &[("plan", "/models/plan"), ("new_stage", "./x/")][..];
    let mut cases = vec![
        // comments everywhere, order, quoting
        case("# head\ndefault_model: old  # trailing\n# between\nbackend: api\n\n# tail\n", &[]),
        case("backend: transformers\nlog: {level: info}  # c\nlist:\n  - a  # c\n  - b\n", &[]),
        case("\"default_model\": x\n'backend': y\n", &[]),
        case("? default_model\n: old\n? backend\n: api\n", &[]),
        case("default_model:\nbackend:\n", &[]),
        case("default_model: ~\nbackend: null\n", &[]),
        case("default_model: 'it''s'\nbackend: \"a\\tb\"\n", &[]),
        // CRLF
        case("a: 1\r\nb:\r\n  c: 2\r\n", &[]),
        case("default_model: old\r\nstages:\r\n  plan:\r\n    model: x\r\n", two),
        // BOM, directives, markers
        case("\u{feff}default_model: old\n", &[]),
        case("\u{feff}# c\nx: 1\n", &[]),
        case("%YAML 1.1\n---\ndefault_model: old\n", &[]),
        case("%YAML 1.1\n%TAG !e! tag:example.com,2000:\n---\na: 1\n", &[]),
        case("---\ndefault_model: old\n...\n", &[]),
        case("--- # doc\na: 1\n", &[]),
        // flow
        case("{default_model: old, backend: api}\n", &[]),
        case("{default_model: old, backend: api}", plan),
        case("{a: 1,\n  b: [1, 2],  # c\n}\n", &[]),
        case("{}\n", two),
        case("{a, b: }\n", &[]),
        case("{a: {b: }, c: [d, {e: }]}\n", &[("plan", "/p")]),
        case("x: {stages: 1}\nstages: {plan: {model: a, t: 1}, other: {}}\n", two),
        // tags elsewhere
        case("port: !!int 8080\nraw: !!binary aGVsbG8=\nwhen: 2026-01-01\nratio: !!float 1\nname: !!str 123\nset: !!set {a, b}\nomap: !!omap [a: 1]\nx: ! y\n", &[]),
        case("a: !!map {b: 1}\nc: !!seq [1]\n", &[]),
        // anchors and aliases
        case("default_model: &base /models/old\njudge_model: *base\n", &[]),
        case("default_model: &base /models/old\njudge_model: *base\nfallback: [*base, x]\n", &[]),
        case("default_model: &m |\n  /models/old\njudge: *m\n", &[]),
        case("default_model: &m {name: &n small}\nj: *m\nk: *n\n", &[]),
        case("base: &b old\ndefault_model: *b\nbackend: *b\n", &[]),
        case("default_model: &m [&n small, 1]\nj: *m\nk: *n\n", &[]),
        case("a: &x 1\nb: &x 2\nc: *x\n", &[]),
        case("default_model: &x old\nb: *x\nc: &y 2\nd: *y\n", &[]),
        case("backend: &b api\nother: {x: *b}\n", &[]),
        case("defaults: &d {model: a, t: 1}\nstages:\n  plan: *d\n  eval: *d\n", plan),
        case("common: &c\n  temp: 0\nstages:\n  - {id: plan, <<: *c}\n", plan),
        case("defs: &p {id: plan, t: 1}\nstages: [*p, {id: other}]\n", plan),
        case("stages: &s\n  plan: {}\ncopy: *s\n", two),
        case("--- !!map\ndefault_model: old\n", plan),
        case("\u{feff}{default_model: old}\r\n", two),
        case("%TAG !e! tag:example.com,2000:\n---\na: !e!foo x\n", &[]),
        case("a: !!timestamp 2001-12-14t21:59:43.10-05:00\nb: !!float .inf\nc: 0o17\nd: 1_000\ne: 0x_1F\n", &[]),
        case("list:\n- - nested\n  - seq\n- key: value\n  other: 2\ndefault_model: x\n", two),
        case("default_model: old # c\nstages:\n  plan:\n    model: &m small\n  eval:\n    model: *m\n", plan),
        case("stages:\n  plan:\n    model: |\n      multi\n      line\n  eval: {}\n", plan),
        case("base: &b {x: 1}\n<<: *b\ndefault_model: old\n", &[]),
        case("base: &b {default_model: inherited}\n<<: *b\n", &[]),
        refused("default_model: &m\n  a: 1\n  b: 2\njudge: *m\n", &[], "an anchor on a multi-line mapping that is replaced"),
        // block scalars as old values
        case("default_model: |\n  /models/old\nbackend: >-\n  vllm\n  x\nz: 1\n", &[]),
        case("z: 1\ndefault_model: |+\n  keep\n\n\n", &[]),
        case("default_model: >\n  folded\n  text\n# after\n", &[]),
        case("default_model: !!str |\n  tagged\n", &[]),
        // nested stages
        case("stages:\n  plan:\n    model: small\n    temp: 0.2\n  eval:\n    model: big\n", two),
        case("stages:\n- id: plan\n  model: a\n- id: 2\n- {id: eval}\n- text\n", &[("plan", "/p"), ("eval", "/e"), ("2", "/2")]),
        case("stages:\n  - id: plan\n  - id: plan\n", plan),
        case("stages: []\n", plan),
        case("stages:\n", plan),
        case("stages: production\n", plan),
        case("stages: {}\n", &[("yes", "/y"), ("1", "/1"), ("a b", "/ab"), ("#x", "/h")]),
        case("stages:\n  1: {model: a}\n", &[("1", "/1")]),
        case("a: 1\n", &[("plan", "/1"), ("plan", "/2")]),
        // empty and false documents: upstream makes a new mapping
        case("", &[]),
        case("---\n...\n", &[]),
        case("# c\n...\n", &[]),
        case("# only a comment\n", plan),
        case("---\n", &[]),
        case("--- ~\n", &[]),
        case("null\n", &[]),
        case("[]\n", &[]),
        case("''\n", &[]),
        case("false\n", &[]),
        case("0\n", &[]),
        // upstream fails on these
        case("- a\n- b\n", &[]),
        case("just a string\n", &[]),
        case("42\n", &[]),
        case("a: 1\n---\nb: 2\n", &[]),
        case("---\n---\n", &[]),
        case("secret: !vault abc\n", &[]),
        case("obj: !!python/object:os.system x\n", &[]),
        case("? [a]\n: 1\n", &[]),
        case("a: =\n", &[]),
        case("stages:\n  plan: small\n", plan),
        case("stages:\n  plan:\n", plan),
        case("stages:\n  plan: [a]\n", plan),
        case("a: [1\n", &[]),
        case("a:\t1\n", &[]),
        case("a: b\tc\n", &[]),
        case("a: 1\n\t\nb: 2\n", &[]),
        case("a: \"x\ty\"  # c\td\nb: |\n  \tx\n", &[]),
        case("a: 'x\ty'\n# \t\n", &[]),
        case("a: x\u{7f}\n", &[]),
        case("a: x\u{9f}\n", &[]),
        case("a: x\u{85}y\n", &[]),
        refused("a: \"x\u{2028}y\"\n", &[], "a line break to YAML 1.1 only"),
        case("stages:\n- id: [x]\n", plan),
        // unsafe: duplicate keys (upstream keeps the last one silently)
        case("default_model: a\ndefault_model: b\n", &[]),
        case("x:\n  1: a\n  true: b\n", &[]),
        case("x: {\"k\": 1, k: 2}\n", &[]),
        refused("base: &b {stages: {plan: {model: a}}}\n<<: *b\n", plan, "stages only from a merge key"),
        refused("stages:\n  <<: {plan: {model: a}}\n", plan, "a stage only from a merge key"),
        refused("base: &b {model: m}\nstages:\n  plan: *b\n  eval:\n    <<: *b\n", plan, "an edited mapping merged elsewhere"),
        case("base: &b {model: m, t: 1}\nstages:\n  eval:\n    <<: *b\n", &[("eval", "/e")]),
    ];
    for path in [
        "yes", "1e3", "~", "#x", "a: b", "null", "0x10", "'q'", "\"d\"", "a\\b", "tab\t", "nl\nx", "é", "- x", "[1]",
        "&a", "*a", "!t", "%x", "", ".", "//srv", "///srv", "../x/.", "\u{85}", "\u{2028}", "\u{7f}", "x\u{0}",
    ] {
        let mut c = case("default_model: old\nstages: {plan: {}}\n", &[]);
        c.stages = vec![("plan".into(), path.into())];
        c.model = path.into();
        cases.push(c);
    }
    for backend in ["transformers", "api"] {
        let mut c = case("backend: vllm\n", &[]);
        c.backend = backend;
        cases.push(c);
    }
    cases
}

/// A config built from parts: entries (each a key and a value of some style), comments,
/// blank lines, line endings, a BOM, directives and markers.
fn config_from_parts() -> impl Strategy<Value = (String, Vec<(String, String)>)> {
    let entry = prop_oneof![
        Just("default_model: /models/old"),
        Just("default_model: \"quoted\"  # c"),
        Just("default_model: &base /models/old\njudge_model: *base"),
        Just("default_model: |\n  block\n"),
        Just("default_model:\n  - a\n  - b"),
        Just("default_model:"),
        Just("'default_model': x"),
        Just("backend: api"),
        Just("backend: &be vllm\nother_backend: *be"),
        Just("stages:\n  plan:\n    model: small\n    temp: 0"),
        Just("stages: {plan: {model: small}, eval: {}}"),
        Just("stages:\n- id: plan\n  model: a\n- {id: eval}"),
        Just("stages:"),
        Just("stages: []"),
        Just("log: {level: info}"),
        Just("list:\n- 1\n- two"),
        Just("port: !!int 8080"),
        Just("when: 2026-12-01"),
        Just("flag: yes"),
        Just("text: >\n  folded\n  lines\n"),
        Just("nested:\n  deeper:\n    deepest: [1, {a: b}]"),
        Just("# a comment line"),
        Just(""),
    ];
    let stages = prop_oneof![
        Just(vec![]),
        Just(vec![("plan", "/models/plan")]),
        Just(vec![("plan", "/p"), ("new", "./n//")]),
        Just(vec![("eval", "yes")]),
    ];
    (
        prop::collection::vec(entry, 0..7),
        prop_oneof![
            Just(""),
            Just("\u{feff}"),
            Just("%YAML 1.1\n---\n"),
            Just("---\n"),
            Just("# head\n")
        ],
        prop_oneof![Just(""), Just("...\n"), Just("# tail\n")],
        any::<bool>(),
        stages,
    )
        .prop_map(|(entries, head, tail, crlf, stages)| {
            let mut text = format!("{head}{}\n{tail}", entries.join("\n"));
            if crlf {
                text = text.replace('\n', "\r\n");
            }
            (
                text,
                stages.into_iter().map(|(s, p)| (s.to_owned(), p.to_owned())).collect(),
            )
        })
}

/// Runs each case through deploy-gate and the oracle; returns the failures.
fn check_against_oracle(cases: &[Case]) -> Vec<String> {
    check_with_oracle(cases, true)
}

/// As [`check_against_oracle`]; with `refusals_too` false, a refusal is never a failure (for
/// mangled configs, where the two parsers' syntax errors differ).
fn check_with_oracle(cases: &[Case], refusals_too: bool) -> Vec<String> {
    let results: Vec<Result<String, String>> = cases
        .iter()
        .map(|c| {
            let change = Change {
                model_path: &c.model,
                backend: c.backend,
                stage_models: &c.stages,
            };
            deploy_config(c.before.as_bytes(), &change)
                .map(|b| String::from_utf8(b).expect("UTF-8 out"))
                .map_err(|e| e.to_string())
        })
        .collect();
    let request = json!({"configs": cases.iter().zip(&results).map(|(c, r)| json!({
        "before": c.before, "after": r.as_ref().ok(), "model": c.model, "backend": c.backend, "stages": c.stages,
    })).collect::<Vec<_>>()});
    let verdicts = oracle(&request);
    let deployed = results.iter().filter(|r| r.is_ok()).count();
    eprintln!("{deployed} of {} configs deployed, the others refused", cases.len());
    let mut failures = Vec::new();
    for ((c, r), v) in cases.iter().zip(&results).zip(&verdicts) {
        let upstream_ok = v["upstream_ok"].as_bool().unwrap();
        let duplicates = v["duplicates"].as_bool().unwrap();
        let problem = match r {
            Ok(after) if !upstream_ok => Some(format!(
                "deployed, but upstream fails ({}); after: {after:?}",
                v["upstream_error"]
            )),
            Ok(_) if duplicates => Some("deployed a config with duplicate keys".to_owned()),
            Ok(_) if c.unsafe_because.is_some() => {
                Some(format!("deployed, expected a refusal ({})", c.unsafe_because.unwrap()))
            }
            Ok(after) => v["difference"]
                .as_str()
                .map(|d| format!("loads differently from upstream's change: {d}; after: {after:?}")),
            Err(e) if refusals_too && upstream_ok && !duplicates && c.unsafe_because.is_none() => {
                Some(format!("refused ({e}), but upstream deploys it"))
            }
            Err(_) => None,
        };
        if let Some(p) = problem {
            failures.push(format!(
                "{:?} (model {:?}, stages {:?}): {p}",
                c.before, c.model, c.stages
            ));
        }
    }
    failures
}

#[test]
fn the_corpus_loads_in_pyyaml_as_upstreams_change() {
    let cases = corpus();
    let failures = check_against_oracle(&cases);
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn generated_configs_load_in_pyyaml_as_upstreams_change_and_edits_are_idempotent() {
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: 400,
            ..Config::default()
        },
        TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
    );
    let seen = std::cell::RefCell::new(Vec::new());
    runner
        .run(&config_from_parts(), |(text, stages)| {
            let change = Change {
                model_path: "./models//new/",
                backend: "api",
                stage_models: &stages,
            };
            if let Ok(after) = deploy_config(text.as_bytes(), &change) {
                // Deploying the same change again changes nothing.
                let again = deploy_config(&after, &change)
                    .map_err(|e| TestCaseError::fail(format!("{e}: {:?}", String::from_utf8_lossy(&after))))?;
                prop_assert_eq!(String::from_utf8_lossy(&again), String::from_utf8_lossy(&after));
                // Every comment line is still there.
                for line in text.lines().filter(|l| l.trim_start().starts_with('#')) {
                    prop_assert!(String::from_utf8_lossy(&after).contains(line), "lost {:?}", line);
                }
            }
            seen.borrow_mut().push(Case {
                before: text,
                model: "./models//new/".into(),
                backend: "api",
                stages,
                unsafe_because: None,
            });
            Ok(())
        })
        .unwrap();
    let cases = seen.into_inner();
    let failures = check_against_oracle(&cases);
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Strings made of path pieces, deterministic.
fn path_strings() -> Vec<String> {
    let pieces = [
        "a", "b", ".", "..", "/", "//", "x.y", ".e", "é", " ", "-", "~", "a.", "yml", ".yaml",
    ];
    let mut out = vec![String::new()];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..3000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let n = (state % 7) as usize;
        let mut s = String::new();
        let mut r = state;
        for _ in 0..n {
            s.push_str(pieces[(r % pieces.len() as u64) as usize]);
            r /= pieces.len() as u64;
        }
        out.push(s);
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn paths_and_backup_names_are_pythons() {
    let paths = path_strings();
    let verdicts = oracle(&json!({ "paths": paths }));
    let mut failures = Vec::new();
    for (p, v) in paths.iter().zip(&verdicts) {
        if normalize_model_path(p) != v[0].as_str().unwrap() {
            failures.push(format!(
                "str(Path({p:?})) = {}, deploy-gate {:?}",
                v[0],
                normalize_model_path(p)
            ));
        }
        if let Some(backup) = v[1].as_str() {
            if backup_file_name(p) != backup {
                failures.push(format!(
                    "with_suffix({p:?}) = {backup:?}, deploy-gate {:?}",
                    backup_file_name(p)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {}:\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n")
    );
}

fn deploy(config: &str, model: &str, stages: &[(&str, &str)]) -> Result<String, String> {
    let stages: Vec<(String, String)> = stages.iter().map(|(s, p)| (s.to_string(), p.to_string())).collect();
    let change = Change {
        model_path: model,
        backend: "vllm",
        stage_models: &stages,
    };
    deploy_config(config.as_bytes(), &change)
        .map(|b| String::from_utf8(b).unwrap())
        .map_err(|e| e.to_string())
}

/// Item 9: an anchored `default_model` used elsewhere, and a top-level sequence.
#[test]
fn item_9_no_config_that_no_longer_loads_and_no_deploy_into_a_sequence() {
    let config = "default_model: &base /models/old\njudge_model: *base\n";
    let after = deploy(config, "/models/new", &[]).expect("deploys");
    assert_eq!(
        after,
        "default_model: \"/models/new\"\njudge_model: &base /models/old\nbackend: \"vllm\"\n"
    );
    let mut c = case(config, &[]);
    c.model = "/models/new".into();
    let failures = check_against_oracle(&[c]);
    assert!(failures.is_empty(), "{failures:?}");

    let got = deploy("- default_model: a\n- b\n", "/m", &[]);
    assert!(
        got.as_ref()
            .is_err_and(|e| e.contains("line 1, column 1") && e.contains("sequence")),
        "{got:?}"
    );
}

/// Item 10: a byte-order mark, a `%YAML 1.1` directive, a flow mapping.
#[test]
fn item_10_configs_upstream_deploys_are_deployed() {
    let cases = [
        (
            "\u{feff}default_model: old\nbackend: api\n",
            "\u{feff}default_model: \"/n\"\nbackend: \"vllm\"\n",
        ),
        (
            "%YAML 1.1\n---\ndefault_model: old\n",
            "%YAML 1.1\n---\ndefault_model: \"/n\"\nbackend: \"vllm\"\n",
        ),
        (
            "{default_model: old, backend: api}\n",
            "{default_model: \"/n\", backend: \"vllm\"}\n",
        ),
    ];
    for (before, want) in cases {
        assert_eq!(deploy(before, "/n", &[]).as_deref(), Ok(want), "{before:?}");
    }
    let corpus: Vec<Case> = cases
        .iter()
        .map(|(b, _)| Case {
            model: "/n".into(),
            ..case(b, &[])
        })
        .collect();
    let failures = check_against_oracle(&corpus);
    assert!(failures.is_empty(), "{failures:?}");
}

/// Item 11: upstream's backup name, path normalisation and stage map.
#[test]
fn item_11_names_and_values_are_upstreams() {
    assert_eq!(backup_file_name("serving.yml"), "serving.yaml.backup");
    assert_eq!(backup_file_name("gateway"), "gateway.yaml.backup");
    assert_eq!(normalize_model_path("./models/new/"), "models/new");
    assert_eq!(normalize_model_path("models//new"), "models/new");
    assert_eq!(
        deploy("default_model: a\nstages:\n  plan:\n    model: small\n", "./models//new/", &[("plan", "/p"), ("eval", "/e")]).as_deref(),
        Ok("default_model: \"models/new\"\nstages:\n  plan:\n    model: \"/p\"\n  eval:\n    model: \"/e\"\nbackend: \"vllm\"\n")
    );
    let c = Case {
        stages: vec![("plan".into(), "/p".into()), ("eval".into(), "/e".into())],
        ..case("default_model: a\nstages:\n  plan:\n    model: small\n", &[])
    };
    let failures = check_against_oracle(&[c]);
    assert!(failures.is_empty(), "{failures:?}");
}

/// Configs mangled at random (pieces of YAML syntax inserted, bytes cut): whatever is deployed
/// loads in PyYAML as upstream's change; nothing is deployed that upstream's loader fails on.
/// `MANGLED_CASES=N MANGLED_SEED=S cargo test --test yaml_oracle mangled` runs a longer search.
#[test]
fn mangled_configs_are_deployed_only_as_upstream_would() {
    let count: usize = std::env::var("MANGLED_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000);
    let seed: u64 = std::env::var("MANGLED_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x2545_f491_4f6c_dd1d);
    let seeds = [
        "# c\ndefault_model: &b old  # x\njudge: *b\nstages:\n  plan:\n    model: a\n- x\n",
        "{default_model: old, backend: api, stages: [{id: plan}]}\n",
        "\u{feff}%YAML 1.1\n---\nx: |\n  lit\n\ny: \"q\"\n...\n",
        "stages:\n- id: plan\n  model: a\n- {id: eval}\n",
        "a: &x [1, {b: *x}]\n? c\n: d\n",
        "base: &b {model: m, t: 1}\r\nstages:\r\n  plan: *b\r\n  eval:\r\n    <<: *b\r\ndefault_model: |-\r\n  old\r\n",
        "--- !!map\n\"default_model\": 'old'\nlist: [a, b, {c: d}]\nstages: []\n...\n",
    ];
    let pieces = [
        "\n",
        " ",
        "  ",
        ":",
        "- ",
        "#",
        "&a",
        "*a",
        "!!str",
        "{",
        "}",
        "[",
        "]",
        ",",
        "?",
        "|",
        ">",
        "'",
        "\"",
        "---",
        "...",
        "default_model",
        "stages",
        "id",
        "plan",
        "model",
        "\t",
        "\r\n",
        "~",
        "é",
        "<<",
    ];
    let mut state: u64 = seed.max(1);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut cases = Vec::new();
    for _ in 0..count {
        let mut s = seeds[(next() % seeds.len() as u64) as usize].to_owned();
        for _ in 0..next() % 4 + 1 {
            let at = (0..=(next() as usize) % (s.len() + 1))
                .rev()
                .find(|&p| s.is_char_boundary(p))
                .unwrap();
            if next() % 3 == 0 {
                let end = (at + (next() % 5) as usize).min(s.len());
                let end = (end..=s.len()).find(|&p| s.is_char_boundary(p)).unwrap();
                s.replace_range(at..end, "");
            } else {
                s.insert_str(at, pieces[(next() % pieces.len() as u64) as usize]);
            }
        }
        let stages = if next() % 2 == 0 {
            vec![("plan", "/p"), ("eval", "yes")]
        } else {
            vec![]
        };
        cases.push(Case {
            model: "./m//x/".into(),
            backend: "api",
            ..case(&s, &stages)
        });
    }
    let failures = check_with_oracle(&cases, false);
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
