//! Read-ahead: a few threads that prepare a stream's next reply while the current one is
//! copied to its reader. A sequential reader (`cat`) then waits for the larger of the two
//! (decoding the next bytes, the kernel's copy of these), not for their sum, when the two run
//! on different CPUs: a pool thread keeps off the CPU of the thread that handed it its work.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

use crate::os::cpu::{self, Placement};
use crate::util::sync::MutexExt;

/// Work for the pool, and the CPU of the thread that handed it over, which the pool thread
/// that takes it keeps off (see [`Placement`]).
type Job = (Box<dyn FnOnce() + Send>, Option<usize>);

/// Threads of the pool: one per core, at least two, at most four (they decode; a reader
/// whose work waits behind others' takes it back, see [`Ahead::wait`]).
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
            cpu::spawn(format!("read-ahead-{i}"), move || {
                let mut placement = Placement::of_this_thread();
                loop {
                    let job = rx.guard().recv();
                    match job {
                        // A panicking job loses its own result only (its sender is
                        // dropped: the waiter is told), never the thread.
                        Ok((job, from)) => {
                            // The request's thread copies its reply to the reader
                            // while this one prepares the next: side by side, not in
                            // turns.
                            placement.avoid(from);
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

/// The work of an [`Ahead`], taken by whichever comes first: a pool thread, or the waiter.
type Work<T> = Arc<Mutex<Option<Box<dyn FnOnce() -> T + Send>>>>;

/// Work running on the pool: `wait` returns what it made.
pub struct Ahead<T> {
    work: Work<T>,
    rx: Receiver<T>,
}

/// Runs `work` on the pool. Should the pool be gone (it never ends), `work` runs here.
pub fn spawn<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Ahead<T> {
    let (tx, rx) = mpsc::sync_channel(1);
    let work: Work<T> = Arc::new(Mutex::new(Some(Box::new(work))));
    let slot = work.clone();
    let job: Box<dyn FnOnce() + Send> = Box::new(move || {
        // None: the waiter took the work back before a pool thread came to it.
        let work = slot.guard().take();
        if let Some(work) = work {
            // The receiver may be gone (the file was closed): what was made is dropped here.
            let _ = tx.send(work());
        }
    });
    if let Err(mpsc::SendError((job, _))) = pool().guard().send((job, cpu::current())) {
        job();
    }
    Ahead { work, rx }
}

impl<T> Ahead<T> {
    /// Whether a pool thread took the work (or it ran already): [`Ahead::wait`] would then
    /// wait for it instead of doing it.
    pub fn started(&self) -> bool {
        self.work.guard().is_none()
    }

    /// What the work made; None if it panicked. Work no pool thread has started yet (the
    /// pool busy with other streams' work) is done here instead of waiting behind it.
    pub fn wait(self) -> Option<T> {
        let work = self.work.guard().take();
        if let Some(work) = work {
            return std::panic::catch_unwind(AssertUnwindSafe(work)).ok();
        }
        self.rx.recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits until a pool thread took the work (it is no longer the waiter's to take).
    fn started<T>(job: &Ahead<T>) {
        let t0 = std::time::Instant::now();
        while job.work.guard().is_some() {
            assert!(t0.elapsed().as_secs() < 60, "no pool thread took the work");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn work_runs_on_another_thread_and_comes_back() {
        let here = std::thread::current().id();
        let jobs: Vec<_> = (0..20)
            .map(|i| spawn(move || (i * 2, std::thread::current().id())))
            .collect();
        for (i, job) in jobs.into_iter().enumerate() {
            started(&job);
            let (v, id) = job.wait().unwrap();
            assert_eq!(v, i * 2);
            assert_ne!(id, here);
        }
    }

    /// Work still queued behind a busy pool is done by its waiter instead.
    #[test]
    fn a_waiter_takes_back_work_no_thread_started() {
        let (release, blocked) = std::sync::mpsc::channel::<()>();
        let blocked = Arc::new(Mutex::new(blocked));
        // Every pool thread busy until released.
        let busy: Vec<_> = (0..threads())
            .map(|_| {
                let b = blocked.clone();
                spawn(move || {
                    let _ = b.guard().recv_timeout(std::time::Duration::from_secs(60));
                })
            })
            .collect();
        let here = std::thread::current().id();
        let queued = spawn(|| std::thread::current().id());
        assert_eq!(queued.wait(), Some(here), "done by the waiter");
        for _ in 0..threads() {
            release.send(()).unwrap();
        }
        for b in busy {
            assert_eq!(b.wait(), Some(()));
        }
    }

    #[test]
    fn a_panicking_job_is_reported_and_the_pool_lives_on() {
        // More panics than threads: a thread that died with its job would leave none.
        for _ in 0..=threads() {
            let job = spawn(|| -> usize { panic!("a job that panics") });
            started(&job);
            assert_eq!(job.wait(), None);
        }
        let job = spawn(|| 7usize);
        let got = job.rx.recv_timeout(std::time::Duration::from_secs(30));
        assert_eq!(got, Ok(7));
    }
}
