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

/// The process (thread group) of thread `tid`. The thread that leads its group (a process's
/// first thread: every single-threaded program's) is its own process, known by one
/// `pidfd_open` without formatting and parsing its /proc status, which a stream's every open
/// asks (see `FsState::opened`).
pub fn tgid_of(tid: u32) -> Option<u32> {
    if leads_its_group(tid) {
        return Some(tid);
    }
    status_field(&proc_status(tid)?, "Tgid:")?.parse().ok()
}

/// Whether thread `tid` leads its thread group: pidfd_open(2) without PIDFD_THREAD opens
/// only such a thread (EINVAL for the others, ESRCH for none; ENOSYS before Linux 5.3).
fn leads_its_group(tid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(tid) else {
        return false;
    };
    // SAFETY: pidfd_open takes two integers; a descriptor it returns is ours to close.
    unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, pid, 0);
        if fd < 0 {
            return false;
        }
        libc::close(fd as libc::c_int);
    }
    true
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

    #[test]
    fn a_process_is_found_from_its_first_thread_and_from_the_others() {
        let me = std::process::id();
        // Where pidfd_open(2) is refused (before Linux 5.3, some seccomp filters) every
        // thread is found through /proc, which the rest of the test checks too.
        // SAFETY: as in leads_its_group.
        let refused = unsafe { libc::syscall(libc::SYS_pidfd_open, 0, 0) } < 0
            && matches!(
                std::io::Error::last_os_error().raw_os_error(),
                Some(libc::ENOSYS | libc::EPERM)
            );
        assert_eq!(leads_its_group(me), !refused);
        assert_eq!(tgid_of(me), Some(me));
        // Another thread of this process: not a leader, found through /proc.
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(thread_id()).unwrap();
            done_rx.recv().unwrap();
        });
        let tid = rx.recv().unwrap();
        assert!(!leads_its_group(tid));
        assert_eq!(tgid_of(tid), Some(me));
        done_tx.send(()).unwrap();
        t.join().unwrap();
        // A thread that does not exist: none.
        assert!(!leads_its_group(u32::MAX - 1));
        assert_eq!(tgid_of(u32::MAX - 1), None);
        // Another process's first thread.
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert_eq!(tgid_of(child.id()), Some(child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
