//! The kernel's FUSE ABI (include/uapi/linux/fuse.h) as topicfs speaks it: the reply structs
//! both transports answer in (fuser writes the same ones over /dev/fuse), and for the io_uring
//! transport the ring entry's header block, the request header and each served operation's
//! argument struct. Only what topicfs serves is here.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Size of the ring entry's header block: `in_out` (the request or reply header), `op_in`
/// (the operation's argument struct), then `ring_ent_in_out`.
pub const HEADERS_LEN: usize = 288;
/// Where the operation's argument struct starts in the header block.
pub const OP_IN: usize = 128;
/// Where `ring_ent_in_out.payload_sz` is in the header block.
pub const PAYLOAD_SZ_AT: usize = 256 + 16;
/// Where `ring_ent_in_out.commit_id` is in the header block.
pub const COMMIT_ID_AT: usize = 256 + 8;

/// The uring commands (`cmd_op` of an IORING_OP_URING_CMD on /dev/fuse).
pub const CMD_REGISTER: u32 = 1;
pub const CMD_COMMIT_AND_FETCH: u32 = 2;

pub const LOOKUP: u32 = 1;
pub const GETATTR: u32 = 3;
pub const SETATTR: u32 = 4;
pub const SYMLINK: u32 = 6;
pub const MKNOD: u32 = 8;
pub const MKDIR: u32 = 9;
pub const UNLINK: u32 = 10;
pub const RMDIR: u32 = 11;
pub const RENAME: u32 = 12;
pub const LINK: u32 = 13;
pub const OPEN: u32 = 14;
pub const READ: u32 = 15;
pub const WRITE: u32 = 16;
pub const STATFS: u32 = 17;
pub const RELEASE: u32 = 18;
pub const FSYNC: u32 = 20;
pub const GETXATTR: u32 = 22;
pub const LISTXATTR: u32 = 23;
pub const FLUSH: u32 = 25;
pub const OPENDIR: u32 = 27;
pub const READDIR: u32 = 28;
pub const RELEASEDIR: u32 = 29;
pub const ACCESS: u32 = 34;
pub const CREATE: u32 = 35;
pub const IOCTL: u32 = 39;
pub const POLL: u32 = 40;
pub const FALLOCATE: u32 = 43;
pub const RENAME2: u32 = 45;
pub const LSEEK: u32 = 46;

pub const FOPEN_DIRECT_IO: u32 = 1 << 0;
pub const FOPEN_KEEP_CACHE: u32 = 1 << 1;
pub const FOPEN_NOFLUSH: u32 = 1 << 5;
pub const FOPEN_PASSTHROUGH: u32 = 1 << 7;
pub const GETATTR_FH: u32 = 1 << 0;
pub const WRITE_LOCKOWNER: u32 = 1 << 1;
pub const FATTR_MODE: u32 = 1 << 0;
pub const FATTR_UID: u32 = 1 << 1;
pub const FATTR_GID: u32 = 1 << 2;
pub const FATTR_SIZE: u32 = 1 << 3;
pub const FATTR_FH: u32 = 1 << 6;

/// A plain ABI struct: `repr(C)`, integer fields only, no padding, so any bytes of its size
/// are a value of it and it is its bytes. zerocopy's derives check that shape when the
/// struct is compiled.
pub trait Plain: FromBytes + IntoBytes + Immutable + Copy + Default {}

impl<T: FromBytes + IntoBytes + Immutable + Copy + Default> Plain for T {}

/// The struct at the start of `bytes`, or None when they are too short.
pub fn read<T: Plain>(bytes: &[u8]) -> Option<T> {
    T::read_from_prefix(bytes).ok().map(|(t, _)| t)
}

/// The bytes of `t`.
pub fn bytes<T: Plain>(t: &T) -> &[u8] {
    t.as_bytes()
}

macro_rules! plain {
    ($($(#[$m:meta])* pub struct $name:ident { $(pub $f:ident: $t:ty),* $(,)? })*) => {$(
        $(#[$m])*
        #[repr(C)]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        #[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
        pub struct $name { $(pub $f: $t),* }
    )*};
}

plain! {
    pub struct InHeader {
        pub len: u32, pub opcode: u32, pub unique: u64, pub nodeid: u64, pub uid: u32,
        pub gid: u32, pub pid: u32, pub total_extlen: u16, pub padding: u16,
    }
    pub struct OutHeader { pub len: u32, pub error: i32, pub unique: u64 }
    pub struct CmdReq { pub flags: u64, pub commit_id: u64, pub qid: u16, pub pad1: u16, pub pad2: u32 }
    pub struct Attr {
        pub ino: u64, pub size: u64, pub blocks: u64, pub atime: u64, pub mtime: u64,
        pub ctime: u64, pub atimensec: u32, pub mtimensec: u32, pub ctimensec: u32,
        pub mode: u32, pub nlink: u32, pub uid: u32, pub gid: u32, pub rdev: u32,
        pub blksize: u32, pub flags: u32,
    }
    pub struct EntryOut {
        pub nodeid: u64, pub generation: u64, pub entry_valid: u64, pub attr_valid: u64,
        pub entry_valid_nsec: u32, pub attr_valid_nsec: u32, pub attr: Attr,
    }
    pub struct AttrOut { pub attr_valid: u64, pub attr_valid_nsec: u32, pub dummy: u32, pub attr: Attr }
    pub struct OpenOut { pub fh: u64, pub open_flags: u32, pub backing_id: i32 }
    pub struct CreateOut { pub entry: EntryOut, pub open: OpenOut }
    pub struct WriteOut { pub size: u32, pub padding: u32 }
    pub struct LseekOut { pub offset: u64 }
    pub struct PollOut { pub revents: u32, pub padding: u32 }
    pub struct GetxattrOut { pub size: u32, pub padding: u32 }
    pub struct IoctlOut { pub result: i32, pub flags: u32, pub in_iovs: u32, pub out_iovs: u32 }
    pub struct StatfsOut {
        pub blocks: u64, pub bfree: u64, pub bavail: u64, pub files: u64, pub ffree: u64,
        pub bsize: u32, pub namelen: u32, pub frsize: u32, pub padding: u32, pub spare: [u32; 6],
    }
    pub struct DirentHead { pub ino: u64, pub off: u64, pub namelen: u32, pub kind: u32 }
    pub struct GetattrIn { pub getattr_flags: u32, pub dummy: u32, pub fh: u64 }
    pub struct SetattrIn {
        pub valid: u32, pub padding: u32, pub fh: u64, pub size: u64, pub lock_owner: u64,
        pub atime: u64, pub mtime: u64, pub ctime: u64, pub atimensec: u32,
        pub mtimensec: u32, pub ctimensec: u32, pub mode: u32, pub unused4: u32, pub uid: u32,
        pub gid: u32, pub unused5: u32,
    }
    pub struct RenameIn { pub newdir: u64 }
    pub struct Rename2In { pub newdir: u64, pub flags: u32, pub padding: u32 }
    pub struct LinkIn { pub oldnodeid: u64 }
    pub struct OpenIn { pub flags: u32, pub open_flags: u32 }
    pub struct CreateIn { pub flags: u32, pub mode: u32, pub umask: u32, pub open_flags: u32 }
    pub struct ReadIn {
        pub fh: u64, pub offset: u64, pub size: u32, pub read_flags: u32, pub lock_owner: u64,
        pub flags: u32, pub padding: u32,
    }
    pub struct WriteIn {
        pub fh: u64, pub offset: u64, pub size: u32, pub write_flags: u32, pub lock_owner: u64,
        pub flags: u32, pub padding: u32,
    }
    pub struct ReleaseIn { pub fh: u64, pub flags: u32, pub release_flags: u32, pub lock_owner: u64 }
    pub struct FlushIn { pub fh: u64, pub unused: u32, pub padding: u32, pub lock_owner: u64 }
    pub struct FsyncIn { pub fh: u64, pub fsync_flags: u32, pub padding: u32 }
    pub struct LseekIn { pub fh: u64, pub offset: u64, pub whence: u32, pub padding: u32 }
    pub struct PollIn { pub fh: u64, pub kh: u64, pub flags: u32, pub events: u32 }
    pub struct IoctlIn {
        pub fh: u64, pub flags: u32, pub cmd: u32, pub arg: u64, pub in_size: u32,
        pub out_size: u32,
    }
    pub struct AccessIn { pub mask: u32, pub padding: u32 }
    pub struct GetxattrIn { pub size: u32, pub padding: u32 }
    pub struct FallocateIn {
        pub fh: u64, pub offset: u64, pub length: u64, pub mode: u32, pub padding: u32,
    }
}

/// The NUL-terminated name at the start of `bytes`, and what follows it.
pub fn name(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = memchr::memchr(0, bytes)?;
    Some((&bytes[..end], &bytes[end + 1..]))
}

/// Appends a directory entry to `out` unless it would pass `max` bytes (then false).
pub fn push_dirent(
    out: &mut Vec<u8>,
    max: usize,
    ino: u64,
    off: u64,
    kind: u32,
    name: &[u8],
) -> bool {
    let len = size_of::<DirentHead>() + name.len();
    let padded = len.next_multiple_of(8);
    if out.len() + padded > max {
        return false;
    }
    let head = DirentHead {
        ino,
        off,
        namelen: name.len() as u32,
        kind,
    };
    out.extend_from_slice(bytes(&head));
    out.extend_from_slice(name);
    out.resize(out.len() + padded - len, 0);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes the kernel's fuse.h gives these structs.
    #[test]
    fn sizes_are_the_kernels() {
        assert_eq!(size_of::<InHeader>(), 40);
        assert_eq!(size_of::<OutHeader>(), 16);
        assert_eq!(size_of::<CmdReq>(), 24);
        assert_eq!(size_of::<Attr>(), 88);
        assert_eq!(size_of::<EntryOut>(), 128);
        assert_eq!(size_of::<AttrOut>(), 104);
        assert_eq!(size_of::<OpenOut>(), 16);
        assert_eq!(size_of::<StatfsOut>(), 80);
        assert_eq!(size_of::<SetattrIn>(), 88);
        assert_eq!(size_of::<ReadIn>(), 40);
        assert_eq!(size_of::<WriteIn>(), 40);
        assert_eq!(size_of::<ReleaseIn>(), 24);
        assert_eq!(size_of::<FlushIn>(), 24);
        assert_eq!(size_of::<CreateIn>(), 16);
        assert_eq!(size_of::<IoctlIn>(), 32);
        assert_eq!(size_of::<FallocateIn>(), 32);
        assert_eq!(size_of::<PollIn>(), 24);
        assert_eq!(size_of::<LseekIn>(), 24);
        assert_eq!(size_of::<Rename2In>(), 16);
    }

    #[test]
    fn a_write_in_decodes_from_the_kernels_bytes() {
        let mut b = Vec::new();
        b.extend_from_slice(&7u64.to_ne_bytes()); // fh
        b.extend_from_slice(&100u64.to_ne_bytes()); // offset
        b.extend_from_slice(&16u32.to_ne_bytes()); // size
        b.extend_from_slice(&WRITE_LOCKOWNER.to_ne_bytes());
        b.extend_from_slice(&9u64.to_ne_bytes()); // lock_owner
        b.extend_from_slice(&0o2u32.to_ne_bytes()); // flags
        b.extend_from_slice(&0u32.to_ne_bytes());
        let w: WriteIn = read(&b).unwrap();
        assert_eq!(
            (w.fh, w.offset, w.size, w.lock_owner, w.flags),
            (7, 100, 16, 9, 2)
        );
        assert_eq!(w.write_flags, WRITE_LOCKOWNER);
        assert!(read::<WriteIn>(&b[..39]).is_none());
    }

    #[test]
    fn names_and_dirents() {
        assert_eq!(name(b"old\0new\0"), Some((&b"old"[..], &b"new\0"[..])));
        assert_eq!(name(b"no end"), None);
        let mut out = Vec::new();
        assert!(push_dirent(&mut out, 64, 5, 1, 8, b"abc"));
        // 24 bytes of head, 3 of name, padded to 32.
        assert_eq!(out.len(), 32);
        assert_eq!(&out[24..27], b"abc");
        assert_eq!(u32::from_ne_bytes(out[16..20].try_into().unwrap()), 3);
        assert!(push_dirent(&mut out, 64, 6, 2, 4, b"d"));
        assert!(!push_dirent(&mut out, 64, 7, 3, 4, b"e"), "past 64 bytes");
        assert_eq!(out.len(), 64);
    }
}
