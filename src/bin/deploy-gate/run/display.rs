//! What `run` shows on stderr: on a terminal, a progress bar (cases done of all, rate, time
//! left, errored) with the workers' stderr lines printed above it; elsewhere (a CI log, a
//! file), a plain progress line every [`PLAIN_EVERY`] and the workers' lines as they come.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the plain progress line is printed when stderr is not a terminal.
pub const PLAIN_EVERY: Duration = Duration::from_secs(10);

/// Shared by the run and the threads copying the workers' stderr.
#[derive(Clone)]
pub struct Display {
    bar: Option<ProgressBar>,
    plain: Arc<Mutex<Plain>>,
}

struct Plain {
    total: u64,
    done: u64,
    errored: u64,
    /// Cases done by this run (the rate counts only these).
    this_run: u64,
    started: Instant,
    last: Instant,
}

impl Display {
    /// `done` of `total` cases have a record already (`errored` of them errors).
    pub fn new(total: u64, done: u64, errored: u64) -> Display {
        let now = Instant::now();
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{bar:30.cyan/blue} {pos}/{len} cases  {rate:.dim}  {eta} left  {msg}")
                    .expect("a valid template")
                    .with_key(
                        "rate",
                        |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                            let _ = write!(w, "{:.1} cases/s", state.per_sec());
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
                total,
                done,
                errored,
                this_run: 0,
                started: now,
                last: now,
            })),
        };
        display.show_errored(errored);
        display
    }

    fn show_errored(&self, errored: u64) {
        if let Some(bar) = &self.bar {
            bar.set_message(if errored > 0 {
                format!("{errored} errored")
            } else {
                String::new()
            });
        }
    }

    /// A line of text above the bar (or just a line).
    pub fn line(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{text}")),
            None => eprintln!("{text}"),
        }
    }

    /// One more case has its record.
    pub fn case_done(&self, errored: bool) {
        let mut plain = self.plain.lock().unwrap_or_else(|e| e.into_inner());
        plain.done += 1;
        plain.this_run += 1;
        plain.errored += u64::from(errored);
        if let Some(bar) = &self.bar {
            bar.inc(1);
            if errored {
                self.show_errored(plain.errored);
            }
        }
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
    /// `1234/10000 cases, 56.7 cases/s, 2m 35s left, 3 errored`.
    fn progress(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64();
        let rate = if secs > 0.0 { self.this_run as f64 / secs } else { 0.0 };
        let left = if rate > 0.0 {
            let s = (self.total.saturating_sub(self.done)) as f64 / rate;
            humantime::format_duration(Duration::from_secs(s.ceil() as u64)).to_string()
        } else {
            "unknown".to_owned()
        };
        format!(
            "{}/{} cases, {rate:.1} cases/s, {left} left, {} errored",
            self.done, self.total, self.errored
        )
    }
}
