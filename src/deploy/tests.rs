use super::*;

fn change<'a>(model: &'a str, backend: &'a str, stages: &'a [(String, String)]) -> Change<'a> {
    Change {
        model_path: model,
        backend,
        stage_models: stages,
    }
}

fn deploy(config: &str, model: &str, backend: &str) -> Result<String, ConfigError> {
    deploy_config(config.as_bytes(), &change(model, backend, &[])).map(|b| String::from_utf8(b).unwrap())
}

fn deploy_stages(config: &str, stages: &[(&str, &str)]) -> Result<String, ConfigError> {
    let stages: Vec<(String, String)> = stages.iter().map(|(s, p)| (s.to_string(), p.to_string())).collect();
    deploy_config(config.as_bytes(), &change("/m", "vllm", &stages)).map(|b| String::from_utf8(b).unwrap())
}

#[test]
fn replaces_values_in_place_and_keeps_every_other_byte() {
    let config = "# gateway config\nbackend: transformers  # was vllm\ndefault_model:\n  /models/old\nstages:\n  plan:\n    model: small\n\nlog_level: info\n";
    let got = deploy(config, "/models/new", "vllm").unwrap();
    assert_eq!(
        got,
        "# gateway config\nbackend: \"vllm\"  # was vllm\ndefault_model:\n  \"/models/new\"\nstages:\n  plan:\n    model: small\n\nlog_level: info\n"
    );
}

#[test]
fn a_quoted_value_is_replaced_up_to_its_closing_quote_keeping_the_comment_after_it() {
    // The parser's span of a quoted scalar can run on over the comment after it: a second
    // deploy (over the quoted values the first one wrote) must keep the comment too.
    for config in [
        "default_model: \"models/old\"  # the live one\nbackend: 'vl''lm'   # was\nport: 8080\n",
        "default_model: \"a \\\" b\"  # the live one\nbackend: 'vl''lm'   # was\nport: 8080\n",
    ] {
        let got = deploy(config, "models/new", "vllm").unwrap();
        assert_eq!(
            got,
            "default_model: \"models/new\"  # the live one\nbackend: \"vllm\"   # was\nport: 8080\n"
        );
        assert_eq!(deploy(&got, "models/new", "vllm").unwrap(), got);
    }
}

#[test]
fn adds_missing_keys_in_block_style_with_the_files_line_ending() {
    assert_eq!(
        deploy("a: 1\r\nb: [1, 2]  # c\r\n", "/m", "api").unwrap(),
        "a: 1\r\nb: [1, 2]  # c\r\ndefault_model: \"/m\"\r\nbackend: \"api\"\r\n"
    );
    assert_eq!(
        deploy("x: 1", "/m", "api").unwrap(),
        "x: 1\ndefault_model: \"/m\"\nbackend: \"api\"\n"
    );
    // After the last entry, before the comments and the document end that follow it.
    assert_eq!(
        deploy("---\nx:\n  y: 1\n# trailing\n...\n", "/m", "api").unwrap(),
        "---\nx:\n  y: 1\ndefault_model: \"/m\"\nbackend: \"api\"\n# trailing\n...\n"
    );
}

#[test]
fn empty_and_comment_only_configs_become_a_mapping_as_upstream_does() {
    // upstream: `yaml.safe_load(f) or {}`
    assert_eq!(
        deploy("", "/m", "api").unwrap(),
        "default_model: \"/m\"\nbackend: \"api\"\n"
    );
    assert_eq!(
        deploy("# nothing yet", "/m", "api").unwrap(),
        "# nothing yet\ndefault_model: \"/m\"\nbackend: \"api\"\n"
    );
    assert_eq!(
        deploy("---\n", "/m", "api").unwrap(),
        "---\ndefault_model: \"/m\"\nbackend: \"api\"\n"
    );
    assert_eq!(
        deploy("--- ~\n", "/m", "api").unwrap(),
        "--- {default_model: \"/m\", backend: \"api\"}\n"
    );
    assert_eq!(
        deploy("[]\n", "/m", "api").unwrap(),
        "{default_model: \"/m\", backend: \"api\"}\n"
    );
}

#[test]
fn nested_keys_of_the_same_name_are_left_alone() {
    let config = "stages:\n  s1:\n    default_model: keep\ndefault_model: old\n";
    assert_eq!(
        deploy(config, "/new", "transformers").unwrap(),
        "stages:\n  s1:\n    default_model: keep\ndefault_model: \"/new\"\nbackend: \"transformers\"\n"
    );
}

#[test]
fn a_block_collection_value_is_replaced_whole() {
    assert_eq!(
        deploy("default_model:\n- a\n- b\nnext: 1\nbackend: api\n", "x", "api").unwrap(),
        "default_model: \"x\"\nnext: 1\nbackend: \"api\"\n"
    );
    assert_eq!(
        deploy(
            "default_model:  # the model\n  name: a\n  rev: 2\nbackend: api\n",
            "x",
            "api"
        )
        .unwrap(),
        "default_model:  # the model\n  \"x\"\nbackend: \"api\"\n"
    );
}

#[test]
fn block_scalars_as_old_values() {
    assert_eq!(
        deploy(
            "default_model: |\n  /models/old\n\nbackend: >-\n  vllm\n  x\nz: 1\n",
            "/n",
            "api"
        )
        .unwrap(),
        "default_model: \"/n\"\n\nbackend: \"api\"\nz: 1\n"
    );
    assert_eq!(
        deploy("z: 1\ndefault_model: |+\n  keep\n\n", "/n", "api").unwrap(),
        "z: 1\ndefault_model: \"/n\"\n\nbackend: \"api\"\n"
    );
}

// Item 9: the old reader wrote a config that no longer parsed (the alias lost its anchor).
#[test]
fn an_anchor_on_a_replaced_value_moves_to_its_first_alias() {
    let config = "default_model: &base /models/old  # shared\njudge_model: *base\nfallback: *base\n";
    assert_eq!(
        deploy(config, "/models/new", "api").unwrap(),
        "default_model: \"/models/new\"  # shared\njudge_model: &base /models/old\nfallback: *base\nbackend: \"api\"\n"
    );
    // A tag and a quoted old value go along.
    assert_eq!(
        deploy("backend: &b !!str 'api'\nother: [*b, x]\n", "/m", "vllm").unwrap(),
        "backend: \"vllm\"\nother: [&b !!str 'api', x]\ndefault_model: \"/m\"\n"
    );
    // A multi-line string moves double-quoted.
    assert_eq!(
        deploy("default_model: &m |\n  line one\n  two\njudge: *m\n", "/n", "api").unwrap(),
        "default_model: \"/n\"\njudge: &m \"line one\\ntwo\\n\"\nbackend: \"api\"\n"
    );
    // An anchor inside a replaced collection.
    assert_eq!(
        deploy("default_model: {name: &n small, rev: 1}\njudge: *n\n", "/n", "api").unwrap(),
        "default_model: \"/n\"\njudge: &n small\nbackend: \"api\"\n"
    );
    // An alias as the old value is simply replaced; the anchor stays.
    assert_eq!(
        deploy("base: &b old\ndefault_model: *b\n", "/n", "api").unwrap(),
        "base: &b old\ndefault_model: \"/n\"\nbackend: \"api\"\n"
    );
}

#[test]
fn an_anchor_that_cannot_move_is_refused() {
    let got = deploy("default_model: &m\n  a: 1\n  b: 2\njudge: *m\n", "/n", "api");
    assert!(
        matches!(
            got,
            Err(ConfigError::Unsupported {
                line: 1,
                column: 16,
                ..
            })
        ),
        "{got:?}"
    );
}

// Item 9: the old reader "deployed" into a top-level sequence; upstream fails on it.
#[test]
fn a_top_level_sequence_or_scalar_is_refused() {
    assert_eq!(
        deploy("- a\n- b\n", "/m", "api"),
        Err(ConfigError::NotAMapping {
            found: "a sequence",
            line: 1,
            column: 1
        })
    );
    assert_eq!(
        deploy("# c\n--- just a string\n", "/m", "api"),
        Err(ConfigError::NotAMapping {
            found: "a scalar",
            line: 2,
            column: 5
        })
    );
    assert_eq!(
        deploy("true\n", "/m", "api"),
        Err(ConfigError::NotAMapping {
            found: "a scalar",
            line: 1,
            column: 1
        })
    );
}

// Item 10: the old reader refused these valid configs.
#[test]
fn a_byte_order_mark_a_directive_and_a_flow_mapping_deploy() {
    assert_eq!(
        deploy("\u{feff}default_model: old\nbackend: api\n", "/n", "vllm").unwrap(),
        "\u{feff}default_model: \"/n\"\nbackend: \"vllm\"\n"
    );
    assert_eq!(
        deploy("\u{feff}x: 1\n", "/n", "vllm").unwrap(),
        "\u{feff}x: 1\ndefault_model: \"/n\"\nbackend: \"vllm\"\n"
    );
    assert_eq!(
        deploy("%YAML 1.1\n---\ndefault_model: old\n", "/n", "vllm").unwrap(),
        "%YAML 1.1\n---\ndefault_model: \"/n\"\nbackend: \"vllm\"\n"
    );
    assert_eq!(
        deploy("{default_model: old, backend: api}\n", "/n", "vllm").unwrap(),
        "{default_model: \"/n\", backend: \"vllm\"}\n"
    );
    assert_eq!(
        deploy("{a: 1,  # c\n b: [2]}\n", "/n", "vllm").unwrap(),
        "{a: 1,  # c\n b: [2], default_model: \"/n\", backend: \"vllm\"}\n"
    );
    assert_eq!(
        deploy("{a: 1,}", "/n", "api").unwrap(),
        "{a: 1, default_model: \"/n\", backend: \"api\",}"
    );
    assert_eq!(
        deploy("{}", "/n", "api").unwrap(),
        "{default_model: \"/n\", backend: \"api\"}"
    );
    assert_eq!(
        deploy("{a, default_model}", "/n", "api").unwrap(),
        "{a, default_model: \"/n\", backend: \"api\"}"
    );
    // After an empty value whose `:` ends the text so far, a blank before the `,` (libyaml
    // refuses `:,`; found by the deploy_config fuzz target, with bare CR line breaks).
    assert_eq!(
        deploy("{a1:\r#{c:\r}\n", "/n", "api").unwrap(),
        "{a1: , default_model: \"/n\", backend: \"api\"\r#{c:\r}\n"
    );
    assert_eq!(
        deploy("{a: }", "/n", "api").unwrap(),
        "{a: , default_model: \"/n\", backend: \"api\"}"
    );
}

#[test]
fn quoted_keys_tags_and_empty_values() {
    assert_eq!(
        deploy("\"default_model\": x\n'backend': y\n", "/n", "api").unwrap(),
        "\"default_model\": \"/n\"\n'backend': \"api\"\n"
    );
    assert_eq!(
        deploy(
            "? default_model\n: old\nport: !!int 8080\nraw: !!binary aGk=\nwhen: 2026-01-01\n",
            "/n",
            "api"
        )
        .unwrap(),
        "? default_model\n: \"/n\"\nport: !!int 8080\nraw: !!binary aGk=\nwhen: 2026-01-01\nbackend: \"api\"\n"
    );
    assert_eq!(
        deploy("default_model:\nbackend:  # c\n", "/n", "api").unwrap(),
        "default_model: \"/n\"\nbackend: \"api\"  # c\n"
    );
    // A key tagged as something else than a string is another key, as upstream sees it.
    assert_eq!(
        deploy("!!binary ZGVmYXVsdF9tb2RlbA==: x\n", "/n", "api")
            .unwrap()
            .lines()
            .count(),
        3
    );
}

#[test]
fn written_values_stay_strings() {
    for path in [
        "yes",
        "1e3",
        "~",
        "#x",
        "a: b",
        "null",
        "0x10",
        "'q'",
        "\"d\"",
        "a\\b",
        "tab\there",
        "line\nbreak",
        "\u{2028}",
        "é",
        "- x",
        "[1]",
        "&a",
        "*a",
        "!t",
        "%x",
        "@x",
        "`x",
        "x #y",
    ] {
        let got = deploy("default_model: old\n", path, "api").unwrap();
        let doc = tree::parse(&got).unwrap();
        let (_, v) = doc.get(doc.root.unwrap(), "default_model").unwrap();
        assert_eq!(
            doc.key_id(v),
            Some(format!("s:{}", normalize_model_path(path))),
            "{path:?} → {got}"
        );
    }
}

#[test]
fn refuses_what_it_cannot_edit_safely() {
    assert_eq!(
        deploy("a: 1\n---\nb: 2\n", "/m", "api"),
        Err(ConfigError::MultiDocument { line: 2, column: 1 })
    );
    assert_eq!(
        deploy("a: 1\n", "/m", "tensorrt"),
        Err(ConfigError::Backend("tensorrt".into()))
    );
    assert_eq!(
        deploy("default_model: a\nx: 1\ndefault_model: b\n", "/m", "api"),
        Err(ConfigError::DuplicateKey {
            key: "default_model".into(),
            line: 3,
            column: 1,
            first_line: 1,
            first_column: 1
        })
    );
    // Duplicates as upstream's loader sees them: 1, 0x1 and true are one key.
    assert!(matches!(
        deploy("n:\n  1: a\n  true: b\n", "/m", "api"),
        Err(ConfigError::DuplicateKey { line: 3, column: 3, .. })
    ));
    assert!(matches!(
        deploy("n: {\"a\": 1, a: 2}\n", "/m", "api"),
        Err(ConfigError::DuplicateKey { .. })
    ));
    assert_eq!(
        deploy("secret: !vault abc\n", "/m", "api"),
        Err(ConfigError::UnsupportedTag {
            tag: "!vault".into(),
            line: 1,
            column: 9
        })
    );
    assert_eq!(
        deploy("? [a, b]\n: 1\n", "/m", "api"),
        Err(ConfigError::UnhashableKey {
            found: "sequence",
            line: 1,
            column: 3
        })
    );
    assert!(matches!(
        deploy("a: [1\n", "/m", "api"),
        Err(ConfigError::Syntax { .. })
    ));
    assert!(matches!(
        deploy_config(b"a: \xff\n", &change("/m", "api", &[])),
        Err(ConfigError::NotUtf8 { line: 1, column: 4 })
    ));
    let deep = format!("a: {}{}\n", "[".repeat(210), "]".repeat(210));
    let got = deploy(&deep, "/m", "api");
    assert!(
        matches!(
            got,
            Err(ConfigError::Unsupported {
                line: 1,
                column: 203,
                ..
            })
        ),
        "{:?}",
        got.map(|_| ())
    );
    assert!(deploy("---\na: 1\n...\n", "/m", "api").is_ok());
}

#[test]
fn the_stage_map_as_upstream_applies_it() {
    // A mapping of stages: `model` set on each named stage; a missing stage is made.
    assert_eq!(
        deploy_stages("default_model: a\nstages:\n  plan:\n    model: small  # c\n    temp: 0\n", &[("plan", "/p"), ("eval", "/e")]).unwrap(),
        "default_model: \"/m\"\nstages:\n  plan:\n    model: \"/p\"  # c\n    temp: 0\n  eval:\n    model: \"/e\"\nbackend: \"vllm\"\n"
    );
    assert_eq!(
        deploy_stages("stages: {plan: {temp: 0}}\n", &[("plan", "/p"), ("yes", "/y")]).unwrap(),
        "stages: {plan: {temp: 0, model: \"/p\"}, \"yes\": {model: \"/y\"}}\ndefault_model: \"/m\"\nbackend: \"vllm\"\n"
    );
    // A sequence of stages: items matched by `id`; unnamed ones and non-string ids left alone.
    assert_eq!(
        deploy_stages("stages:\n- id: plan\n  model: a\n- id: 1\n- {id: eval}\n- just text\n", &[("plan", "/p"), ("eval", "/e"), ("1", "/1"), ("gone", "/g")]).unwrap(),
        "stages:\n- id: plan\n  model: \"/p\"\n- id: 1\n- {id: eval, model: \"/e\"}\n- just text\ndefault_model: \"/m\"\nbackend: \"vllm\"\n"
    );
    // Missing, null, empty or a scalar: `stages` becomes a new mapping.
    assert_eq!(
        deploy_stages("a: 1\n", &[("plan", "/p")]).unwrap(),
        "a: 1\ndefault_model: \"/m\"\nbackend: \"vllm\"\nstages:\n  plan:\n    model: \"/p\"\n"
    );
    assert_eq!(
        deploy_stages("stages:\n", &[("plan", "/p")]).unwrap(),
        "stages: {plan: {model: \"/p\"}}\ndefault_model: \"/m\"\nbackend: \"vllm\"\n"
    );
    assert_eq!(
        deploy_stages("stages: []\n", &[("plan", "/p")]).unwrap(),
        "stages: {plan: {model: \"/p\"}}\ndefault_model: \"/m\"\nbackend: \"vllm\"\n"
    );
    assert_eq!(
        deploy_stages("", &[("plan", "/p")]).unwrap(),
        "default_model: \"/m\"\nbackend: \"vllm\"\nstages:\n  plan:\n    model: \"/p\"\n"
    );
    // Stage paths are written as given (upstream normalises only `default_model`).
    assert!(deploy_stages("stages: {}\n", &[("plan", "./p/")])
        .unwrap()
        .contains("\"./p/\""));
    // A stage named twice: the last path (a dict).
    assert_eq!(
        deploy_stages("stages: {}\n", &[("plan", "/1"), ("plan", "/2")]).unwrap(),
        "stages: {plan: {model: \"/2\"}}\ndefault_model: \"/m\"\nbackend: \"vllm\"\n"
    );
}

#[test]
fn stages_shared_through_aliases_change_everywhere_as_in_python() {
    // Upstream mutates the one dict both keys refer to.
    assert_eq!(
        deploy_stages("common: &c {temp: 0}\nstages:\n  plan: *c\n  eval: *c\n", &[("plan", "/p")]).unwrap(),
        "common: &c {temp: 0, model: \"/p\"}\nstages:\n  plan: *c\n  eval: *c\ndefault_model: \"/m\"\nbackend: \"vllm\"\n"
    );
}

#[test]
fn the_stage_map_refuses_what_upstream_fails_on() {
    assert_eq!(
        deploy_stages("stages:\n  plan: small\n", &[("plan", "/p")]),
        Err(ConfigError::StageNotMapping {
            stage: "plan".into(),
            found: "a scalar",
            line: 2,
            column: 9
        })
    );
    assert!(matches!(
        deploy_stages("stages:\n  plan:\n", &[("plan", "/p")]),
        Err(ConfigError::StageNotMapping { found: "null", .. })
    ));
    assert!(matches!(
        deploy_stages("stages:\n- id: [a]\n", &[("plan", "/p")]),
        Err(ConfigError::UnhashableKey { line: 2, column: 7, .. })
    ));
    assert!(matches!(
        deploy_stages("base: &b {stages: {}}\n<<: *b\n", &[("plan", "/p")]),
        Err(ConfigError::Unsupported { .. })
    ));
}

// Item 11: upstream writes `str(Path(p))`.
#[test]
fn model_paths_are_normalised_as_python_does() {
    for (given, want) in [
        ("./models/new/", "models/new"),
        ("models//new", "models/new"),
        ("a/./b", "a/b"),
        ("//srv/m", "//srv/m"),
        ("///srv/m", "/srv/m"),
        ("../m/..", "../m/.."),
        ("", "."),
        ("./", "."),
        ("/", "/"),
        ("/models/new", "/models/new"),
    ] {
        assert_eq!(normalize_model_path(given), want, "{given:?}");
    }
    assert_eq!(
        deploy("default_model: a\n", "./models//new/", "api").unwrap(),
        "default_model: \"models/new\"\nbackend: \"api\"\n"
    );
}

// Item 11: upstream's backup name, which its rollback looks for.
#[test]
fn backup_names_are_pythons_with_suffix() {
    for (given, want) in [
        ("serving.yml", "serving.yaml.backup"),
        ("gateway", "gateway.yaml.backup"),
        ("config.yaml", "config.yaml.backup"),
        ("a.b.c", "a.b.yaml.backup"),
        (".env", ".env.yaml.backup"),
        ("name.", "name..yaml.backup"),
        ("..", "...yaml.backup"),
        ("dir/x.yml", "dir/x.yaml.backup"),
        ("dir.d/x", "dir.d/x.yaml.backup"),
    ] {
        assert_eq!(backup_file_name(given), want, "{given:?}");
    }
    assert_eq!(legacy_backup_file_name("serving.yml"), "serving.yml.backup");
}

#[test]
fn what_yaml_1_1_and_1_2_readers_read_differently_is_refused() {
    for (config, line, column) in [
        ("a:\t1\n", 1, 4),
        ("a: b\tc\n", 1, 5),
        ("a: &x*y 1\n", 1, 4),
        ("a: &x[1]\n", 1, 4),
        ("a: {b: c?d}\n", 1, 8),
        ("a: [?x]\n", 1, 5),
        ("a: x\u{85}y\n", 1, 5),
        ("a: x\u{7f}\n", 1, 5),
        ("{a\n: 1}\n", 1, 2),
        (": 1\n", 1, 1),
        ("\n\u{feff}a: 1\n", 2, 1),
        ("%YAML.1\n---\na: 1\n", 1, 1),
        ("a: |\n  no final line break", 1, 4),
        ("a: !!str [1]\n", 1, 4),
        ("<<: scalar\n", 1, 5),
        ("a: <<\n", 1, 4),
        ("a: 'q'\t\n", 1, 7),
        ("a: [!!str]\n", 1, 5),
        ("{a\rb: 1}\n", 1, 2),
    ] {
        let got = deploy(config, "/m", "api");
        let at = match &got {
            Err(ConfigError::Syntax { line, column, .. })
            | Err(ConfigError::Unsupported { line, column, .. })
            | Err(ConfigError::UnsupportedTag { line, column, .. }) => (*line, *column),
            other => panic!("{config:?}: {other:?}"),
        };
        assert_eq!(at, (line, column), "{config:?}: {got:?}");
    }
    // Tabs inside quoted and block scalars and in comments are content.
    assert!(deploy("a: \"x\ty\"  # c\td\nb: |\n  \tx\n", "/m", "api").is_ok());
}

#[test]
fn the_locator_agrees_with_counting() {
    let text = "\u{feff}a: é\r\n  - [x, \"ü\"]\n\n# c\nb: 1";
    let mut offsets: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    offsets.push(text.len());
    let locator = doc::Locator::new(text, &offsets);
    for &at in &offsets {
        assert_eq!(locator.at(at), doc::line_column(text, at), "{at}");
    }
}

#[test]
fn a_mapping_merged_elsewhere_is_not_edited() {
    // Upstream changes `plan` (the dict `base` loads as); `eval` got a copy of its entries.
    let got = deploy_stages(
        "base: &b {model: m}\nstages:\n  plan: *b\n  eval:\n    <<: *b\n",
        &[("plan", "/p")],
    );
    assert!(
        matches!(got, Err(ConfigError::Unsupported { line: 1, column: 7, .. })),
        "{got:?}"
    );
    // Setting a key on the mapping that merges is fine: its own key wins over the merged one.
    assert_eq!(
        deploy_stages("base: &b {model: m}\nstages:\n  eval:\n    <<: *b\n", &[("eval", "/e")]).unwrap(),
        "base: &b {model: m}\nstages:\n  eval:\n    <<: *b\n    model: \"/e\"\ndefault_model: \"/m\"\nbackend: \"vllm\"\n"
    );
}

#[test]
fn a_config_over_the_size_limit_is_refused_before_it_is_parsed() {
    let big = format!("a: [{}]\n", "1, ".repeat(MAX_CONFIG_BYTES / 3));
    assert_eq!(
        deploy(&big, "/n", "api"),
        Err(ConfigError::TooLarge { bytes: big.len() })
    );
    let fits = format!("a: \"{}\"\n", "x".repeat(MAX_CONFIG_BYTES - 20));
    assert!(deploy(&fits, "/n", "api").is_ok());
}

#[test]
fn a_collection_that_holds_itself_is_freed_after_the_check() {
    // `&a [*a]` is a sequence inside itself: a cycle of the check's shared values (found
    // leaking by the deploy_config fuzz target under LeakSanitizer).
    let doc = tree::parse("a: &a [*a]\nb: &m {self: *m}\n").unwrap();
    let loaded = check::load(&doc);
    let Some(check::Value::Map(root)) = loaded.root.clone() else {
        panic!("a mapping")
    };
    let inner: Vec<std::rc::Weak<dyn std::any::Any>> = root
        .borrow()
        .items
        .iter()
        .filter_map(|(_, v)| match v {
            check::Value::Seq(c) => Some(std::rc::Rc::downgrade(c) as std::rc::Weak<dyn std::any::Any>),
            check::Value::Map(c) => Some(std::rc::Rc::downgrade(c) as std::rc::Weak<dyn std::any::Any>),
            check::Value::Scalar(_) => None,
        })
        .collect();
    assert_eq!(inner.len(), 2);
    drop(root);
    drop(loaded);
    assert!(
        inner.iter().all(|w| w.upgrade().is_none()),
        "a self-holding collection outlived the check"
    );
    // And the edit itself goes through.
    assert!(deploy("a: &a [*a]\nb: &m {self: *m}\n", "/n", "api").is_ok());
}
