//! Where threads run: the CPU a thread is on, pinning a thread to one, and keeping a helper
//! thread off the CPU of the thread it works for.

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
}
