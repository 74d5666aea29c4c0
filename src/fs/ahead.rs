//! Read-ahead: a few threads that prepare a stream's next reply while the current one is
//! copied to its reader. A sequential reader (`cat`) then waits for the larger of the two
//! (decoding the next bytes, the kernel's copy of these), not for their sum.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

use crate::sync::MutexExt;

type Job = Box<dyn FnOnce() + Send>;

/// Threads of the pool: enough for a few readers at once, never more than the machine's
/// cores (they only decode).
fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4))
}

fn pool() -> &'static Mutex<Sender<Job>> {
    static POOL: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads() {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("read-ahead-{i}"))
                .spawn(move || {
                    loop {
                        let job = rx.guard().recv();
                        match job {
                            // A panicking job loses its own result only (its sender is
                            // dropped: the waiter is told), never the thread.
                            Ok(job) => {
                                let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
                            }
                            Err(_) => return,
                        }
                    }
                })
                .expect("spawning a read-ahead thread");
        }
        Mutex::new(tx)
    })
}

/// Work running on the pool: `wait` returns what it made.
pub struct Ahead<T> {
    rx: Receiver<T>,
}

/// Runs `work` on the pool. Should the pool be gone (it never ends), `work` runs here.
pub fn spawn<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Ahead<T> {
    let (tx, rx) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        // The receiver may be gone (the file was closed): what was made is dropped here.
        let _ = tx.send(work());
    });
    if let Err(mpsc::SendError(job)) = pool().guard().send(job) {
        job();
    }
    Ahead { rx }
}

impl<T> Ahead<T> {
    /// What the work made; None if it panicked.
    pub fn wait(self) -> Option<T> {
        self.rx.recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_runs_on_another_thread_and_comes_back() {
        let here = std::thread::current().id();
        let jobs: Vec<_> = (0..20)
            .map(|i| spawn(move || (i * 2, std::thread::current().id())))
            .collect();
        for (i, job) in jobs.into_iter().enumerate() {
            let (v, id) = job.wait().unwrap();
            assert_eq!(v, i * 2);
            assert_ne!(id, here);
        }
    }

    #[test]
    fn a_panicking_job_is_reported_and_the_pool_lives_on() {
        // More panics than threads: a thread that died with its job would leave none.
        for _ in 0..=threads() {
            let job = spawn(|| -> usize { panic!("a job that panics") });
            assert_eq!(job.wait(), None);
        }
        let job = spawn(|| 7usize);
        let got = job.rx.recv_timeout(std::time::Duration::from_secs(30));
        assert_eq!(got, Ok(7));
    }
}
