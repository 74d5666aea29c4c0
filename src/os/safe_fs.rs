//! File operations that never follow a symlink. A partition directory is a [`Dir`]; every
//! segment, index, snapshot and temporary file in it is opened, created, renamed and removed
//! relative to a descriptor of that directory with `O_NOFOLLOW` / the `*at` calls, so a link
//! planted in a log dir can never lead the daemon (often root) to a file elsewhere.
//!
//! A `Dir` holds no descriptor between operations (a daemon serving tens of thousands of
//! partitions would spend one each): each operation opens the directory again, refusing a
//! symlink, and checks it is still the same directory (device and inode). A directory that
//! was removed and recreated under the same name (a topic deleted and created again) is a
//! different one: the old `Dir` then fails with ENOENT and never touches the new one.
//! Files in a log dir's root (checkpoints, `meta.properties`, `.lock`) use the path helpers
//! at the bottom, which refuse a symlink as the last component.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How a file in a [`Dir`] is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
}

/// An open directory: the anchor of every `*at` call on the files inside it.
#[derive(Debug)]
pub struct Dir {
    path: PathBuf,
    id: DirId,
    /// Whether a symlink as the directory's own last component is followed (a log dir the
    /// operator named may be a link; a partition directory may not).
    follow: bool,
}

/// What tells one directory from another created later under the same name: an inode
/// number can be reused at once, so its birth time goes with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DirId {
    dev: (u32, u32),
    ino: u64,
    btime: (i64, u32),
}

fn cstr(name: &[u8]) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a name"))
}

/// A clear error for a symlink met where a file or directory was expected.
fn refuse_symlink(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{} is a symlink: refusing to follow it", path.display()),
    )
}

/// An OS error and the path it happened on. Keeps the errno: see [`os_error`].
#[derive(Debug)]
struct PathError {
    path: PathBuf,
    source: io::Error,
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for PathError {}

/// The errno of an error, also of one this module wrapped with its path.
pub fn os_error(e: &io::Error) -> Option<i32> {
    e.raw_os_error().or_else(|| {
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<PathError>())
            .and_then(|p| p.source.raw_os_error())
    })
}

/// Names the file in an error; ELOOP (what `O_NOFOLLOW` returns for a symlink) becomes a
/// refusal that says so.
fn named(path: &Path, e: io::Error) -> io::Error {
    let is_link = || std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    match e.raw_os_error() {
        Some(libc::ELOOP) => refuse_symlink(path),
        // O_DIRECTORY|O_NOFOLLOW on a link to a directory reports ENOTDIR.
        Some(libc::ENOTDIR) if is_link() => refuse_symlink(path),
        _ => io::Error::new(
            e.kind(),
            PathError {
                path: path.to_path_buf(),
                source: e,
            },
        ),
    }
}

/// Names the file in an error, keeping its errno (see [`os_error`]).
pub fn with_path(path: &Path, e: io::Error) -> io::Error {
    if e.get_ref().is_some_and(|i| i.is::<PathError>()) {
        return e;
    }
    io::Error::new(
        e.kind(),
        PathError {
            path: path.to_path_buf(),
            source: e,
        },
    )
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// One entry of a directory listing.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: String,
    pub kind: Kind,
    /// The length of a regular file (0 for anything else).
    pub len: u64,
    /// The modification time of a regular file (None for anything else).
    pub modified: Option<std::time::SystemTime>,
}

/// Whether the entry is a regular file, a directory, a symlink or something else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

fn kind_of(mode: libc::mode_t) -> Kind {
    match mode & libc::S_IFMT {
        libc::S_IFREG => Kind::File,
        libc::S_IFDIR => Kind::Dir,
        libc::S_IFLNK => Kind::Symlink,
        _ => Kind::Other,
    }
}

fn open_dir(path: &Path, follow: bool) -> io::Result<(OwnedFd, DirId)> {
    let c = cstr(path.as_os_str().as_bytes())?;
    let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
    // SAFETY: a NUL-terminated path; the returned fd is owned below.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | nofollow | libc::O_CLOEXEC,
        )
    };
    let fd = check(fd).map_err(|e| named(path, e))?;
    // SAFETY: fd was just opened and is ours alone.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: zeroed statx is valid; statx writes into it; "" with AT_EMPTY_PATH is the fd.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open for the call, "" is NUL-terminated, `st` is ours to fill.
    check(unsafe {
        libc::statx(
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_INO | libc::STATX_BTIME,
            &mut st,
        )
    })
    .map_err(|e| named(path, e))?;
    let btime = if st.stx_mask & libc::STATX_BTIME != 0 {
        (st.stx_btime.tv_sec, st.stx_btime.tv_nsec)
    } else {
        (0, 0)
    };
    let id = DirId {
        dev: (st.stx_dev_major, st.stx_dev_minor),
        ino: st.stx_ino,
        btime,
    };
    Ok((fd, id))
}

impl Dir {
    /// A number telling this directory from every other, also from one created later under
    /// its name, and the same at every open of it (after a remount too): its device, inode
    /// number and birth time, hashed.
    pub fn identity(&self) -> u64 {
        let DirId { dev, ino, btime } = self.id;
        crate::util::stable_hash(&[
            &dev.0.to_le_bytes(),
            &dev.1.to_le_bytes(),
            &ino.to_le_bytes(),
            &btime.0.to_le_bytes(),
            &btime.1.to_le_bytes(),
        ])
    }

    /// Opens a directory; a symlink as its last component is refused.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let (_, id) = open_dir(path, false)?;
        Ok(Dir {
            path: path.to_path_buf(),
            id,
            follow: false,
        })
    }

    /// Opens a log dir the operator named: a symlink as its last component is followed (the
    /// files inside are still never followed).
    pub fn open_log_dir(path: &Path) -> io::Result<Dir> {
        let (_, id) = open_dir(path, true)?;
        Ok(Dir {
            path: path.to_path_buf(),
            id,
            follow: true,
        })
    }

    /// A descriptor of this very directory, for one operation.
    fn fd(&self) -> io::Result<OwnedFd> {
        let (fd, id) = open_dir(&self.path, self.follow)?;
        if id != self.id {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{} was removed (a directory of the same name replaced it)",
                    self.path.display()
                ),
            ));
        }
        Ok(fd)
    }

    /// Creates a new directory `path` (its parent must exist) and opens it.
    pub fn create(path: &Path, mode: libc::mode_t) -> io::Result<Dir> {
        let c = cstr(path.as_os_str().as_bytes())?;
        // SAFETY: a NUL-terminated path.
        check(unsafe { libc::mkdir(c.as_ptr(), mode) }).map_err(|e| named(path, e))?;
        Dir::open(path)
    }

    /// The path of `name` inside this directory (for messages and for showing the file).
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    fn openat(&self, name: &str, flags: libc::c_int, mode: libc::mode_t) -> io::Result<File> {
        let c = cstr(name.as_bytes())?;
        let dir = self.fd()?;
        // SAFETY: dirfd is open; name is NUL-terminated; the fd is owned by the File.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                c.as_ptr(),
                flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        };
        let fd = check(fd).map_err(|e| named(&self.join(name), e))?;
        // SAFETY: fd was just opened and is ours alone.
        let f = unsafe { File::from_raw_fd(fd) };
        // O_NOFOLLOW refuses a symlink; also refuse a FIFO or device planted under the name.
        let md = f.metadata()?;
        if !md.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is not a regular file", self.join(name).display()),
            ));
        }
        Ok(f)
    }

    /// Opens an existing regular file; never creates one.
    pub fn open_file(&self, name: &str, access: Access) -> io::Result<File> {
        let flags = match access {
            Access::ReadOnly => libc::O_RDONLY,
            Access::ReadWrite => libc::O_RDWR,
        };
        // O_NONBLOCK keeps a planted FIFO from blocking the open; it has no effect on files.
        self.openat(name, flags | libc::O_NONBLOCK, 0)
    }

    /// Creates a new file; fails with EEXIST when the name exists (file or link).
    pub fn create_new(&self, name: &str) -> io::Result<File> {
        self.openat(name, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o644)
    }

    /// Writes `content` to `name` atomically and durably: a fresh temporary file (any file or
    /// link already at the temporary name is removed first, never written through), fsynced,
    /// renamed over `name`, directory fsynced.
    pub fn write_atomic(&self, name: &str, content: &[u8]) -> io::Result<()> {
        let tmp = format!("{name}.tmp");
        self.remove_if_exists(&tmp)?;
        {
            let mut f = self.create_new(&tmp)?;
            f.write_all(content)?;
            f.sync_all()?;
        }
        self.rename(&tmp, name)?;
        self.sync()
    }

    /// Renames `from` to `to` inside this directory (a link is renamed, never followed).
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let (a, b) = (cstr(from.as_bytes())?, cstr(to.as_bytes())?);
        let dir = self.fd()?;
        let d = dir.as_raw_fd();
        // SAFETY: both names NUL-terminated, dirfd open.
        check(unsafe { libc::renameat(d, a.as_ptr(), d, b.as_ptr()) })
            .map(|_| ())
            .map_err(|e| named(&self.join(from), e))
    }

    /// Removes a file (a link itself, never its target).
    pub fn remove(&self, name: &str) -> io::Result<()> {
        let c = cstr(name.as_bytes())?;
        let dir = self.fd()?;
        // SAFETY: NUL-terminated name, dirfd open.
        check(unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) })
            .map(|_| ())
            .map_err(|e| named(&self.join(name), e))
    }

    /// Removes a file; a missing one is fine.
    pub fn remove_if_exists(&self, name: &str) -> io::Result<()> {
        match self.remove(name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    }

    /// What `name` is, without following a link; None when it does not exist.
    pub fn kind(&self, name: &str) -> io::Result<Option<Kind>> {
        let c = cstr(name.as_bytes())?;
        let dir = self.fd()?;
        // SAFETY: zeroed stat is valid; fstatat writes into it.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `dir` is an open directory fd and `c` a NUL-terminated name, both held for
        // the call; `st` is ours to fill.
        let rc = unsafe {
            libc::fstatat(
                dir.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        match check(rc) {
            Ok(_) => Ok(Some(kind_of(st.st_mode))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(named(&self.join(name), e)),
        }
    }

    /// The entries of this directory, read through one descriptor of it: each name, what it
    /// is (a link is not followed), and a regular file's length.
    pub fn entries(&self) -> io::Result<Vec<Entry>> {
        let dir = self.fd()?;
        let proc = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
        let mut out = Vec::new();
        for e in std::fs::read_dir(&proc).map_err(|e| named(&self.path, e))? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            let ft = e.file_type()?;
            let kind = if ft.is_symlink() {
                Kind::Symlink
            } else if ft.is_dir() {
                Kind::Dir
            } else if ft.is_file() {
                Kind::File
            } else {
                Kind::Other
            };
            // fstatat on the listing's own descriptor, without following a link. A file
            // removed since the directory was read (retention at work) is no entry.
            let (len, modified) = if kind == Kind::File {
                match e.metadata() {
                    Ok(md) => (md.len(), md.modified().ok()),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(named(&self.path.join(&name), e)),
                }
            } else {
                (0, None)
            };
            out.push(Entry {
                name,
                kind,
                len,
                modified,
            });
        }
        Ok(out)
    }

    /// fsyncs the directory (after a create or rename in it).
    pub fn sync(&self) -> io::Result<()> {
        let dir = self.fd()?;
        // SAFETY: fsync on an fd we own.
        check(unsafe { libc::fsync(dir.as_raw_fd()) }).map(|_| ())
    }
}

/// Opens the file at `path` for reading; a symlink as the last component is refused.
pub fn open_read(path: &Path) -> io::Result<File> {
    let (dir, name) = split(path)?;
    dir.open_file(&name, Access::ReadOnly)
}

/// Reads the file at `path` as text, refusing a symlink.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    let mut s = String::new();
    io::Read::read_to_string(&mut open_read(path)?, &mut s)?;
    Ok(s)
}

/// Writes the file at `path` atomically (see [`Dir::write_atomic`]), refusing symlinks.
pub fn write_atomic(path: &Path, content: &[u8]) -> io::Result<()> {
    let (dir, name) = split(path)?;
    dir.write_atomic(&name, content)
}

/// The directory and name of `path` (the directory may be reached through links; the name
/// may not be one).
pub fn split(path: &Path) -> io::Result<(Dir, String)> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?
        .to_string_lossy()
        .into_owned();
    Ok((Dir::open_log_dir(parent)?, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_are_refused_and_never_written_through() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("target");
        std::fs::write(&target, b"precious").unwrap();
        let dir = Dir::open(d.path()).unwrap();
        std::os::unix::fs::symlink(&target, d.path().join("link")).unwrap();
        let e = dir.open_file("link", Access::ReadWrite).unwrap_err();
        assert!(e.to_string().contains("is a symlink"), "{e}");
        assert!(dir.create_new("link").is_err());
        assert_eq!(dir.kind("link").unwrap(), Some(Kind::Symlink));
        // A link at the temporary name is removed, not written through.
        std::os::unix::fs::symlink(&target, d.path().join("x.tmp")).unwrap();
        dir.write_atomic("x", b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        assert_eq!(std::fs::read(d.path().join("x")).unwrap(), b"new");
        // A wrapped error keeps its errno and names the file.
        let e = dir.open_file("missing", Access::ReadOnly).unwrap_err();
        assert_eq!(os_error(&e), Some(libc::ENOENT));
        assert!(e.to_string().contains("missing"), "{e}");
        // A link as the directory itself is refused.
        std::os::unix::fs::symlink(d.path(), d.path().join("dirlink")).unwrap();
        assert!(
            Dir::open(&d.path().join("dirlink"))
                .unwrap_err()
                .to_string()
                .contains("symlink")
        );
        // A directory removed and recreated under the same name is not the same directory.
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let old = Dir::open(&sub).unwrap();
        old.create_new("f").unwrap();
        std::fs::remove_dir_all(&sub).unwrap();
        std::fs::create_dir(&sub).unwrap();
        assert_eq!(old.kind("f").unwrap_err().kind(), io::ErrorKind::NotFound);
        assert!(old.create_new("g").is_err());
        assert!(!sub.join("g").exists());
        // Renaming and removing a link affect the link only.
        dir.rename("link", "link2").unwrap();
        dir.remove("link2").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        // A root file may sit in a linked log dir; the file itself may not be a link.
        assert_eq!(
            read_to_string(&d.path().join("dirlink/target")).unwrap(),
            "precious"
        );
        std::os::unix::fs::symlink(&target, d.path().join("l3")).unwrap();
        let e = read_to_string(&d.path().join("dirlink/l3")).unwrap_err();
        assert!(e.to_string().contains("is a symlink"), "{e}");
        assert_eq!(read_to_string(&target).unwrap(), "precious");
    }
}
