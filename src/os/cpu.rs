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
        // SAFETY: a zeroed cpu_set_t is an empty set, filled by sched_getaffinity for the
        // calling thread; should that fail, the set stays empty and `avoid` never acts.
        let allowed = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set);
            set
        };
        Placement {
            allowed,
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
                && unsafe { libc::CPU_ISSET(c, &self.allowed) && libc::CPU_COUNT(&self.allowed) > 1 }
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
/// A SCHED_IDLE thread only gets the CPU time its group's other threads leave. So the thread
/// measures, every `WINDOW`, how long it sat runnable but not running (its schedstat's run
/// delay): more than a quarter of the window and it takes its own policy back for `BACK`.
/// Switching a policy costs about 1.5 µs here, too much for every request.
pub struct StepAside {
    /// The policy the thread goes back to (SCHED_OTHER or SCHED_BATCH).
    policy: libc::c_int,
    /// /proc/thread-self/schedstat: time on the CPU, time runnable but waiting, slices.
    schedstat: std::fs::File,
    /// The start of the window and the run delay then.
    since: std::time::Instant,
    waited: u64,
    /// Back on its own policy until then.
    back_until: Option<std::time::Instant>,
}

/// How often a thread that steps aside checks whether it was kept waiting.
const WINDOW: std::time::Duration = std::time::Duration::from_millis(20);
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
        let waited = run_delay(&schedstat)?;
        let back = std::thread::spawn(move || set_policy(libc::SCHED_IDLE) && set_policy(policy))
            .join()
            .unwrap_or(false);
        (back && set_policy(libc::SCHED_IDLE)).then(|| StepAside {
            policy,
            schedstat,
            since: std::time::Instant::now(),
            waited,
            back_until: None,
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
        let wall = now.duration_since(self.since);
        if wall < WINDOW {
            return;
        }
        let Some(waited) = run_delay(&self.schedstat) else {
            return;
        };
        let kept = kept_waiting(wall, waited.saturating_sub(self.waited));
        self.since = now;
        self.waited = waited;
        match self.back_until {
            Some(t) if now >= t && set_policy(libc::SCHED_IDLE) => self.back_until = None,
            None if kept && set_policy(self.policy) => {
                log::debug!("a pinned thread kept waiting for its CPU takes its policy back");
                self.back_until = Some(now + BACK);
            }
            _ => {}
        }
    }
}

/// Whether a thread runnable but not running for `waited` ns of `wall` was kept waiting.
fn kept_waiting(wall: std::time::Duration, waited: u64) -> bool {
    u128::from(waited) * 4 > wall.as_nanos()
}

/// The run delay, in ns, from a thread's schedstat (its second field).
fn run_delay(schedstat: &std::fs::File) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 96];
    let n = schedstat.read_at(&mut buf, 0).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    text.split_ascii_whitespace().nth(1)?.parse().ok()
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

    /// A quarter of the window spent runnable but not running is being kept waiting.
    #[test]
    fn kept_waiting_is_a_quarter_of_the_window() {
        let w = std::time::Duration::from_millis(20);
        assert!(!kept_waiting(w, 0));
        assert!(!kept_waiting(w, 5_000_000));
        assert!(kept_waiting(w, 5_000_001));
        assert!(kept_waiting(w, 40_000_000));
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
            let Some(mut aside) = StepAside::for_this_thread() else {
                // Only root may leave SCHED_IDLE without an RLIMIT_NICE for it.
                // SAFETY: geteuid only returns a number.
                assert_ne!(unsafe { libc::geteuid() }, 0, "root may step aside");
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                return None;
            };
            // SAFETY: sched_getscheduler of the calling thread only returns a number.
            let policy = || unsafe { libc::sched_getscheduler(0) };
            assert_eq!(policy(), libc::SCHED_IDLE);
            started.wait();
            let until = |aside: &mut StepAside, want: bool| {
                let t0 = std::time::Instant::now();
                while aside.aside() != want && t0.elapsed() < std::time::Duration::from_secs(5) {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    aside.tick();
                }
                t0.elapsed()
            };
            let back = until(&mut aside, false);
            let back_policy = policy();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let again = until(&mut aside, true);
            Some((back, back_policy, aside.aside(), again, policy()))
        })
        .join()
        .unwrap();
        hog.join().unwrap();
        if let Some((back, back_policy, aside, again, policy)) = outcome {
            assert!(back < std::time::Duration::from_secs(5), "{back:?}");
            assert_eq!(back_policy, libc::SCHED_OTHER);
            assert!(aside, "stepped aside again after {again:?}");
            assert!(again >= BACK / 2, "{again:?}");
            assert_eq!(policy, libc::SCHED_IDLE);
        }
    }
}
