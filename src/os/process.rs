//! What the kernel tells of processes and threads: /proc's status lines, ids.

/// `/proc/<tid>/status` of a thread, and one field of it.
fn proc_status(tid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{tid}/status")).ok()
}

fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .map(str::trim)
}

/// Whether thread `tid` has a signal pending that it neither blocks nor ignores, as
/// `/proc/<tid>/status` shows it (a fatal signal shows as SIGKILL). A thread that is gone
/// counts as interrupted.
pub fn signal_pending(tid: u32) -> bool {
    let Some(status) = proc_status(tid) else {
        return true;
    };
    let mask = |name: &str| -> u64 {
        status_field(&status, name)
            .and_then(|v| u64::from_str_radix(v, 16).ok())
            .unwrap_or(0)
    };
    let pending = mask("SigPnd:") | mask("ShdPnd:");
    pending & !mask("SigBlk:") & !mask("SigIgn:") != 0
}

/// The process (thread group) of thread `tid`.
pub fn tgid_of(tid: u32) -> Option<u32> {
    status_field(&proc_status(tid)?, "Tgid:")?.parse().ok()
}

/// The real user and group ids of this process.
pub fn user_ids() -> (u32, u32) {
    // SAFETY: getuid/getgid take nothing and cannot fail.
    unsafe { (libc::getuid(), libc::getgid()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's id.
    fn thread_id() -> u32 {
        // SAFETY: gettid takes nothing and cannot fail.
        unsafe { libc::gettid() as u32 }
    }

    #[test]
    fn signals_of_a_thread_are_read_from_proc() {
        // This thread has nothing pending; a thread that does not exist counts as gone.
        assert!(!signal_pending(thread_id()));
        assert!(signal_pending(u32::MAX - 1));
        assert_eq!(tgid_of(thread_id()), Some(std::process::id()));
    }
}
