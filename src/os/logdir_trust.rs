//! Whether the daemon may use a log dir, the way `sshd` StrictModes trusts a path: a root
//! daemon refuses a log dir that another user could steer it through. Every directory from `/`
//! down to the log dir must be owned by root (or the daemon's user) and not writable by group
//! or others, except an ancestor with the sticky bit (`/tmp`), where nobody can rename or
//! remove what root created. `allow_untrusted_log_dir` accepts such a dir anyway.
//!
//! A missing log dir is created, then reopened with `O_NOFOLLOW` and checked to be the
//! directory just created: a symbolic link planted at the path (say at the default
//! `/tmp/topicfs-logs`) is refused, never followed. The default log dir, and any log dir created
//! in a sticky (shared, world-writable) directory such as `/tmp`, is created with mode 0700;
//! elsewhere a new log dir gets the umask's mode, as `mkdir -p` (and a Kafka broker) give it.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

fn refuse(dir: &Path, why: String) -> Error {
    Error::UntrustedLogDir(format!(
        "refusing log dir {}: {why}; another user could steer the daemon through it \
         (pass --allow-untrusted-log-dir or -o allow_untrusted_log_dir to accept it)",
        dir.display()
    ))
}

fn cstr(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

fn fstat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: a zeroed stat is a valid out-parameter; fd is open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is borrowed open for the call; `st` is ours to fill.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// `openat(dirfd, name, flags)` as an owned fd.
fn open_at(dirfd: Option<&OwnedFd>, name: &Path, flags: i32) -> io::Result<OwnedFd> {
    let c = cstr(name)?;
    let at = dirfd.map_or(libc::AT_FDCWD, |f| f.as_raw_fd());
    // SAFETY: NUL-terminated name; the result is a new fd we own.
    let fd = unsafe { libc::openat(at, c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just opened.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Makes `dir` usable as a log dir: creates it (0700) if it is missing and `create_missing`,
/// checks it, and returns its canonical path (no symbolic link left in it to be swapped later).
pub fn prepare(dir: &Path, allow_untrusted: bool, create_missing: bool) -> Result<PathBuf> {
    let dir = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()?.join(dir)
    };
    let me = euid();
    let mut attempts = 0;
    loop {
        attempts += 1;
        match std::fs::symlink_metadata(&dir) {
            Ok(md) if md.file_type().is_symlink() => {
                if !allow_untrusted && md.uid() != 0 && md.uid() != me {
                    return Err(refuse(
                        &dir,
                        format!("it is a symbolic link owned by uid {}", md.uid()),
                    ));
                }
                break;
            }
            Ok(md) if md.is_dir() => break,
            Ok(_) => {
                return Err(Error::from(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    format!("log dir {} is not a directory", dir.display()),
                )));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && attempts < 4 && create_missing => {
                create(&dir, me, allow_untrusted)?;
            }
            Err(e) => {
                return Err(Error::from(io::Error::new(
                    e.kind(),
                    format!("log dir {}: {e}", dir.display()),
                )));
            }
        }
    }
    let canonical = dir.canonicalize().map_err(|e| {
        Error::from(io::Error::new(
            e.kind(),
            format!("log dir {}: {e}", dir.display()),
        ))
    })?;
    if me == 0 && !allow_untrusted {
        check_chain(&dir, &canonical, me)?;
    }
    Ok(canonical)
}

/// Creates a missing log dir (its missing parents as `mkdir -p` would), then checks, without
/// following a link, that the path is the directory we created.
fn create(dir: &Path, me: u32, allow_untrusted: bool) -> Result<()> {
    let cannot = |e: io::Error| {
        Error::from(io::Error::new(
            e.kind(),
            format!("cannot create log dir {}: {e}", dir.display()),
        ))
    };
    let mut shared = dir == Path::new(crate::base::DEFAULT_LOG_DIR);
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(cannot)?;
        let md = std::fs::metadata(parent).map_err(cannot)?;
        shared |= md.mode() & libc::S_ISVTX != 0;
    }
    let mode = if shared { 0o700 } else { 0o777 };
    match std::fs::DirBuilder::new().mode(mode).create(dir) {
        Ok(()) => {}
        // Someone else created it first: the caller looks at what is there now.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(cannot(e)),
    }
    let fd = match open_at(
        None,
        dir,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
    ) {
        Ok(fd) => fd,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
            return Err(refuse(
                dir,
                "a symbolic link replaced it while it was being created".to_string(),
            ));
        }
        Err(e) => return Err(cannot(e)),
    };
    let st = fstat(&fd).map_err(cannot)?;
    if !allow_untrusted && st.st_uid != me {
        return Err(refuse(
            dir,
            format!(
                "it was replaced by a directory of uid {} while it was being created",
                st.st_uid
            ),
        ));
    }
    Ok(())
}

/// Walks `canonical` from `/` with `O_NOFOLLOW`, checking each directory's owner and mode.
fn check_chain(dir: &Path, canonical: &Path, me: u32) -> Result<()> {
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    let io_err = |e: io::Error| {
        Error::from(io::Error::new(
            e.kind(),
            format!("log dir {}: {e}", dir.display()),
        ))
    };
    let mut fd = open_at(None, Path::new("/"), flags).map_err(io_err)?;
    let mut at = PathBuf::from("/");
    let names: Vec<&std::ffi::OsStr> = canonical
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    for i in 0..=names.len() {
        let st = fstat(&fd).map_err(io_err)?;
        let leaf = i == names.len();
        let what = if leaf {
            "it".to_string()
        } else {
            format!("its ancestor {}", at.display())
        };
        if st.st_uid != 0 && st.st_uid != me {
            return Err(refuse(
                dir,
                format!("{what} is owned by uid {}, not root", st.st_uid),
            ));
        }
        let sticky = st.st_mode & libc::S_ISVTX != 0;
        if st.st_mode & 0o022 != 0 && (leaf || !sticky) {
            return Err(refuse(
                dir,
                format!(
                    "{what} is writable by {} (mode {:o}{})",
                    if st.st_mode & 0o002 != 0 {
                        "every user"
                    } else {
                        "its group"
                    },
                    st.st_mode & 0o7777,
                    if leaf && sticky {
                        "; the sticky bit does not protect a log dir's own entries"
                    } else {
                        ""
                    }
                ),
            ));
        }
        if leaf {
            break;
        }
        let name = Path::new(names[i]);
        fd = match open_at(Some(&fd), name, flags) {
            Ok(f) => f,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
                return Err(refuse(
                    dir,
                    format!(
                        "{} changed into a symbolic link while it was being checked",
                        at.join(name).display()
                    ),
                ));
            }
            Err(e) => return Err(io_err(e)),
        };
        at.push(name);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_missing_dir_in_a_sticky_dir_is_created_0700_and_a_world_writable_one_refused() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        std::fs::create_dir(&a).unwrap();
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let d = a.join("logs");
        let got = prepare(&d, false, true).unwrap();
        assert_eq!(got, d.canonicalize().unwrap());
        let md = std::fs::metadata(&d).unwrap();
        assert_eq!(md.permissions().mode() & 0o7777, 0o700);
        if euid() == 0 {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
            let e = prepare(&d, false, true).unwrap_err().to_string();
            assert!(e.contains("writable by every user"), "{e}");
            prepare(&d, true, true).unwrap();
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
            let parent = t.path().join("a");
            std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o775)).unwrap();
            let e = prepare(&d, false, true).unwrap_err().to_string();
            assert!(e.contains("writable by its group"), "{e}");
        }
    }
}
