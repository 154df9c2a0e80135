//! What `run` shows on stderr, as the run engine tells it ([`Printer`], its
//! [`Progress`]): the header, then on a terminal, a progress bar (cases done of all, rate, time
//! left, errored) with the workers' stderr lines printed above it; elsewhere (a CI log, a
//! file), a plain progress line every [`PLAIN_EVERY`] and the workers' lines as they come. In
//! a two-model run each model has its own counts: records, rate, errored and retries.

use crate::native::files::Notice;
use crate::native::run::{LaneReport, LaneStart, Plan, Progress, SequentialEnd};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How often the plain progress line is printed when stderr is not a terminal.
pub const PLAIN_EVERY: Duration = Duration::from_secs(10);

/// Shared by the run and the threads copying the workers' stderr.
#[derive(Clone)]
struct Display {
    bar: Option<ProgressBar>,
    plain: Arc<Mutex<Plain>>,
}

/// One model's counts.
struct Count {
    /// `old`, `new`; empty in a one-model run.
    name: String,
    total: u64,
    done: u64,
    errored: u64,
    /// Cases done by this run (the rate counts only these).
    this_run: u64,
    retries: u64,
}

struct Plain {
    lanes: Vec<Count>,
    started: Instant,
    last: Instant,
}

impl Display {
    /// One count per model: its name (empty for a one-model run), its cases, how many have a
    /// record already and how many of those are errors.
    pub fn new(lanes: &[LaneStart]) -> Display {
        let now = Instant::now();
        let total: u64 = lanes.iter().map(|l| l.total).sum();
        let done: u64 = lanes.iter().map(|l| l.done).sum();
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let unit = if lanes.len() > 1 { "records" } else { "cases" };
            bar.set_style(
                ProgressStyle::with_template(&format!(
                    "{{bar:30.cyan/blue}} {{pos}}/{{len}} {unit}  {{rate:.dim}}  {{eta}} left  {{msg}}"
                ))
                .expect("a valid template")
                .with_key(
                    "rate",
                    move |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{:.1} {unit}/s", state.per_sec());
                    },
                )
                .progress_chars("█▉▊▋▌▍▎▏ "),
            );
            bar.set_position(done);
            bar.reset_eta();
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        let display = Display {
            bar,
            plain: Arc::new(Mutex::new(Plain {
                lanes: lanes
                    .iter()
                    .map(|l| Count {
                        name: l.name.clone(),
                        total: l.total,
                        done: l.done,
                        errored: l.errored,
                        this_run: 0,
                        retries: 0,
                    })
                    .collect(),
                started: now,
                last: now,
            })),
        };
        display.show_message(&display.plain.lock().unwrap_or_else(|e| e.into_inner()));
        display
    }

    fn show_message(&self, plain: &Plain) {
        if let Some(bar) = &self.bar {
            let parts: Vec<String> = plain
                .lanes
                .iter()
                .filter_map(|l| {
                    let mut bits = Vec::new();
                    if l.errored > 0 {
                        bits.push(format!("{} errored", l.errored));
                    }
                    if l.retries > 0 {
                        bits.push(format!("{} retries", l.retries));
                    }
                    if l.name.is_empty() {
                        (!bits.is_empty()).then(|| bits.join(", "))
                    } else {
                        let rate = plain.rate(l);
                        Some(format!(
                            "{} {}/{} {rate:.1}/s{}",
                            l.name,
                            l.done,
                            l.total,
                            bits.iter().map(|b| format!(" {b}")).collect::<String>()
                        ))
                    }
                })
                .collect();
            bar.set_message(parts.join("  "));
        }
    }

    /// A line of text above the bar (or just a line).
    pub fn line(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{text}")),
            None => eprintln!("{text}"),
        }
    }

    /// One more case of model `lane` has its record.
    pub fn case_done(&self, lane: usize, errored: bool) {
        let mut plain = self.plain.lock().unwrap_or_else(|e| e.into_inner());
        let l = &mut plain.lanes[lane];
        l.done += 1;
        l.this_run += 1;
        l.errored += u64::from(errored);
        if let Some(bar) = &self.bar {
            bar.inc(1);
            self.show_message(&plain);
        }
    }

    /// A request of model `lane` is tried again.
    pub fn retried(&self, lane: usize) {
        let mut plain = self.plain.lock().unwrap_or_else(|e| e.into_inner());
        plain.lanes[lane].retries += 1;
        self.show_message(&plain);
    }

    /// Prints the plain progress line when it is due (not on a terminal).
    pub fn tick(&self) {
        if self.bar.is_some() {
            return;
        }
        let mut plain = self.plain.lock().unwrap_or_else(|e| e.into_inner());
        if plain.last.elapsed() >= PLAIN_EVERY {
            plain.last = Instant::now();
            eprintln!("deploy-gate run: {}", plain.progress());
        }
    }

    /// Removes the bar (before the summary).
    pub fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Plain {
    fn rate(&self, l: &Count) -> f64 {
        let secs = self.started.elapsed().as_secs_f64();
        if secs > 0.0 {
            l.this_run as f64 / secs
        } else {
            0.0
        }
    }

    /// `1234/10000 cases, 56.7 cases/s, 2m 35s left, 3 errored`; with two models, each one's
    /// counts (`old 1234/10000 cases, 56.7 cases/s, 3 errored, 5 retries; new …`) and the
    /// time left of the slower.
    fn progress(&self) -> String {
        let mut left_secs: Option<f64> = Some(0.0);
        let mut parts = Vec::new();
        for l in &self.lanes {
            let rate = self.rate(l);
            let remaining = l.total.saturating_sub(l.done) as f64;
            left_secs = match left_secs {
                Some(s) if remaining == 0.0 => Some(s),
                Some(s) if rate > 0.0 => Some(s.max(remaining / rate)),
                _ => None,
            };
            let mut text = format!("{}/{} cases, {rate:.1} cases/s", l.done, l.total);
            if !l.name.is_empty() {
                text = format!("{} {text}, {} errored, {} retries", l.name, l.errored, l.retries);
            }
            parts.push(text);
        }
        let left = match left_secs {
            Some(s) => humantime::format_duration(Duration::from_secs(s.ceil() as u64)).to_string(),
            None => "unknown".to_owned(),
        };
        if self.lanes.len() == 1 && self.lanes[0].name.is_empty() {
            let l = &self.lanes[0];
            // As a one-model run has always printed it.
            let rate = self.rate(l);
            let left = if rate > 0.0 { left } else { "unknown".to_owned() };
            return format!(
                "{}/{} cases, {rate:.1} cases/s, {left} left, {} errored",
                l.done, l.total, l.errored
            );
        }
        format!("{}; {left} left", parts.join("; "))
    }
}

/// The run's [`Progress`] on stderr: the display once the run begins, the header, the summary.
pub struct Printer {
    /// The test set as the user named it (for the header).
    test_set: String,
    display: OnceLock<Display>,
}

impl Printer {
    pub fn new(test_set: String) -> Printer {
        Printer {
            test_set,
            display: OnceLock::new(),
        }
    }
}

impl Progress for Printer {
    fn begin(&self, lanes: &[LaneStart]) {
        let _ = self.display.set(Display::new(lanes));
    }

    fn line(&self, text: &str) {
        match self.display.get() {
            Some(display) => display.line(text),
            None => eprintln!("{text}"),
        }
    }

    fn plan(&self, plan: &Plan) {
        self.line(&plan.header(&self.test_set));
    }

    fn case_done(&self, lane: usize, errored: bool) {
        if let Some(display) = self.display.get() {
            display.case_done(lane, errored);
        }
    }

    fn retried(&self, lane: usize) {
        if let Some(display) = self.display.get() {
            display.retried(lane);
        }
    }

    fn tick(&self) {
        if let Some(display) = self.display.get() {
            display.tick();
        }
    }

    fn end(&self) {
        if let Some(display) = self.display.get() {
            display.clear();
        }
    }

    fn notice(&self, notice: Notice) {
        crate::cli::exit::notice(notice);
    }

    fn sequential_done(&self, end: &SequentialEnd) {
        if let Some(line) = end.summary() {
            eprintln!("{line}");
        }
    }

    fn lane_done(&self, lane: &LaneReport) {
        for line in lane.summary() {
            eprintln!("{line}");
        }
    }
}
