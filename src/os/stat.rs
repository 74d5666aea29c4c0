//! A file system's space (statvfs) and a file's data and holes (SEEK_DATA, SEEK_HOLE).

use std::fs::File;
use std::path::Path;

/// What statvfs(2) says of the file system holding a path.
pub struct SpaceOf {
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    /// The unit of the block counts.
    pub frsize: u64,
    /// The file system's id: two paths on one file system have the same.
    pub fsid: u64,
}

/// statvfs(2) of `path`.
pub fn space_of(path: &Path) -> std::io::Result<SpaceOf> {
    let path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: statvfs writes into a zeroed struct we own; the path is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and outlives the call; `st` is ours to fill.
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(SpaceOf {
        blocks: st.f_blocks,
        bfree: st.f_bfree,
        bavail: st.f_bavail,
        files: st.f_files,
        ffree: st.f_ffree,
        frsize: st.f_frsize,
        fsid: st.f_fsid,
    })
}

/// `lseek(SEEK_DATA)` or `lseek(SEEK_HOLE)` of a real file: where its next data or hole is
/// at or after `offset` (ENXIO past the end). Reads go through `pread`, so the file position
/// this moves is never used.
pub fn seek_data_or_hole(file: &File, offset: i64, whence: i32) -> std::io::Result<i64> {
    use std::os::fd::AsRawFd;
    if whence != libc::SEEK_DATA && whence != libc::SEEK_HOLE {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: the descriptor belongs to `file`, open for the whole call; lseek touches no
    // memory of ours.
    let at = unsafe { libc::lseek(file.as_raw_fd(), offset, whence) };
    if at < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(at)
}
