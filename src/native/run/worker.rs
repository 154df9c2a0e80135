//! One worker process of a run: started from an argv (never a shell) in its own process group,
//! with three threads of its own: one writes the cases sent to its stdin, one reads its stdout
//! line by line into the run's event channel, one copies its stderr to the run's progress, each
//! line prefixed with the worker's number.

use super::progress::Progress;
use anyhow::{anyhow, Result};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// The longest answer line read; a longer one is not an answer.
pub const MAX_ANSWER: usize = 16 << 20;

/// What a worker's stdout said, tagged with the worker's slot and start count (and the model
/// it runs, `side`, in a two-model run).
pub enum Event {
    /// A whole line (without its newline); `more`: bytes after it were already written.
    Line {
        side: usize,
        slot: usize,
        generation: u64,
        line: Vec<u8>,
        more: bool,
    },
    /// A line longer than [`MAX_ANSWER`].
    TooLong { side: usize, slot: usize, generation: u64 },
    /// Stdout closed (the worker exited, or closed it).
    Closed { side: usize, slot: usize, generation: u64 },
}

/// A running worker.
pub struct Worker {
    child: Child,
    stdin: Option<Sender<Vec<u8>>>,
    /// Cases it answered.
    pub answered: u64,
}

/// The program and its arguments.
pub struct Program {
    pub argv: Vec<String>,
    /// The model it runs (0 in a one-model run).
    pub side: usize,
    /// How its workers are named on stderr: `worker` (`[worker 3]`), `old worker`.
    pub label: String,
}

impl Program {
    /// Starts a worker in `slot` (numbered from 1 on stderr), sending its events to `events`.
    pub fn start<E: From<Event> + Send + 'static>(
        &self,
        slot: usize,
        generation: u64,
        events: &Sender<E>,
        progress: &Arc<dyn Progress>,
    ) -> Result<Worker> {
        let mut command = Command::new(&self.argv[0]);
        command
            .args(&self.argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: a Ctrl-C at the terminal reaches `run` alone, which stops the
            // workers itself; a timeout kills the worker's children too.
            .process_group(0);
        #[cfg(target_os = "linux")]
        // SAFETY: prctl is async-signal-safe, and this runs in the child between fork and exec.
        unsafe {
            // A worker outlives a `run` killed with SIGKILL by no more than a moment.
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = command
            .spawn()
            .map_err(|e| anyhow!("cannot start the worker program {:?}: {e}", self.argv[0]))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        thread::spawn(move || write_cases(stdin, rx));
        let events = events.clone();
        let side = self.side;
        thread::spawn(move || read_answers(stdout, side, slot, generation, events));
        let progress = Arc::clone(progress);
        let label = self.label.clone();
        thread::spawn(move || copy_stderr(stderr, label, slot + 1, progress));
        Ok(Worker {
            child,
            stdin: Some(tx),
            answered: 0,
        })
    }
}

impl Worker {
    /// Sends a case line (the newline is added).
    pub fn send(&self, bytes: &Arc<Vec<u8>>, line: std::ops::Range<usize>) {
        let mut case = Vec::with_capacity(line.len() + 1);
        case.extend_from_slice(&bytes[line]);
        case.push(b'\n');
        if let Some(stdin) = &self.stdin {
            // A worker that has exited is seen on its stdout; the send error is not news.
            let _ = stdin.send(case);
        }
    }

    /// Kills the worker's process group and reaps it; returns how it ended.
    pub fn kill(mut self) -> ExitStatus {
        self.stdin = None;
        kill_group(&self.child);
        self.child
            .wait()
            .unwrap_or_else(|_| ExitStatus::from_raw(libc::SIGKILL))
    }

    /// After its stdout closed: waits a moment for it to exit by itself (to report its own
    /// status), then kills it.
    pub fn reap(mut self) -> ExitStatus {
        self.stdin = None;
        let until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < until {
            if let Ok(Some(status)) = self.child.try_wait() {
                kill_group(&self.child);
                return status;
            }
            thread::sleep(Duration::from_millis(5));
        }
        self.kill()
    }

    /// At the end of the run: closes its stdin (a worker exits at end of input), waits until
    /// `until`, then kills it.
    pub fn finish(mut self, until: Instant) {
        self.stdin = None;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                kill_group(&self.child);
                return;
            }
            thread::sleep(Duration::from_millis(5));
        }
        self.kill();
    }
}

/// Kills the worker's process group (the worker and what it started).
fn kill_group(child: &Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill has no memory effects; a group that is gone is ESRCH, ignored.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

/// How a worker ended, for the record: `exit status 3`, `signal 9`.
pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        _ => "an unknown status".to_owned(),
    }
}

fn write_cases(mut stdin: ChildStdin, cases: mpsc::Receiver<Vec<u8>>) {
    for case in cases {
        if stdin.write_all(&case).and_then(|()| stdin.flush()).is_err() {
            return;
        }
    }
}

fn read_answers<E: From<Event>>(stdout: impl Read, side: usize, slot: usize, generation: u64, events: Sender<E>) {
    let mut reader = BufReader::with_capacity(64 << 10, stdout);
    loop {
        let mut line = Vec::new();
        let read = (&mut reader).take(MAX_ANSWER as u64 + 1).read_until(b'\n', &mut line);
        let event = match read {
            Ok(_) if line.last() == Some(&b'\n') => {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                Event::Line {
                    side,
                    slot,
                    generation,
                    line,
                    more: !reader.buffer().is_empty(),
                }
            }
            Ok(_) if line.len() > MAX_ANSWER => Event::TooLong { side, slot, generation },
            // End of stream (a last line without its newline is not an answer) or an error.
            _ => Event::Closed { side, slot, generation },
        };
        let last = !matches!(event, Event::Line { .. });
        if events.send(E::from(event)).is_err() || last {
            return;
        }
    }
}

fn copy_stderr(stderr: impl Read, label: String, number: usize, progress: Arc<dyn Progress>) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader).take(64 << 10).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                progress.line(&format!("[{label} {number}] {}", text.trim_end_matches(['\n', '\r'])));
            }
        }
    }
}
