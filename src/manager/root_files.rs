//! The files at the root of a log dir that a broker keeps: `.lock` (held while the dir is
//! in use), `meta.properties` (written once, for a new dir), the clean-shutdown marker.

use super::*;

/// `brokerEpoch` of a `.kafka_cleanshutdown` marker (`{"version":0,"brokerEpoch":N}`).
pub(super) fn marker_broker_epoch(path: &Path) -> Option<i64> {
    let text = crate::os::safe_fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("brokerEpoch")?.as_i64()
}

/// Takes Kafka's `.lock` with an open-file-description lock: it conflicts with the POSIX
/// record lock a Kafka broker holds (Java's FileChannel.tryLock) and with a second topicfs.
/// A read-only mount takes a read lock on an existing `.lock` (opened read-only; a missing one
/// is left missing): it still conflicts with a broker's or a read-write topicfs's write lock.
pub(super) fn lock_dir(dir: &Path, read_only: bool) -> Result<Option<File>> {
    let d = crate::os::safe_fs::Dir::open_log_dir(dir)?;
    let f = if read_only {
        match d.open_file(LOCK_FILE, crate::os::safe_fs::Access::ReadOnly) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            r => r?,
        }
    } else {
        match d.open_file(LOCK_FILE, crate::os::safe_fs::Access::ReadWrite) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => d.create_new(LOCK_FILE)?,
            r => r?,
        }
    };
    // SAFETY: zeroed flock is a valid value; fcntl on an fd we own.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = if read_only {
        libc::F_RDLCK
    } else {
        libc::F_WRLCK
    } as _;
    fl.l_whence = libc::SEEK_SET as _;
    // SAFETY: `f` is open for the call; F_OFD_SETLK only reads the flock we pass.
    let rc = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_SETLK, &fl) };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EACCES) => Err(Error::LogDirLocked(dir.to_path_buf())),
            _ => Err(e.into()),
        };
    }
    Ok(Some(f))
}

pub(super) fn random_uuid_base64() -> String {
    use base64::Engine;
    let mut b = [0u8; 16];
    if File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_err()
    {
        let t = now_ms() as u128 ^ ((std::process::id() as u128) << 64);
        b = t.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let s = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    if s.starts_with('-') {
        random_uuid_base64()
    } else {
        s
    }
}

pub(super) fn java_date_now() -> String {
    let t = (now_ms() / 1000) as libc::time_t;
    // SAFETY: gmtime_r writes into our tm.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: gmtime_r is the reentrant form: it reads `t` and writes only `tm`, both ours.
    unsafe { libc::gmtime_r(&t, &mut tm) };
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} UTC {}",
        DAYS[tm.tm_wday as usize % 7],
        MONTHS[tm.tm_mon as usize % 12],
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        tm.tm_year + 1900
    )
}

/// Creates the root files of a new log dir; existing ones (a Kafka broker's) are left as they are.
pub(super) fn init_root_files(dir: &Path) -> Result<()> {
    let meta = dir.join(META_PROPERTIES);
    if !meta.exists() {
        let text = format!(
            "#\n#{}\ncluster.id={}\ndirectory.id={}\nnode.id=1\nversion=1\n",
            java_date_now(),
            random_uuid_base64(),
            random_uuid_base64()
        );
        checkpoint::write_atomic(&meta, text.as_bytes())?;
    }
    for name in [
        RECOVERY_POINT_CHECKPOINT,
        LOG_START_OFFSET_CHECKPOINT,
        REPLICATION_OFFSET_CHECKPOINT,
        CLEANER_OFFSET_CHECKPOINT,
    ] {
        let p = dir.join(name);
        if !p.exists() {
            checkpoint::write(&p, &Offsets::new())?;
        }
    }
    Ok(())
}
