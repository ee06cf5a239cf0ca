//! The per-container worker pool for multi-block work.
//!
//! A container opened with `threads = N` lets each multi-block call use the
//! calling thread plus up to `N - 1` helper threads, and no more than
//! `N - 1` helpers in all across every call running at the same time on that
//! container: a call borrows whatever helpers are free and runs the rest
//! itself, so concurrent callers never oversubscribe the machine. Helpers
//! are scoped threads started for the call (tens of microseconds, small
//! next to a block's I/O and codec work) and work through the blocks by an
//! atomic counter, each with its own scratch state (block buffers), so the
//! memory of a call is its caller's buffers plus a few block-sized buffers
//! per thread.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};

/// The cores this process may run on (`available_parallelism`, asked once;
/// 1 when it cannot tell): the default thread count of a container.
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Helper threads shared by every call on one container.
#[derive(Debug)]
pub(crate) struct Pool {
    helpers: usize,
    busy: AtomicUsize,
}

impl Pool {
    /// A pool for `threads` threads in all (the caller and `threads - 1` helpers).
    pub(crate) fn new(threads: usize) -> Pool {
        Pool {
            helpers: threads.saturating_sub(1),
            busy: AtomicUsize::new(0),
        }
    }

    /// Take up to `want` free helpers; returns how many were taken.
    fn acquire(&self, want: usize) -> usize {
        let mut busy = self.busy.load(Ordering::Relaxed);
        loop {
            let take = want.min(self.helpers.saturating_sub(busy));
            if take == 0 {
                return 0;
            }
            match self.busy.compare_exchange_weak(
                busy,
                busy + take,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return take,
                Err(now) => busy = now,
            }
        }
    }

    /// Run `task(state, i)` for every `i` in `0..n`, on the calling thread
    /// and the helpers it can get, each thread with its own `state` from
    /// `init`. Stops early after a failure and returns the error of the
    /// lowest index that failed.
    pub(crate) fn run<S>(
        &self,
        n: usize,
        init: impl Fn() -> S + Sync,
        task: impl Fn(&mut S, usize) -> Result<()> + Sync,
    ) -> Result<()> {
        self.run_limited(n, usize::MAX, init, task)
    }

    /// [`Pool::run`] on at most `threads` threads in all (the calling one
    /// among them), for tasks whose memory limits how many may run at once.
    pub(crate) fn run_limited<S>(
        &self,
        n: usize,
        threads: usize,
        init: impl Fn() -> S + Sync,
        task: impl Fn(&mut S, usize) -> Result<()> + Sync,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let want = (n - 1).min(threads.saturating_sub(1));
        let taken = if want > 0 { self.acquire(want) } else { 0 };
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let failure: Mutex<Option<(usize, Error)>> = Mutex::new(None);
        let work = || {
            let mut state = init();
            while !stop.load(Ordering::Relaxed) {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                if let Err(e) = task(&mut state, i) {
                    stop.store(true, Ordering::Relaxed);
                    let mut f = failure.lock().unwrap_or_else(|p| p.into_inner());
                    if f.as_ref().is_none_or(|(j, _)| i < *j) {
                        *f = Some((i, e));
                    }
                }
            }
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::thread::scope(|s| {
                for _ in 0..taken {
                    s.spawn(work);
                }
                work();
            })
        }));
        self.busy.fetch_sub(taken, Ordering::AcqRel);
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
        match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use std::collections::HashSet;
    use std::sync::Arc;

    #[test]
    fn every_index_runs_once() {
        for threads in [1, 2, 5] {
            let pool = Pool::new(threads);
            let seen = Mutex::new(Vec::new());
            pool.run(
                1000,
                || (),
                |_, i| {
                    seen.lock().unwrap().push(i);
                    Ok(())
                },
            )
            .unwrap();
            let mut seen = seen.into_inner().unwrap();
            seen.sort_unstable();
            assert_eq!(seen, (0..1000).collect::<Vec<_>>());
            assert_eq!(pool.busy.load(Ordering::Relaxed), 0);
        }
    }

    #[test]
    fn the_lowest_failing_index_wins() {
        let pool = Pool::new(3);
        let e = pool
            .run(
                100,
                || (),
                |_, i| {
                    if i % 10 == 7 {
                        Err(Error::new(ErrorKind::Io, format!("block {i}")))
                    } else {
                        Ok(())
                    }
                },
            )
            .unwrap_err();
        assert_eq!(e.message(), "block 7");
        assert_eq!(pool.busy.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn concurrent_calls_share_the_helpers() {
        let pool = Arc::new(Pool::new(3));
        let threads_seen = Arc::new(Mutex::new(HashSet::new()));
        let max_busy = Arc::new(AtomicUsize::new(0));
        let callers: Vec<_> = (0..4)
            .map(|_| {
                let (pool, seen, max_busy) = (pool.clone(), threads_seen.clone(), max_busy.clone());
                std::thread::spawn(move || {
                    pool.run(
                        50,
                        || (),
                        |_, _| {
                            seen.lock().unwrap().insert(std::thread::current().id());
                            max_busy
                                .fetch_max(pool.busy.load(Ordering::Relaxed), Ordering::Relaxed);
                            std::thread::sleep(std::time::Duration::from_millis(1));
                            Ok(())
                        },
                    )
                })
            })
            .collect();
        for c in callers {
            c.join().unwrap().unwrap();
        }
        assert!(
            max_busy.load(Ordering::Relaxed) <= 2,
            "never more than threads - 1 helpers"
        );
        assert_eq!(pool.busy.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_panicking_task_releases_its_helpers() {
        let pool = Pool::new(2);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.run(
                10,
                || (),
                |_, i| if i == 3 { panic!("boom") } else { Ok(()) },
            )
        }));
        assert!(r.is_err());
        assert_eq!(pool.busy.load(Ordering::Relaxed), 0);
    }
}
