//! Work split among the machine's cores inside the core library (sample keys, bootstrap
//! resamples): natively with scoped threads, in wasm on the one thread there is.

/// How many threads a computation may use: the machine's cores natively, one in wasm.
pub(crate) fn threads() -> usize {
    #[cfg(not(target_arch = "wasm32"))]
    {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
    #[cfg(target_arch = "wasm32")]
    {
        1
    }
}

/// `f` of every item, in order. With at least `min_items` items and more than one thread, the
/// items are cut into one run per thread and the runs computed side by side.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], min_items: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let runs = map_runs(items, min_items, |run| run.iter().map(&f).collect::<Vec<R>>());
    let mut all = Vec::with_capacity(items.len());
    for run in runs {
        all.extend(run);
    }
    all
}

/// `f` of each run of `items`, in order: one run per thread, side by side, with at least
/// `min_items` items and more than one thread; else one run of them all.
pub(crate) fn map_runs<T: Sync, R: Send>(items: &[T], min_items: usize, f: impl Fn(&[T]) -> R + Sync) -> Vec<R> {
    // (In wasm `threads()` is 1, so the scoped threads are never spawned there.)
    let threads = threads();
    if threads > 1 && items.len() >= min_items.max(2) {
        let f = &f;
        return std::thread::scope(|scope| {
            let runs: Vec<_> = items
                .chunks(items.len().div_ceil(threads))
                .map(|run| scope.spawn(move || f(run)))
                .collect();
            runs.into_iter()
                .map(|run| run.join().expect("a worker thread panicked"))
                .collect()
        });
    }
    vec![f(items)]
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_order_of_the_items_is_kept() {
        for n in [0, 1, 2, 5, 4095, 4096, 10_001] {
            let items: Vec<u64> = (0..n).collect();
            let want: Vec<u64> = items.iter().map(|x| x * 3 + 1).collect();
            assert_eq!(super::map(&items, 1, |x| x * 3 + 1), want, "{n} items");
            assert_eq!(super::map(&items, 4096, |x| x * 3 + 1), want, "{n} items");
        }
    }
}
