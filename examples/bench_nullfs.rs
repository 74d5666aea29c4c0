//! A FUSE filesystem that does nothing, the per-request ceiling of `bench/run.sh`: a root
//! holding three files, without any work behind them: `null`, whose writes are accepted and
//! dropped, served the way topicfs serves its append files, and `zero`, whose reads return
//! READ_BYTES zero bytes in all (then end of file), served the way topicfs serves its
//! streams; `mem` reads as `zero` does, but its bytes come from a READ_BYTES buffer in memory
//! (filled at start), one part after the other as a file's do, where `zero`'s every reply is
//! the same mebibyte, which stays in the CPU's cache. Both as topicfs: same fuser, worker threads, cloned fds, 1 MiB max_write,
//! direct I/O, zero attribute TTL; st_blksize 4096 for `null` and 1 MiB for `zero`; no flush
//! at close for read-only opens. So the difference between the two is the work topicfs does
//! per request.
//!
//! Usage: `bench_nullfs MOUNTPOINT [THREADS] [READ_BYTES]` (foreground; `umount MOUNTPOINT`
//! ends it).

use std::ffi::OsStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

const NULL_INO: INodeNo = INodeNo(2);
const ZERO_INO: INodeNo = INodeNo(3);
const MEM_INO: INodeNo = INodeNo(4);
const DIR_TTL: Duration = Duration::from_secs(1);
const FILE_TTL: Duration = Duration::ZERO;

fn attr(ino: INodeNo) -> FileAttr {
    let dir = ino == INodeNo::ROOT;
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    FileAttr {
        ino,
        size: 0,
        blocks: 0,
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind: if dir {
            FileType::Directory
        } else {
            FileType::RegularFile
        },
        perm: if dir { 0o755 } else { 0o666 },
        nlink: if dir { 2 } else { 1 },
        uid,
        gid,
        rdev: 0,
        // As topicfs's streams: the largest request, so `cat` reads in requests that large;
        // as its append files and directories: 4096.
        blksize: if ino == ZERO_INO || ino == MEM_INO {
            1 << 20
        } else {
            4096
        },
        flags: 0,
    }
}

fn ttl(ino: INodeNo) -> Duration {
    if ino == INodeNo::ROOT {
        DIR_TTL
    } else {
        FILE_TTL
    }
}

struct NullFs {
    /// Length of the zeros a read of `zero` returns, in all.
    read_bytes: u64,
    /// What `mem` reads as.
    mem: Vec<u8>,
}

static ZEROS: [u8; 1 << 20] = [0; 1 << 20];

impl Filesystem for NullFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        if let Err(nearest) = config.set_max_write(1 << 20) {
            let _ = config.set_max_write(nearest);
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent == INodeNo::ROOT && name == "null" {
            reply.entry(&FILE_TTL, &attr(NULL_INO), Generation(0));
        } else if parent == INodeNo::ROOT && name == "zero" {
            reply.entry(&FILE_TTL, &attr(ZERO_INO), Generation(0));
        } else if parent == INodeNo::ROOT && name == "mem" {
            reply.entry(&FILE_TTL, &attr(MEM_INO), Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match ino {
            INodeNo::ROOT | NULL_INO | ZERO_INO | MEM_INO => reply.attr(&ttl(ino), &attr(ino)),
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        reply.attr(&ttl(ino), &attr(ino));
    }

    fn open(&self, _req: &Request, _ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        // As topicfs: a file opened only for reading gets no flush at close (its streams),
        // one opened for writing does (its append files).
        let mut fopen = FopenFlags::FOPEN_DIRECT_IO;
        if flags.0 & libc::O_ACCMODE == libc::O_RDONLY {
            fopen |= FopenFlags::FOPEN_NOFLUSH;
        }
        reply.opened(FileHandle(1), fopen);
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let n = self.read_bytes.saturating_sub(offset).min(size as u64) as usize;
        if ino == MEM_INO {
            let from = (offset as usize).min(self.mem.len());
            return reply.data(&self.mem[from..(from + n).min(self.mem.len())]);
        }
        reply.data(&ZEROS[..n.min(ZEROS.len())]);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        reply.written(data.len() as u32);
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino != INodeNo::ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (NULL_INO, FileType::RegularFile, "null"),
            (ZERO_INO, FileType::RegularFile, "zero"),
            (MEM_INO, FileType::RegularFile, "mem"),
        ];
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(ino, (i + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(mountpoint) = args.next() else {
        eprintln!("usage: bench_nullfs MOUNTPOINT [THREADS] [READ_BYTES]");
        std::process::exit(2);
    };
    let threads: usize = args.next().and_then(|t| t.parse().ok()).unwrap_or(4);
    let read_bytes: u64 = args.next().and_then(|t| t.parse().ok()).unwrap_or(0);
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        MountOption::FSName("bench-nullfs".to_string()),
        MountOption::CUSTOM("subtype=nullfs".to_string()),
    ];
    config.n_threads = Some(threads.max(1));
    config.clone_fd = true;
    // Lines of 100 bytes, every page written (none left to the zero page).
    let line = format!("{}\n", "m".repeat(99));
    let mem = line
        .bytes()
        .cycle()
        .take(read_bytes as usize)
        .collect::<Vec<u8>>();
    if let Err(e) = fuser::mount(NullFs { read_bytes, mem }, &mountpoint, &config) {
        eprintln!("bench_nullfs: {e}");
        std::process::exit(1);
    }
}
