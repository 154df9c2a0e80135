//! Input files mapped into memory (Unix), and pass 1 over a mapped audit log. The hashing
//! thread and the scan threads read the page cache directly: no thread copies the file into
//! buffers first, which on a 1 GiB log saves about a tenth of a second of system time (0.12–0.17 s
//! against 0.20–0.29 s). The verdict and trajectory files are mapped too (no fresh pages to fault in
//! and fill).
//!
//! Two things come with a map that a copy does not have:
//! - Pages stay in the process until they are given back, so in pass 1 neither side reads far
//!   ahead of the other, and what both have finished is released as they go: peak memory grows
//!   by about a window, not by the file.
//! - A file cut shorter while mapped (log rotation by truncation) makes the next read of a
//!   vanished page raise `SIGBUS`. Each mapping registers its address range and a message; the
//!   handler finds the mapping the faulting address lies in and ends the process as any other
//!   unreadable input does: the message naming the file, and exit status 1. A `SIGBUS` anywhere
//!   else gets the default action, as without the handler.

use super::plan::{InOrder, Plan};
use super::ReadError;
use crate::audit::{IndexBuilder, Segment};
use memmap2::{Mmap, MmapOptions, UncheckedAdvice};
use sha2::{Digest, Sha256};
use std::ffi::c_void;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{mpsc, Condvar, Mutex, MutexGuard};

/// A whole file mapped read-only.
pub struct Mapping {
    map: Mmap,
    page: usize,
    /// Where the `SIGBUS` handler finds this mapping's message.
    slot: &'static Slot,
    _message: Box<[u8]>,
}

impl Mapping {
    /// Maps the first `len` bytes of `file` (`len` > 0), opened from `path` (named in the error
    /// should the file be cut shorter while mapped). Fails when the file cannot be mapped, or
    /// when as many mappings as the handler keeps track of are open already.
    pub fn new(file: &File, len: u64, path: &Path) -> std::io::Result<Mapping> {
        let len = usize::try_from(len).map_err(|_| std::io::Error::other("too large to map"))?;
        if len == 0 {
            return Err(std::io::Error::other("nothing to map"));
        }
        install_handler()?;
        let slot = Slot::claim().ok_or_else(|| std::io::Error::other("too many files mapped at once"))?;
        // SAFETY: a read-only shared mapping of an open file. Its bytes are only ever read; an
        // input changed in place while it is read is as unreadable as one changed between the
        // two passes (pass 2 checks every line it uses against pass 1's index), and one cut
        // shorter faults (`SIGBUS`), which the handler below turns into an error naming it.
        let map = match unsafe { MmapOptions::new().len(len).map(file) } {
            Ok(map) => map,
            Err(e) => {
                slot.free();
                return Err(e);
            }
        };
        let mut message = format!(
            "deploy-gate: error: {} changed while it was read (it was cut shorter, or a part of it could not be read)\n",
            path.display()
        )
        .into_bytes()
        .into_boxed_slice();
        slot.fill(map.as_ptr() as usize, len, &mut message);
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        Ok(Mapping {
            map,
            page,
            slot,
            _message: message,
        })
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Gives back the whole pages of `from..to` (the process keeps no page of it; the file's
    /// pages stay in the page cache); gives where they end, `to` rounded down to a page, which
    /// is where the next release of what follows starts. Reading them again afterwards is
    /// allowed and maps them again, so a release too early costs time, never data.
    pub fn release(&self, from: usize, to: usize) -> usize {
        let from = from.div_ceil(self.page) * self.page;
        let to = to.min(self.map.len()) / self.page * self.page;
        if from < to {
            // SAFETY: MADV_DONTNEED on a read-only shared file mapping only drops this
            // process's pages of `from..to` (inside the mapping); their contents stay in the
            // file and a later read maps them again. (A failure only keeps them resident.)
            let _ = unsafe {
                self.map
                    .unchecked_advise_range(UncheckedAdvice::DontNeed, from, to - from)
            };
        }
        to
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // The handler stops finding this mapping before it is unmapped (the fields, the map and
        // the message, are dropped after this); no read of it can follow (`bytes` borrows).
        self.slot.free();
    }
}

/// One open mapping as the `SIGBUS` handler sees it: its address range and its message.
struct Slot {
    /// Claimed by a mapping.
    taken: AtomicBool,
    /// The message, null while the slot is not filled (stored last, cleared first).
    message: AtomicPtr<u8>,
    message_len: AtomicUsize,
    start: AtomicUsize,
    end: AtomicUsize,
}

/// As many files as may be mapped at once (the CLI maps two at most: the verdict files, read
/// side by side; the audit logs and the trajectory files are mapped one at a time).
const SLOTS: usize = 16;
static MAPPED: [Slot; SLOTS] = [const {
    Slot {
        taken: AtomicBool::new(false),
        message: AtomicPtr::new(std::ptr::null_mut()),
        message_len: AtomicUsize::new(0),
        start: AtomicUsize::new(0),
        end: AtomicUsize::new(0),
    }
}; SLOTS];

impl Slot {
    fn claim() -> Option<&'static Slot> {
        MAPPED.iter().find(|s| {
            s.taken
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })
    }

    fn fill(&self, start: usize, len: usize, message: &mut [u8]) {
        self.start.store(start, Ordering::Relaxed);
        self.end.store(start + len, Ordering::Relaxed);
        self.message_len.store(message.len(), Ordering::Relaxed);
        self.message.store(message.as_mut_ptr(), Ordering::Release);
    }

    fn free(&self) {
        self.message.store(std::ptr::null_mut(), Ordering::Release);
        self.taken.store(false, Ordering::Release);
    }

    /// The message of the mapping that holds `addr`, if one does.
    fn message_for(addr: usize) -> Option<(*const u8, usize)> {
        MAPPED.iter().find_map(|s| {
            let message = s.message.load(Ordering::Acquire);
            let within = (s.start.load(Ordering::Relaxed)..s.end.load(Ordering::Relaxed)).contains(&addr);
            (!message.is_null() && within).then(|| (message.cast_const(), s.message_len.load(Ordering::Relaxed)))
        })
    }
}

/// The address a `SIGBUS` is about.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn fault_address(info: &libc::siginfo_t) -> usize {
    // SAFETY: for SIGBUS the kernel fills `si_addr`.
    unsafe { info.si_addr() as usize }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn fault_address(info: &libc::siginfo_t) -> usize {
    info.si_addr as usize
}

extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut c_void) {
    // Only async-signal-safe calls: atomic loads, write(2), _exit(2), sigaction(2), raise(3).
    // SAFETY: with SA_SIGINFO the kernel passes a valid `siginfo_t`.
    let info = unsafe { &*info };
    // (A signal sent by a process, `si_code` <= 0, has no fault address.)
    let fault = (info.si_code > 0).then(|| fault_address(info));
    if let Some((message, len)) = fault.and_then(Slot::message_for) {
        // SAFETY: a filled slot's message lives until the mapping is unmapped, and the fault is
        // a read of that mapping.
        unsafe {
            libc::write(2, message.cast(), len);
            libc::_exit(1);
        }
    }
    // Not a read of a mapped input: back to the default action, and the signal again (it is
    // delivered once the handler returns), so the process ends as it would have without it.
    // SAFETY: zeroed with `SIG_DFL` (0) is the default action.
    unsafe {
        let default: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGBUS, &default, std::ptr::null_mut());
        libc::raise(libc::SIGBUS);
    }
}

/// Installs the `SIGBUS` handler, once for the process.
fn install_handler() -> std::io::Result<()> {
    static INSTALLED: std::sync::OnceLock<Result<(), i32>> = std::sync::OnceLock::new();
    let installed = INSTALLED.get_or_init(|| {
        // SAFETY: zeroed is a valid `sigaction` (empty mask) before the fields are set.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction =
            on_sigbus as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) as libc::sighandler_t;
        action.sa_flags = libc::SA_SIGINFO;
        // SAFETY: a valid `sigaction`; the handler is async-signal-safe.
        if unsafe { libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
        }
    });
    installed.map_err(std::io::Error::from_raw_os_error)
}

/// How far through a mapped file the hashing thread and the scan threads are.
#[derive(Debug, Clone)]
struct Marks {
    /// Where each scan thread is reading (the next byte it will push), `None` while it has no
    /// segment.
    at: Vec<Option<u64>>,
    /// The next segment to be taken.
    next: usize,
    /// Where the segments not merged yet start: no segment is taken more than [`WINDOW`] past
    /// it, so the finished segments waiting to be merged stay few.
    merged: u64,
    hashed: u64,
    /// Pages before this have been given back.
    released: u64,
    /// A thread panicked: nobody waits any more.
    stop: bool,
}

impl Marks {
    /// Where the scan threads are: no byte before it is needed by any of them any more (the
    /// segments before are finished, or their threads are past it; a long line is carried in
    /// the segment's own buffer, not read again from the map).
    fn scanned(&self, starts: &[u64], len: u64) -> u64 {
        let untaken = starts.get(self.next).copied().unwrap_or(len);
        self.at.iter().flatten().fold(untaken, |low, &at| low.min(at))
    }
}

/// The marks, shared, with a way to wait for them to move. Neither the hashing thread nor a
/// scan thread reads more than [`WINDOW`] past what the other side has finished — a scan
/// thread checks this before each piece it pushes, not only at the start of a segment, so a
/// segment that is one long line is held to the window too — and what both have finished is
/// given back as they go.
struct Progress<'a> {
    marks: Mutex<Marks>,
    moved: Condvar,
    map: &'a Mapping,
    starts: &'a [u64],
    len: u64,
}

/// How far ahead of the other side the hashing thread and the scan threads may read.
const WINDOW: u64 = 16 << 20;
/// Finished pages are given back this many bytes at a time.
const RELEASE: u64 = 8 << 20;

impl Progress<'_> {
    fn lock(&self) -> MutexGuard<'_, Marks> {
        self.marks.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn scanned(&self, marks: &Marks) -> u64 {
        marks.scanned(self.starts, self.len)
    }

    /// Waits until `ok` holds (given the marks and where the scan threads are); false when a
    /// thread panicked meanwhile.
    fn wait_for(&self, ok: impl Fn(&Marks, u64) -> bool) -> bool {
        let mut marks = self.lock();
        while !marks.stop && !ok(&marks, self.scanned(&marks)) {
            marks = self.moved.wait(marks).unwrap_or_else(|e| e.into_inner());
        }
        !marks.stop
    }

    /// Gives scan thread `t` the next segment once its start is within the window past both the
    /// merged segments and the hash (`None`: no segment is left, or a thread panicked).
    fn take(&self, t: usize) -> Option<usize> {
        let mut marks = self.lock();
        loop {
            let k = marks.next;
            if marks.stop || k >= self.starts.len() {
                return None;
            }
            if self.starts[k] < marks.merged.min(marks.hashed) + WINDOW {
                marks.at[t] = Some(self.starts[k]);
                marks.next += 1;
                return Some(k);
            }
            marks = self.moved.wait(marks).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Changes the marks, gives back the pages both sides have finished (a [`RELEASE`] at a
    /// time, or all of them at the end), and wakes whoever waits; gives what `change` gives.
    fn set<T>(&self, change: impl FnOnce(&mut Marks) -> T) -> T {
        let out = {
            let mut marks = self.lock();
            let out = change(&mut marks);
            let done = self.scanned(&marks).min(marks.hashed);
            if done >= marks.released + RELEASE || (done == self.len && done > marks.released) {
                marks.released = self.map.release(marks.released as usize, done as usize) as u64;
            }
            out
        };
        self.moved.notify_all();
        out
    }
}

/// Held by each thread of a mapped scan: should the thread panic, the others stop waiting on it.
struct StopOnPanic<'a, 'b>(&'a Progress<'b>);

impl Drop for StopOnPanic<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.set(|m| m.stop = true);
        }
    }
}

/// Pass 1 over a mapped file: each scan thread takes the next segment and scans it straight
/// from the map; the hashing thread (when the plan hashes) hashes the map in order; the main
/// thread merges. Each gives back the pages that both sides have finished as it moves its mark.
/// Unhashed, the whole file counts as hashed from the start: the scan threads are held back by
/// the merge only, and the sha256 is empty.
pub(crate) fn scan(plan: &Plan, map: &Mapping, builder: &mut IndexBuilder) -> Result<(u64, String), ReadError> {
    let bytes = map.bytes();
    let progress = Progress {
        marks: Mutex::new(Marks {
            at: vec![None; plan.threads],
            next: 0,
            merged: 0,
            hashed: if plan.hash { 0 } else { plan.len },
            released: 0,
            stop: false,
        }),
        moved: Condvar::new(),
        map,
        starts: &plan.starts,
        len: plan.len,
    };
    let progress = &progress;
    std::thread::scope(|scope| {
        let (done_tx, done_rx) = mpsc::channel::<(usize, Segment)>();
        for t in 0..plan.threads {
            let done_tx = done_tx.clone();
            scope.spawn(move || {
                let _stop = StopOnPanic(progress);
                while let Some(k) = progress.take(t) {
                    let mut segment = plan.segment(k);
                    let (start, end) = (plan.starts[k], plan.ends[k]);
                    let mut at = start;
                    while at < end {
                        // (The first piece was allowed when the segment was taken.)
                        if at > start {
                            progress.set(|m| m.at[t] = Some(at));
                            if !progress.wait_for(|m, _| at < m.hashed + WINDOW) {
                                return;
                            }
                        }
                        if plan.watch.is_cancelled() {
                            progress.set(|m| m.stop = true);
                            return;
                        }
                        let to = end.min(at + plan.chunk as u64);
                        segment.push(&bytes[at as usize..to as usize]);
                        plan.watch.add(to - at);
                        at = to;
                    }
                    segment.finish();
                    progress.set(|m| m.at[t] = None);
                    if done_tx.send((k, segment)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);
        let hasher = plan.hash.then(|| {
            scope.spawn(move || {
                let _stop = StopOnPanic(progress);
                let mut sha = Sha256::new();
                let mut at = 0u64;
                for piece in bytes.chunks(plan.chunk) {
                    if !progress.wait_for(|_, scanned| at < scanned + WINDOW) {
                        break;
                    }
                    sha.update(piece);
                    at += piece.len() as u64;
                    progress.set(|m| m.hashed = at);
                }
                hex::encode(sha.finalize())
            })
        });
        let mut in_order = InOrder::new(plan, builder);
        for (k, segment) in done_rx {
            in_order.add(k, segment);
            let merged = in_order.frontier();
            progress.set(|m| m.merged = merged);
        }
        // (Should a scan thread have stopped early, the hashing thread must not wait for it.)
        progress.set(|m| {
            m.merged = plan.len;
            m.next = plan.starts.len();
            m.at.iter_mut().for_each(|a| *a = None);
        });
        let sha = hasher.map_or_else(String::new, |h| h.join().expect("the hashing thread panicked"));
        plan.watch.check()?;
        in_order.check_complete()?;
        Ok((plan.len, sha))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::path::PathBuf;

    fn file_of(bytes: &[u8]) -> (tempfile::NamedTempFile, File) {
        let mut tmp = tempfile::NamedTempFile::new().unwrap();
        tmp.write_all(bytes).unwrap();
        tmp.flush().unwrap();
        let f = File::open(tmp.path()).unwrap();
        (tmp, f)
    }

    fn map(path: &Path) -> Mapping {
        let f = File::open(path).unwrap();
        Mapping::new(&f, f.metadata().unwrap().len(), path).unwrap()
    }

    #[test]
    fn released_pages_read_back_the_same_bytes() {
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let (tmp, _f) = file_of(&data);
        let map = map(tmp.path());
        assert_eq!(map.bytes(), &data[..]);
        // Unaligned ends, a range past the end, and an empty range.
        for (from, to) in [(1, 300_001), (0, data.len()), (999_999, 2_000_000), (5000, 5000)] {
            let end = map.release(from, to);
            assert_eq!(end, to.min(data.len()) / map.page * map.page);
            assert_eq!(map.bytes(), &data[..]);
        }
    }

    #[test]
    fn an_empty_file_is_not_mapped() {
        let (tmp, f) = file_of(b"");
        assert!(Mapping::new(&f, 0, tmp.path()).is_err());
    }

    #[test]
    fn slots_are_given_back_when_mappings_are_dropped() {
        let (tmp, _f) = file_of(b"some bytes\n");
        // More mappings in turn than there are slots, a few at a time.
        for _ in 0..3 * SLOTS {
            let (a, b) = (map(tmp.path()), map(tmp.path()));
            assert_eq!(a.bytes(), b.bytes());
        }
    }

    /// Set in the child processes of the tests below: what the child does, and its files.
    const CHILD: &str = "DEPLOY_GATE_TEST_SIGBUS_CHILD";

    /// Runs test `name` of this binary again in a child process with `CHILD` set to `what`.
    fn child(name: &str, what: &str) -> std::process::Output {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", &format!("native::mapped::tests::{name}"), "--nocapture"])
            .env(CHILD, what)
            .output()
            .unwrap()
    }

    #[test]
    fn a_file_cut_shorter_while_mapped_ends_the_process_with_an_error_naming_it() {
        if let Some(what) = std::env::var_os(CHILD) {
            // The child: maps both files, cuts the second to nothing, reads a vanished page.
            let paths: Vec<PathBuf> = std::env::split_paths(&what).collect();
            let (first, second) = (map(&paths[0]), map(&paths[1]));
            std::fs::OpenOptions::new()
                .write(true)
                .open(&paths[1])
                .unwrap()
                .set_len(0)
                .unwrap();
            let sum: u64 = first.bytes().iter().chain(second.bytes()).map(|&b| u64::from(b)).sum();
            panic!("read {sum} from a truncated file without SIGBUS");
        }
        let (one, _) = file_of(&vec![b'x'; 3 * 65536]);
        let (two, _) = file_of(&vec![b'y'; 3 * 65536]);
        let both = std::env::join_paths([one.path(), two.path()]).unwrap();
        let out = child(
            "a_file_cut_shorter_while_mapped_ends_the_process_with_an_error_naming_it",
            both.to_str().unwrap(),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!(
                "deploy-gate: error: {} changed while it was read",
                two.path().display()
            )),
            "{err}"
        );
        assert!(!err.contains(&one.path().display().to_string()), "{err}");
    }

    /// The process's peak resident memory (`VmHWM`), in bytes.
    fn peak_rss() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() << 10
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_mapped_file_that_is_one_long_line_does_not_stay_resident() {
        const LEN: u64 = 96 << 20;
        if let Some(path) = std::env::var_os(CHILD) {
            // The child: pass 1 over the mapped file, lines over 1 MiB skipped; its peak RSS.
            let path = PathBuf::from(path);
            let f = File::open(&path).unwrap();
            let map = Mapping::new(&f, LEN, &path).unwrap();
            let pass = crate::policy::PassSet::default();
            let opts = crate::native::ReadOptions {
                threads: 2,
                segment: 4 << 20,
                map: true,
                hash: true,
                watch: Default::default(),
            };
            let plan = Plan::new(&path, 0, &pass, &f, &opts, 1 << 20).unwrap();
            assert_eq!(plan.starts.len(), 1, "no newline, one segment");
            let mut builder = IndexBuilder::new();
            builder.add_file(crate::input::InputFile {
                role: crate::input::Role::Audit,
                name: "one-line.jsonl".into(),
                bytes: 0,
                sha256: String::new(),
            });
            let (len, sha) = scan(&plan, &map, &mut builder).unwrap();
            assert_eq!(len, LEN);
            let summary = builder.finish().summary().clone();
            assert_eq!((summary.lines, summary.skipped["line_too_long"].count), (1, 1));
            println!("sha256 {sha} peak {}", peak_rss());
            return;
        }
        // A file of LEN bytes and no newline: 96 MiB of `x`.
        let mut tmp = tempfile::NamedTempFile::new().unwrap();
        let block = vec![b'x'; 1 << 20];
        let mut sha = Sha256::new();
        for _ in 0..LEN >> 20 {
            tmp.write_all(&block).unwrap();
            sha.update(&block);
        }
        tmp.flush().unwrap();
        let out = child(
            "a_mapped_file_that_is_one_long_line_does_not_stay_resident",
            tmp.path().to_str().unwrap(),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        let report = stdout.lines().find_map(|l| l.strip_prefix("sha256 ")).unwrap();
        let (digest, peak) = report.split_once(" peak ").unwrap();
        assert_eq!(digest, hex::encode(sha.finalize()));
        let peak: u64 = peak.parse().unwrap();
        // The windows (16 MiB ahead each side, released 8 MiB at a time) and the process's own
        // memory, well under the file's 96 MiB.
        assert!(
            peak < 64 << 20,
            "peak RSS {} MiB for a 96 MiB one-line file",
            peak >> 20
        );
    }

    #[test]
    fn a_sigbus_outside_every_mapping_keeps_its_default_action() {
        if std::env::var_os(CHILD).is_some() {
            let (tmp, _f) = file_of(b"mapped\n");
            let _map = map(tmp.path());
            // SAFETY: raises a signal in this (child) process, which it is meant to end.
            unsafe { libc::raise(libc::SIGBUS) };
            panic!("survived SIGBUS");
        }
        let out = child("a_sigbus_outside_every_mapping_keeps_its_default_action", "raise");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(libc::SIGBUS), "{out:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("deploy-gate: error"));
    }
}
