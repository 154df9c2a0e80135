//! Two physical references for the benchmark, on the same file: a plain newline count (memchr)
//! and a full typed `serde_json` parse of every line (the cost of reading every field).
//! `cargo run --release --example bench_refs -- FILE`

use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Read;
use std::time::Instant;

/// Every field of both entry shapes, typed as a straightforward reader would.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Entry {
    pipeline_id: Option<Value>,
    template_id: Option<String>,
    stage_id: Option<String>,
    stage_type: Option<String>,
    stage_name: Option<String>,
    input: Option<Value>,
    output: Option<Value>,
    reward: Option<f64>,
    verdict: Option<String>,
    is_complete: Option<Value>,
    error: Option<Value>,
    step_count: Option<i64>,
    episode_reward: Option<f64>,
    state_snapshot: Option<Value>,
    #[serde(flatten)]
    rest: HashMap<String, Value>,
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: bench_refs FILE");
    let mut f = std::fs::File::open(&path).unwrap();
    let size = f.metadata().unwrap().len() as f64;
    let mut buf = vec![0u8; 4 << 20];
    let t = Instant::now();
    let mut lines = 0usize;
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        lines += memchr::memchr_iter(b'\n', &buf[..n]).count();
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "newline count (memchr): {lines} lines, {:.2} s, {:.0} MB/s",
        secs,
        size / 1e6 / secs
    );

    let text = std::fs::read(&path).unwrap();
    let t = Instant::now();
    let (mut ok, mut bad) = (0usize, 0usize);
    for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        match serde_json::from_slice::<Entry>(line) {
            Ok(_) => ok += 1,
            Err(_) => bad += 1,
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "typed serde_json parse of every line: {ok} parsed, {bad} not, {:.2} s, {:.0} MB/s (one core)",
        secs,
        size / 1e6 / secs
    );
}
