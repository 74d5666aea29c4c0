//! Where threads run: the CPU a thread is on, pinning a thread to one, keeping a helper
//! thread off the CPU of the thread it works for, and stepping aside for the tasks a
//! pinned thread answers.

/// The CPU the calling thread runs on (None where the kernel does not say).
pub fn current() -> Option<usize> {
    // SAFETY: sched_getcpu takes no argument and only returns a number.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// Pins the calling thread to `cpu`.
pub fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET and sched_setaffinity take it by
    // pointer for the calling thread (0).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
    }
}

/// A helper thread's placement: the CPUs it may run on when it started (its process's
/// affinity), less the one CPU it keeps off, the CPU of the thread it last worked for.
///
/// A thread that hands work to a helper and goes on with work of its own (a reply copied to
/// its reader while the helper prepares the next) gains nothing when the scheduler puts the
/// helper on its CPU: the two then take turns instead of running side by side. Left to
/// itself the scheduler often does, as it wakes a thread near its waker.
pub struct Placement {
    allowed: libc::cpu_set_t,
    avoiding: Option<usize>,
}

impl Placement {
    /// The calling thread's placement, as its affinity is now.
    pub fn of_this_thread() -> Placement {
        // Should the kernel not say, the set is empty and `avoid` never acts.
        Placement {
            allowed: this_threads_cpus(),
            avoiding: None,
        }
    }

    /// Keeps the calling thread (the one whose placement this is) off `cpu` when it may run
    /// on another; on all of its CPUs for None, or a CPU it may not use anyway. Asks the
    /// kernel only when the CPU to keep off changes.
    pub fn avoid(&mut self, cpu: Option<usize>) {
        let cpu = cpu.filter(|&c| {
            // SAFETY: CPU_ISSET and CPU_COUNT read the set; the index is below its size.
            c < libc::CPU_SETSIZE as usize
                && unsafe {
                    libc::CPU_ISSET(c, &self.allowed) && libc::CPU_COUNT(&self.allowed) > 1
                }
        });
        if cpu == self.avoiding {
            return;
        }
        let mut set = self.allowed;
        if let Some(c) = cpu {
            // SAFETY: clears one bit, below the set's size, of our own copy of the set.
            unsafe { libc::CPU_CLR(c, &mut set) };
        }
        // SAFETY: sets the calling thread's affinity from a set on the stack.
        let r = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
        if r == 0 {
            self.avoiding = cpu;
        }
    }
}

/// A pinned thread that steps aside for the tasks it answers: SCHED_IDLE while nothing else
/// of its own scheduling group wants its CPU, its own policy again for a while when
/// something does.
///
/// A thread pinned to a CPU that answers a task of the same CPU wakes that task while it still
/// runs itself. The scheduler then finds the CPU busy and moves the task to another one when
/// that one idles, and the task's next request lands on the other CPU's queue: every
/// request crosses CPUs. A CPU whose only runnable thread is SCHED_IDLE counts as idle when
/// the kernel places a waking task, so the task stays on the CPU it came from.
///
/// A SCHED_IDLE thread only gets the CPU time its group's other threads leave. So the thread,
/// at its `tick`s and at most once a `WINDOW`, reads how long it sat runnable but not running
/// (its schedstat's run delay) and how many times it ran: waits of more than `SLICE_WAIT` a
/// run on average, `WAITED` in all, and it takes its own policy back for `BACK` (longer while
/// it is still kept waiting). Switching a policy costs about 1.5 µs here, too much to do at
/// every request. Threads it starts inherit SCHED_IDLE and its CPU: they call
/// [`as_the_process`] first.
pub struct StepAside {
    /// The policy the thread goes back to (SCHED_OTHER or SCHED_BATCH).
    policy: libc::c_int,
    /// /proc/thread-self/schedstat: time on the CPU, time runnable but waiting, runs.
    schedstat: std::fs::File,
    /// The start of the window, and the run delay and runs then.
    since: std::time::Instant,
    waited: u64,
    runs: u64,
    /// Back on its own policy until then.
    back_until: Option<std::time::Instant>,
    /// A failed switch was logged.
    warned: bool,
}

/// How often a thread that steps aside checks whether it was kept waiting, at most.
const WINDOW: std::time::Duration = std::time::Duration::from_millis(20);
/// The average wait a run, and the waits in all, that say it was kept waiting (ns). A task it
/// answered runs before it when woken: microseconds, not this.
const SLICE_WAIT: u64 = 500_000;
const WAITED: u64 = 2_000_000;
/// How long it then keeps its own policy before it tries SCHED_IDLE again.
const BACK: std::time::Duration = std::time::Duration::from_secs(1);

impl StepAside {
    /// Puts the calling thread on SCHED_IDLE, when it runs under a fair policy, can read its
    /// run delay, and may leave SCHED_IDLE again (root, CAP_SYS_NICE or an RLIMIT_NICE that
    /// allows its nice value: tried first on a thread of its own). None, and no change,
    /// otherwise.
    pub fn for_this_thread() -> Option<StepAside> {
        // SAFETY: sched_getscheduler of the calling thread (0) only returns a number.
        let policy = unsafe { libc::sched_getscheduler(0) };
        if policy != libc::SCHED_OTHER && policy != libc::SCHED_BATCH {
            return None;
        }
        let schedstat = std::fs::File::open("/proc/thread-self/schedstat").ok()?;
        let (waited, runs) = run_delay(&schedstat)?;
        (may_leave_idle() && set_policy(libc::SCHED_IDLE)).then(|| StepAside {
            policy,
            schedstat,
            since: std::time::Instant::now(),
            waited,
            runs,
            back_until: None,
            warned: false,
        })
    }

    /// Whether the thread is on SCHED_IDLE now.
    pub fn aside(&self) -> bool {
        self.back_until.is_none()
    }

    /// Called by the thread between pieces of work: a clock read, and once a window its run
    /// delay, to decide its policy.
    pub fn tick(&mut self) {
        let now = std::time::Instant::now();
        if now.duration_since(self.since) < WINDOW {
            return;
        }
        // Not known is taken as kept waiting.
        let kept = match run_delay(&self.schedstat) {
            Some((waited, runs)) => {
                let kept = kept_waiting(
                    waited.saturating_sub(self.waited),
                    runs.saturating_sub(self.runs),
                );
                (self.waited, self.runs) = (waited, runs);
                kept
            }
            None => true,
        };
        self.since = now;
        let back_until = self.back_until;
        match back_until {
            None if kept && self.switch(self.policy) => {
                log::debug!("a pinned thread kept waiting for its CPU takes its policy back");
                self.back_until = Some(now + BACK);
            }
            Some(_) if kept => self.back_until = Some(now + BACK),
            Some(t) if now >= t && self.switch(libc::SCHED_IDLE) => self.back_until = None,
            _ => {}
        }
    }

    /// Sets the thread's policy; a failure is logged once.
    fn switch(&mut self, policy: libc::c_int) -> bool {
        let done = set_policy(policy);
        if !done && !self.warned {
            self.warned = true;
            log::warn!(
                "a pinned thread could not change its scheduling policy: {}",
                std::io::Error::last_os_error()
            );
        }
        done
    }
}

/// Whether a thread of this process may leave SCHED_IDLE once in it (root, CAP_SYS_NICE or an
/// RLIMIT_NICE that allows its nice value): tried on a thread of its own, once (each queue
/// thread of the rings asks).
pub fn may_leave_idle() -> bool {
    static MAY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if let Some(&may) = MAY.get() {
        return may;
    }
    let probe = std::thread::Builder::new().spawn(|| {
        // SAFETY: sched_getscheduler of the calling thread only returns a number.
        let policy = unsafe { libc::sched_getscheduler(0) };
        set_policy(libc::SCHED_IDLE) && set_policy(policy)
    });
    // A thread that could not be started says nothing: asked again next time.
    match probe {
        Ok(t) => *MAY.get_or_init(|| t.join().unwrap_or(false)),
        Err(_) => false,
    }
}

/// Whether a thread that waited `waited` ns for its CPU over `runs` runs was kept waiting.
fn kept_waiting(waited: u64, runs: u64) -> bool {
    waited > WAITED && waited / runs.max(1) > SLICE_WAIT
}

/// The run delay (ns) and the runs, from a thread's schedstat (its second and third fields).
fn run_delay(schedstat: &std::fs::File) -> Option<(u64, u64)> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 96];
    let n = schedstat.read_at(&mut buf, 0).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    let mut fields = text.split_ascii_whitespace().skip(1);
    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
}

/// The CPUs the calling thread may run on; an empty set where the kernel does not say.
fn this_threads_cpus() -> libc::cpu_set_t {
    // SAFETY: a zeroed cpu_set_t is an empty set, filled by sched_getaffinity for the calling
    // thread (left empty when it fails).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set);
        set
    }
}

/// A thread's CPUs and scheduling policy.
#[derive(Clone, Copy)]
struct Placed {
    cpus: libc::cpu_set_t,
    policy: libc::c_int,
}

impl Placed {
    /// The calling thread's.
    fn of_this_thread() -> Placed {
        Placed {
            cpus: this_threads_cpus(),
            // SAFETY: sched_getscheduler of the calling thread only returns a number.
            policy: unsafe { libc::sched_getscheduler(0) },
        }
    }

    /// Puts the calling thread there (what the kernel did not say is left as it is).
    fn apply(&self) {
        if cpus_in(&self.cpus) > 0 {
            // SAFETY: sets the calling thread's (0) affinity from a set it holds.
            unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &self.cpus) };
        }
        // SAFETY: sched_getscheduler of the calling thread only returns a number.
        if self.policy >= 0 && unsafe { libc::sched_getscheduler(0) } != self.policy {
            set_policy(self.policy);
        }
    }
}

/// The process's CPUs and policy, as the thread that started the pinned threads had them.
static PROCESS: std::sync::OnceLock<Placed> = std::sync::OnceLock::new();

/// Remembers the calling thread's CPUs and policy as the process's, before it starts threads
/// that pin themselves or step aside.
pub fn remember_process() {
    PROCESS.get_or_init(Placed::of_this_thread);
}

/// Puts the calling thread on the process's CPUs and policy: the first thing a long-lived
/// thread does, as it may be started by a pinned thread that stepped aside (a read-ahead
/// pool started by a read served on a ring). Nothing before [`remember_process`].
pub fn as_the_process() {
    if let Some(process) = PROCESS.get() {
        process.apply();
    }
}

/// Runs `f` with the calling thread on the process's CPUs and policy, then puts back its own:
/// for a library call that starts threads of the library's (they inherit the calling
/// thread's, and no code of the daemon runs on them to take the process's back).
pub fn as_the_process_while<T>(f: impl FnOnce() -> T) -> T {
    let Some(process) = PROCESS.get() else {
        return f();
    };
    let own = Own(Placed::of_this_thread());
    process.apply();
    let out = f();
    drop(own);
    out
}

/// A thread's own CPUs and policy, put back when dropped (also when the call made as the
/// process panics: a ring's thread goes on after a request's panic).
struct Own(Placed);

impl Drop for Own {
    fn drop(&mut self) {
        self.0.apply();
    }
}

/// Starts a long-lived thread of the daemon, named `name`, that first takes the process's CPUs
/// and policy ([`as_the_process`]).
pub fn spawn<T: Send + 'static>(
    name: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<T>> {
    std::thread::Builder::new().name(name).spawn(move || {
        as_the_process();
        f()
    })
}

/// How many CPUs `set` holds.
fn cpus_in(set: &libc::cpu_set_t) -> libc::c_int {
    // SAFETY: counts a set.
    unsafe { libc::CPU_COUNT(set) }
}

/// Sets the calling thread's scheduling policy (a non real-time one: priority 0).
fn set_policy(policy: libc::c_int) -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sets the calling thread's (0) policy from a parameter on the stack.
    unsafe { libc::sched_setscheduler(0, policy, &param) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many CPUs the calling thread may run on now.
    fn affinity_count() -> i32 {
        // SAFETY: counts a set.
        unsafe { libc::CPU_COUNT(&Placement::of_this_thread().allowed) }
    }

    /// A thread told to keep off the CPU it runs on leaves it (when it may run elsewhere) and
    /// goes back to all of its CPUs when told to keep off none.
    #[test]
    fn a_helper_leaves_the_cpu_it_keeps_off() {
        std::thread::spawn(|| {
            let cpus = affinity_count();
            let mut p = Placement::of_this_thread();
            let here = current().expect("sched_getcpu");
            p.avoid(Some(here));
            if cpus > 1 {
                assert_eq!(p.avoiding, Some(here));
                assert_eq!(affinity_count(), cpus - 1);
                // The kernel moves a thread off a CPU its affinity lost before it returns.
                assert_ne!(current(), Some(here));
            } else {
                assert_eq!(p.avoiding, None);
                assert_eq!(affinity_count(), cpus);
            }
            p.avoid(None);
            assert_eq!(p.avoiding, None);
            assert_eq!(affinity_count(), cpus);
            // A CPU out of the set is no reason to change anything.
            p.avoid(Some(libc::CPU_SETSIZE as usize + 1));
            assert_eq!(affinity_count(), cpus);
        })
        .join()
        .unwrap();
    }

    /// Long waits a run are being kept waiting; many short ones (the woken tasks running
    /// first) or one alone are not.
    #[test]
    fn kept_waiting_is_long_waits_a_run() {
        assert!(!kept_waiting(0, 0));
        assert!(!kept_waiting(1_000_000, 1));
        assert!(!kept_waiting(10_000_000, 1_000));
        assert!(kept_waiting(10_000_000, 10));
        assert!(kept_waiting(2_000_001, 0));
    }

    /// A thread that stepped aside takes its policy back when a busy thread of its own group
    /// shares its CPU, and steps aside again once the CPU is its own.
    #[test]
    fn a_thread_kept_waiting_takes_its_policy_back() {
        let cpu = current().expect("sched_getcpu");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let started = std::sync::Arc::new(std::sync::Barrier::new(2));
        let hog = {
            let (stop, started) = (stop.clone(), started.clone());
            std::thread::spawn(move || {
                started.wait();
                pin_to(cpu);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        let outcome = std::thread::spawn(move || {
            pin_to(cpu);
            // SAFETY: sched_getscheduler of the calling thread only returns a number.
            let policy = || unsafe { libc::sched_getscheduler(0) };
            let own = policy();
            let Some(mut aside) = StepAside::for_this_thread() else {
                assert!(!may_leave_idle(), "it steps aside where it may come back");
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                started.wait();
                return None;
            };
            assert_eq!(policy(), libc::SCHED_IDLE);
            started.wait();
            let until = |aside: &mut StepAside, want: bool| {
                let t0 = std::time::Instant::now();
                while aside.aside() != want && t0.elapsed() < std::time::Duration::from_secs(20) {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    aside.tick();
                }
                t0.elapsed()
            };
            let back = until(&mut aside, false);
            let back_policy = policy();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let again = until(&mut aside, true);
            Some((back, back_policy == own, aside.aside(), again, policy()))
        })
        .join()
        .unwrap();
        hog.join().unwrap();
        if let Some((back, back_policy, aside, again, policy)) = outcome {
            assert!(back < std::time::Duration::from_secs(20), "{back:?}");
            assert!(back_policy, "its own policy back");
            assert!(aside, "stepped aside again after {again:?}");
            assert!(again >= BACK / 2, "{again:?}");
            assert_eq!(policy, libc::SCHED_IDLE);
        }
    }

    /// A pinned thread on SCHED_IDLE makes a call as the process (a thread the call starts has
    /// the process's CPUs and policy), and has its own back after it.
    #[test]
    fn a_call_as_the_process_then_the_threads_own_again() {
        remember_process();
        let Placed { cpus: set, policy } = *PROCESS.get().unwrap();
        let cpu = current().expect("sched_getcpu");
        // SAFETY: sched_getscheduler only returns a number.
        let policy_now = || unsafe { libc::sched_getscheduler(0) };
        let (idle, inside, after) = std::thread::spawn(move || {
            pin_to(cpu);
            let idle = set_policy(libc::SCHED_IDLE);
            let inside = as_the_process_while(|| {
                std::thread::spawn(move || (affinity_count(), policy_now()))
                    .join()
                    .unwrap()
            });
            (idle, inside, (affinity_count(), policy_now()))
        })
        .join()
        .unwrap();
        assert!(idle, "SCHED_IDLE may always be asked for");
        assert_eq!(inside.0, cpus_in(&set));
        if may_leave_idle() {
            assert_eq!(inside.1, policy);
        }
        assert_eq!(after, (1, libc::SCHED_IDLE), "its own CPU and policy back");
        // Also after a panic in the call.
        let after_panic = std::thread::spawn(move || {
            pin_to(cpu);
            set_policy(libc::SCHED_IDLE);
            let panicked = std::panic::catch_unwind(|| as_the_process_while(|| panic!("planted")));
            (panicked.is_err(), affinity_count(), policy_now())
        })
        .join()
        .unwrap();
        assert_eq!(after_panic, (true, 1, libc::SCHED_IDLE));
    }

    /// A thread started by a pinned thread on SCHED_IDLE takes the process's CPUs and policy
    /// back.
    #[test]
    fn a_thread_started_by_a_pinned_idle_thread_is_the_processs() {
        remember_process();
        let Placed { cpus: set, policy } = *PROCESS.get().unwrap();
        let cpu = current().expect("sched_getcpu");
        let got = std::thread::spawn(move || {
            pin_to(cpu);
            let idle = set_policy(libc::SCHED_IDLE);
            std::thread::spawn(|| {
                as_the_process();
                // SAFETY: sched_getscheduler only returns a number.
                (affinity_count(), unsafe { libc::sched_getscheduler(0) })
            })
            .join()
            .map(|got| (idle, got))
        })
        .join()
        .unwrap()
        .unwrap();
        assert!(got.0, "SCHED_IDLE may always be asked for");
        assert_eq!(got.1.0, cpus_in(&set));
        // Leaving SCHED_IDLE takes root, CAP_SYS_NICE or an RLIMIT_NICE for it.
        if may_leave_idle() {
            assert_eq!(got.1.1, policy);
        }
    }
}
