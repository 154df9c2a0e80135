//! Writes a deterministic synthetic audit log and matching verdict files, for benchmarks and
//! the bundled example.
//!
//! `cargo run --release --example gen_audit -- --size 1G --out DIR [--seed N] [--ascii]` writes
//! `DIR/audit.jsonl` (about SIZE bytes: both entry shapes, unicode text, interleaved
//! pipelines, retried stages, failed runs and a few malformed lines), `DIR/old_verdicts.jsonl`,
//! `DIR/new_verdicts.jsonl`, `DIR/old_trajectories.jsonl` and `DIR/new_trajectories.jsonl`.
//! With `--ascii`, strings escape every non-ASCII character as `\uXXXX`, as Python's
//! `json.dumps` does by default (and so the Decide engine's audit log). With `--compact`, every
//! run has one short stage entry in the small shape and short texts (about 300 bytes per
//! pipeline instead of about 4.5 KB): many cases in a small file, for the page's large case
//! table. With `--answers`, every verdict record also carries the model's answer (`output`): a
//! sentence naming its verdict, or now and then an assistant message with a tool call, drawn
//! from a generator of its own, so the audit log and the trajectories are the same bytes as
//! without it. The same arguments always give the same bytes.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};

/// splitmix64: small, fast and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "customer",
    "invoice",
    "policy",
    "threshold",
    "retrieve",
    "summary",
    "evidence",
    "naïve",
    "Straße",
    "東京",
    "данные",
    "مرحبا",
    "🚀",
    "résumé",
    "Ελλάδα",
    "query",
    "agent",
    "tool",
    "\"quoted\"",
    "back\\slash",
    "tab\there",
    "line\nbreak",
    "ǅ",
    "x\u{a0}y",
    "score",
    "deploy",
];
const TEMPLATES: &[&str] = &[
    "bfsi/kyc_triage",
    "fraud/screen",
    "support/triage",
    "sql-agent",
    "research-v2",
];
const STAGES: &[&str] = &["retrieve", "plan", "tool_call", "reason", "verify", "respond"];
const PASS: &[&str] = &["PASS", "APPROVE", "Approve", "COMPLETE", "pass"];
const FAIL: &[&str] = &["DENY", "BLOCK", "REVIEW", "FAIL", "CHALLENGE"];

fn text(rng: &mut Rng, words: u64) -> String {
    let mut s = String::new();
    for i in 0..words {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(rng.pick(WORDS));
    }
    s
}

/// Whether strings are written ASCII only (`--ascii`).
static ASCII: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn json_str(s: &str) -> String {
    let json = serde_json::to_string(s).unwrap();
    if !ASCII.load(std::sync::atomic::Ordering::Relaxed) || json.is_ascii() {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 32);
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            for unit in c.encode_utf16(&mut [0; 2]) {
                write!(out, "\\u{unit:04x}").unwrap();
            }
        }
    }
    out
}

fn uuid(rng: &mut Rng) -> String {
    let (a, b) = (rng.next(), rng.next());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        (b >> 48) | 0x8000,
        b & 0xffff_ffff_ffff
    )
}

struct Run {
    id: String,
    template: &'static str,
    real_shape: bool,
    stages_left: u64,
    step: u64,
    input: String,
    outcome: Outcome,
}

#[derive(Clone, Copy, PartialEq)]
enum Outcome {
    Pass,
    Fail,
    Error,
}

fn stage_line(rng: &mut Rng, run: &mut Run, compact: bool, out: &mut String) {
    let stage = STAGES[(run.step % STAGES.len() as u64) as usize];
    let stage_id = format!("s{}-{stage}", run.step);
    let words = if compact { 2 } else { 20 + rng.below(60) };
    let output = text(rng, words);
    let reward = rng.below(10_000) as f64 / 10_000.0;
    out.clear();
    if run.real_shape {
        let _ = write!(
            out,
            "{{\"timestamp\": \"2026-06-10T10:{:02}:{:02}.{:06}\", \"pipeline_id\": {}, \"template_id\": {}, \"template_version\": \"1.1.0\", \"input_hash\": \"{:016x}{:016x}{:016x}{:016x}\", \"stage_id\": {}, \"stage_type\": \"llm\", \"iteration\": 1, \"is_retry\": false, \"input\": {}, \"output\": {}, \"latency_ms\": {}, \"cost_usd\": null, \"reward\": {reward}, \"model\": \"agent-7b\", \"error\": null, \"trajectory_id\": {}, \"stage_name\": {}, \"status\": \"ok\", \"error_details\": null, \"state_snapshot\": {{\"input_text\": {}, \"output\": null, \"stage_outputs\": {{}}}}, \"result\": {{\"score\": {reward}}}}}",
            rng.below(60), rng.below(60), rng.below(1_000_000),
            json_str(&run.id), json_str(run.template),
            rng.next(), rng.next(), rng.next(), rng.next(),
            json_str(&stage_id),
            json_str("You are a careful agent. Answer the request: {input_text}"),
            json_str(&output), rng.below(3000), json_str(&run.id), json_str(&stage_id),
            json_str(&run.input),
        );
    } else {
        let input = if run.step == 0 {
            json_str(&run.input)
        } else {
            "null".into()
        };
        let _ = write!(
            out,
            "{{\"pipeline_id\":{},\"stage_id\":{},\"stage_type\":\"{stage}\",\"input\":{input},\"output\":{},\"reward\":{reward},\"timestamp\":{}.{:03}}}",
            json_str(&run.id), json_str(&stage_id), json_str(&output), 1_755_189_831 + rng.below(100_000), rng.below(1000)
        );
    }
}

fn completion_line(rng: &mut Rng, run: &Run, out: &mut String) -> &'static str {
    let verdict = match run.outcome {
        Outcome::Pass | Outcome::Error => rng.pick(PASS),
        Outcome::Fail => rng.pick(FAIL),
    };
    let error = if run.outcome == Outcome::Error {
        "\"max_total_steps (50) reached\""
    } else {
        "null"
    };
    let reward = format!("{:.4}", rng.below(50_000) as f64 / 10_000.0);
    out.clear();
    if run.real_shape {
        let _ = write!(
            out,
            "{{\"timestamp_end\": \"2026-06-10T10:00:00.000000\", \"pipeline_id\": {}, \"template_id\": {}, \"verdict\": \"{verdict}\", \"verdict_label\": \"{verdict}\", \"is_complete\": true, \"step_count\": {}, \"elapsed_seconds\": 3.2, \"episode_reward\": {reward}, \"error\": {error}, \"trajectory_id\": {}, \"stage_name\": \"__pipeline_complete__\", \"stage_type\": \"output\", \"status\": \"ok\", \"error_details\": null, \"state_snapshot\": {{\"verdict\": \"{verdict}\", \"verdict_label\": \"{verdict}\", \"confidence\": 0.9, \"reason\": {}, \"stage_outputs\": {{}}}}}}",
            json_str(&run.id), json_str(run.template), run.step, json_str(&run.id), json_str(&text(rng, 8)),
        );
    } else {
        let _ = write!(
            out,
            "{{\"pipeline_id\": {}, \"template_id\": {}, \"verdict\": \"{verdict}\", \"is_complete\": true, \"error\": {error}, \"step_count\": {}, \"episode_reward\": {reward}}}",
            json_str(&run.id), json_str(run.template), run.step,
        );
    }
    verdict
}

/// A size such as `10M`: a number with an optional K, M or G (powers of 1024).
fn parse_size(s: &str) -> Result<u64, String> {
    let (num, shift) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("{s:?} is not a size (a number with an optional K, M or G)"))
}

/// Writes a deterministic synthetic audit log (`audit.jsonl`) and matching verdict and
/// trajectory files into a folder. The same arguments always give the same bytes.
#[derive(clap::Parser)]
#[command(name = "gen_audit")]
struct Args {
    /// About how many bytes of audit log to write (K, M or G suffix: powers of 1024).
    #[arg(long, default_value = "10M", value_parser = parse_size)]
    size: u64,
    /// The folder to write into (created if missing).
    #[arg(long, default_value = ".")]
    out: std::path::PathBuf,
    /// The seed of the generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Escape every non-ASCII character as `\uXXXX`, as Python's `json.dumps` does by default.
    #[arg(long)]
    ascii: bool,
    /// One short stage entry per run, small-shape entries and short texts: many pipelines per
    /// byte (without it, the output is as before).
    #[arg(long)]
    compact: bool,
    /// Each verdict record carries the model's answer (`output`); the other files are unchanged.
    #[arg(long)]
    answers: bool,
    /// With `--answers`, each case's answer has about this many words (0: 6 to 15), for verdict
    /// files of a given size (the page's benchmark of 1 GiB files with answers).
    #[arg(long, default_value_t = 0)]
    answer_words: u64,
}

/// What a model answered for a case whose verdict is `verdict`: one sentence (its words from
/// `base`, the case's, a word changed now and then), or one time in five the assistant message of
/// a model that called a tool, as JSON text.
fn answer(rng: &mut Rng, base: &[&'static str], verdict: &str) -> String {
    let words: Vec<&str> = base
        .iter()
        .map(|w| if rng.chance(8) { rng.pick(WORDS) } else { w })
        .collect();
    let sentence = format!("I checked {}. Verdict: {verdict}.", words.join(" "));
    if rng.chance(20) {
        let call = format!("{{\"query\": {}}}", json_str(words.first().copied().unwrap_or("case")));
        format!(
            "{{\"role\": \"assistant\", \"content\": {}, \"tool_calls\": [{{\"id\": \"call_{}\", \"type\": \"function\", \"function\": {{\"name\": \"lookup\", \"arguments\": {}}}}}]}}",
            json_str(&sentence),
            rng.below(1_000_000),
            json_str(&call)
        )
    } else {
        json_str(&sentence)
    }
}

fn main() -> std::io::Result<()> {
    // `--help`/`-h` print the usage and exit 0; an unknown or malformed argument exits 2
    // before anything is written.
    let Args {
        size,
        out: dir,
        seed,
        ascii,
        compact,
        answers,
        answer_words,
    } = <Args as clap::Parser>::parse();
    // The answers' own generator: with or without them, the other draws are the same.
    let mut said = Rng(seed ^ 0x5EED_A115_0000_0001);
    ASCII.store(ascii, std::sync::atomic::Ordering::Relaxed);
    std::fs::create_dir_all(&dir)?;
    let mut rng = Rng(seed);
    let mut audit = BufWriter::with_capacity(1 << 20, File::create(dir.join("audit.jsonl"))?);
    let mut old_v = BufWriter::new(File::create(dir.join("old_verdicts.jsonl"))?);
    let mut new_v = BufWriter::new(File::create(dir.join("new_verdicts.jsonl"))?);
    let mut written: u64 = 0;
    let mut active: Vec<Run> = Vec::new();
    let mut line = String::new();
    let mut runs = 0u64;
    while written < size || !active.is_empty() {
        if written < size && (active.len() < 8 || rng.chance(10)) {
            let words = if compact { 2 } else { 8 + rng.below(20) };
            active.push(Run {
                id: if rng.chance(2) {
                    format!("{}", 100_000 + rng.below(900_000))
                } else {
                    uuid(&mut rng)
                },
                template: TEMPLATES[rng.below(TEMPLATES.len() as u64) as usize],
                real_shape: rng.chance(60) && !compact,
                stages_left: if compact { 1 } else { 2 + rng.below(5) },
                step: 0,
                input: text(&mut rng, words),
                outcome: match rng.below(100) {
                    0..=69 => Outcome::Pass,
                    70..=94 => Outcome::Fail,
                    _ => Outcome::Error,
                },
            });
            runs += 1;
        }
        let i = rng.below(active.len() as u64) as usize;
        let run = &mut active[i];
        if run.stages_left > 0 {
            stage_line(&mut rng, run, compact, &mut line);
            run.stages_left -= 1;
            run.step += 1;
        } else {
            let run = active.swap_remove(i);
            let expected = completion_line(&mut rng, &run, &mut line);
            if run.outcome == Outcome::Pass {
                let words = if answer_words > 0 {
                    answer_words
                } else {
                    6 + said.below(10)
                };
                let base: Vec<&str> = (0..words).map(|_| said.pick(WORDS)).collect();
                for (w, correct) in [(&mut old_v, 80), (&mut new_v, 88)] {
                    let verdict = if rng.chance(correct) {
                        expected.to_uppercase()
                    } else {
                        rng.pick(FAIL).to_owned()
                    };
                    if !rng.chance(1) {
                        let output = if answers {
                            format!(", \"output\": {}", answer(&mut said, &base, &verdict))
                        } else {
                            String::new()
                        };
                        writeln!(
                            w,
                            "{{\"pipeline_id\": {}, \"verdict\": {}{output}}}",
                            json_str(&run.id),
                            json_str(&verdict)
                        )?;
                    }
                }
            }
        }
        if rng.below(100_000) == 0 {
            line.push_str("\naudit writer restarted");
        }
        line.push('\n');
        audit.write_all(line.as_bytes())?;
        written += line.len() as u64;
    }
    audit.flush()?;
    old_v.flush()?;
    new_v.flush()?;
    for (name, base) in [("old_trajectories.jsonl", 55u64), ("new_trajectories.jsonl", 58)] {
        let mut w = BufWriter::new(File::create(dir.join(name))?);
        for n in 0..200 {
            let m = |rng: &mut Rng| (base + rng.below(40)) as f64 / 100.0;
            writeln!(
                w,
                "{{\"trajectory_id\": \"t{n}\", \"goal_completion_score\": {}, \"tool_sequence_validity\": 1.0, \"unnecessary_steps_penalty\": 0.0, \"error_recovery_score\": 0.5, \"overall_judge_score\": {}, \"tac_score\": {}, \"scsr_score\": {}, \"iasa_score\": {}, \"egs_score\": {}, \"arr_score\": {}, \"lcf_score\": {}}}",
                m(&mut rng), m(&mut rng), m(&mut rng), m(&mut rng), m(&mut rng), m(&mut rng),
                rng.below(20) as f64 / 100.0, rng.below(100) / 90,
            )?;
        }
        w.flush()?;
    }
    eprintln!("gen_audit: {written} bytes, {runs} pipelines in {}", dir.display());
    Ok(())
}
