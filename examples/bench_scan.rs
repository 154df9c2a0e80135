//! Where pass 1 spends its time, on one core with the log in memory: the UTF-8 check, the
//! newline search, the fast path skipping every value, and the whole segment scan; or, with
//! `--verdicts`, the reading of one verdict file.
//! `cargo run --release --example bench_scan -- FILE [MB] [ROUNDS]`
//! `cargo run --release --example bench_scan -- --verdicts FILE`
use deploy_gate::audit::Segment;
use deploy_gate::policy::PassSet;
use std::io::Read;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--verdicts") {
        return verdicts(args.get(1).expect("a verdict file"));
    }
    let path = args.first().expect("usage: bench_scan FILE [MB] [ROUNDS]");
    let mb: u64 = args.get(1).map_or(256, |s| s.parse().expect("MB"));
    let rounds: usize = args.get(2).map_or(3, |s| s.parse().expect("ROUNDS"));
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .expect("the log")
        .take(mb << 20)
        .read_to_end(&mut bytes)
        .expect("readable");
    bytes.truncate(bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1));
    let size = bytes.len() as f64 / 1e6;
    // The fastest of the rounds.
    let time = |name: &str, f: &mut dyn FnMut() -> usize| {
        let mut best = f64::MAX;
        let mut out = 0;
        for _ in 0..rounds {
            let t = Instant::now();
            out = f();
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!("{name:<40} {out:>9} {best:>7.3} s {:>6.0} MB/s", size / best);
    };
    time("utf-8 check, whole buffer", &mut || {
        usize::from(simdutf8::basic::from_utf8(&bytes).is_ok())
    });
    time("newlines (memchr)", &mut || memchr::memchr_iter(b'\n', &bytes).count());
    let text = std::str::from_utf8(&bytes).ok();
    if let Some(text) = text {
        time("fast path, every value skipped", &mut || {
            let mut from = 0;
            let mut ok = 0;
            for nl in memchr::memchr_iter(b'\n', text.as_bytes()) {
                ok += usize::from(deploy_gate::json::skim::parse_object(&text[from..nl], &mut |_, v| v.skip()).is_ok());
                from = nl + 1;
            }
            ok
        });
    }
    time("segment scan (pass 1, one core)", &mut || {
        let mut segment = Segment::new(PassSet::default(), 1 << 30, 0, 0);
        segment.push(&bytes);
        segment.finish();
        segment.lines() as usize
    });
}

fn verdicts(path: &str) {
    let bytes = std::fs::read(path).expect("the verdict file");
    // Keep a few ids, as `evaluate` keeps the test set's.
    let keep: deploy_gate::verdicts::KeepSet = (0..200).map(|i| format!("p-{i}").into()).collect();
    for _ in 0..3 {
        let t = Instant::now();
        let v =
            deploy_gate::verdicts::parse_verdicts_keeping(deploy_gate::Role::OldVerdicts, "v", &bytes, keep.clone())
                .expect("a valid verdict file");
        println!("verdicts: {} ids in {:.1} ms", v.len(), t.elapsed().as_secs_f64() * 1e3);
    }
}
