//! The segment wire format from arbitrary bytes (what a scan worker posts to the merger):
//! decoding never panics, never allocates much more than the input's size, and what decodes
//! re-encodes to bytes that decode to the same segment (decode → encode is a fixed point).
#![no_main]

use deploy_gate::audit::Segment;
use libfuzzer_sys::fuzz_target;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts the bytes allocated and the peak, to bound what decoding allocates.
struct Counting;
static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = IN_USE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            let now = IN_USE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size - layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        } else {
            IN_USE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fuzz_target!(|bytes: &[u8]| {
    let before = IN_USE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let decoded = Segment::from_bytes(bytes);
    let grew = PEAK.load(Ordering::Relaxed) - before;
    // Every decoded item takes at least a few bytes of input; allow a generous factor for
    // tables and their growth.
    let bound = 64 * 1024 + 32 * bytes.len();
    assert!(
        grew <= bound,
        "decoding {} bytes allocated {grew} bytes (bound {bound})",
        bytes.len()
    );
    if let Ok(segment) = decoded {
        let wire = segment.to_bytes();
        let again = Segment::from_bytes(&wire).expect("a segment's own bytes decode");
        assert_eq!(again.to_bytes(), wire, "decode → encode is not a fixed point");
        assert_eq!(again.file(), segment.file());
        assert_eq!(again.lines(), segment.lines());
    }
});
