//! Parallel work over a list of items (blocks to verify, copy or
//! summarise): a fixed number of scoped threads take items in order from a
//! shared counter; the first error stops every thread.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The number of worker threads for `--threads N` (0: one per core).
pub fn threads(requested: usize) -> usize {
    if requested == 0 {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    } else {
        requested
    }
}

/// Apply `f` to every item on `threads` threads and return the results in
/// item order, or the first error (the remaining items are then skipped).
pub fn map<T, R, E, F>(items: &[T], threads: usize, f: F) -> Result<Vec<R>, E>
where
    T: Sync,
    R: Send,
    E: Send,
    F: Fn(&T) -> Result<R, E> + Sync,
{
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let first_error: Mutex<Option<(usize, E)>> = Mutex::new(None);
    let threads = threads.clamp(1, items.len().max(1));
    let mut parts: Vec<Vec<(usize, R)>> = Vec::new();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        match f(item) {
                            Ok(r) => done.push((i, r)),
                            Err(e) => {
                                stop.store(true, Ordering::Relaxed);
                                let mut slot =
                                    first_error.lock().unwrap_or_else(|p| p.into_inner());
                                if slot.as_ref().is_none_or(|(j, _)| i < *j) {
                                    *slot = Some((i, e));
                                }
                                break;
                            }
                        }
                    }
                    done
                })
            })
            .collect();
        for h in handles {
            match h.join() {
                Ok(done) => parts.push(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    if let Some((_, e)) = first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let mut all: Vec<(usize, R)> = parts.into_iter().flatten().collect();
    all.sort_unstable_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, r)| r).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_stops_on_error() {
        let items: Vec<u32> = (0..1000).collect();
        let out: Result<Vec<u32>, ()> = map(&items, 4, |&x| Ok(x * 2));
        assert_eq!(
            out.unwrap(),
            items.iter().map(|x| x * 2).collect::<Vec<_>>()
        );
        let err: Result<Vec<u32>, u32> = map(&items, 3, |&x| if x == 500 { Err(x) } else { Ok(x) });
        assert_eq!(err.unwrap_err(), 500);
        let none: Result<Vec<u32>, ()> = map(&[], 4, |&x: &u32| Ok(x));
        assert!(none.unwrap().is_empty());
    }
}
