//! Known answers for the betting confidence sequence, from confseq itself:
//! `tests/fixtures/stats/sequential-known-answers.json`, written by
//! `scripts/sequential-known-answers.py` (bisection on confseq's own capital process, and
//! confseq's `betting_cs` on its grid of 1,000 breaks). Every look's bounds must match the exact
//! ones to 1e-9 and lie in the grid's bracket.

use deploy_gate::stats::BettingCs;
use serde_json::Value;
use std::path::Path;

fn fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stats/sequential-known-answers.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn betting_bounds_match_confseq() {
    let doc = fixture();
    let step = 1.0 / doc["breaks"].as_f64().unwrap() + 1e-12;
    let (mut looks, mut worst) = (0, 0.0f64);
    let mut failures = Vec::new();
    for seq in doc["sequences"].as_array().unwrap() {
        let name = seq["name"].as_str().unwrap();
        let alpha = seq["alpha"].as_f64().unwrap();
        let x: Vec<f64> = seq["x"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let mut cs = BettingCs::new(alpha);
        let mut rows = seq["looks"].as_array().unwrap().iter().peekable();
        for (i, &xi) in x.iter().enumerate() {
            cs.push(xi);
            let Some(row) = rows.next_if(|r| r["t"].as_u64() == Some(i as u64 + 1)) else {
                continue;
            };
            looks += 1;
            let f = |k: &str| row[k].as_f64().unwrap();
            let (l, u) = cs.bounds();
            for (got, want, side) in [(l, f("lower"), "lower"), (u, f("upper"), "upper")] {
                worst = worst.max((got - want).abs());
                if (got - want).abs() > 1e-9 {
                    failures.push(format!("{name} t={} {side}: {got} vs confseq {want}", i + 1));
                }
            }
            let (gl, gu) = (f("grid_lower"), f("grid_upper"));
            let lower_in = (gl == 0.0 && l <= step) || (gl < l && l <= gl + step);
            let upper_in = (gu == 1.0 && u >= 1.0 - step) || (gu - step <= u && u < gu);
            if !lower_in || !upper_in {
                failures.push(format!(
                    "{name} t={}: [{l}, {u}] outside confseq's grid [{gl}, {gu}]",
                    i + 1
                ));
            }
        }
        assert!(rows.next().is_none(), "{name}: looks past the sequence");
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(looks > 700, "{looks}");
    eprintln!("{looks} looks, worst difference from confseq {worst:e}");
}
