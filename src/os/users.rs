//! The system's users and groups (the passwd and group databases, through NSS as `id` and
//! `chown` ask them): a user by name or id, a group by name.

use std::ffi::CString;
use std::io;

/// A user of the passwd database: its id and its primary group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct User {
    pub uid: u32,
    pub gid: u32,
}

/// The buffer the `*_r` lookups fill, grown while they say ERANGE.
fn lookup<T>(
    mut call: impl FnMut(&mut [libc::c_char]) -> Result<Option<T>, i32>,
) -> io::Result<Option<T>> {
    let mut buf = vec![0 as libc::c_char; 1024];
    loop {
        match call(&mut buf) {
            Ok(found) => return Ok(found),
            Err(libc::ERANGE) if buf.len() < 1 << 20 => {
                let len = buf.len() * 4;
                buf.resize(len, 0);
            }
            Err(e) => return Err(io::Error::from_raw_os_error(e)),
        }
    }
}

fn c_name(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Which passwd entry to look up.
enum Key {
    Name(CString),
    Id(u32),
}

/// The passwd entry of `key` (getpwnam_r or getpwuid_r).
fn passwd(key: &Key) -> io::Result<Option<User>> {
    lookup(|buf| {
        // SAFETY: passwd is plain old data; all-zero is a valid value the call overwrites.
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        let rc = match key {
            // SAFETY: the name is NUL-terminated and outlives the call; `pw`, `buf` (of the
            // length given) and `found` are ours to fill for its duration.
            Key::Name(c) => unsafe { libc::getpwnam_r(c.as_ptr(), &mut pw, ptr, len, &mut found) },
            // SAFETY: `pw`, `buf` (of the length given) and `found` are ours to fill for the
            // duration of the call.
            Key::Id(uid) => unsafe { libc::getpwuid_r(*uid, &mut pw, ptr, len, &mut found) },
        };
        match rc {
            0 if found.is_null() => Ok(None),
            0 => Ok(Some(User {
                uid: pw.pw_uid,
                gid: pw.pw_gid,
            })),
            e if not_found(e) => Ok(None),
            e => Err(e),
        }
    })
}

/// The errors some NSS modules answer for "no such entry" (getpwnam(3)).
fn not_found(e: i32) -> bool {
    matches!(e, libc::ENOENT | libc::ESRCH | libc::EBADF | libc::EPERM)
}

/// The user named `name`, if the passwd database has one.
pub fn user_named(name: &str) -> io::Result<Option<User>> {
    passwd(&Key::Name(c_name(name)?))
}

/// The user whose id is `uid`, if the passwd database has one.
pub fn user_with_id(uid: u32) -> io::Result<Option<User>> {
    passwd(&Key::Id(uid))
}

/// The id of the group named `name`, if the group database has one.
pub fn group_named(name: &str) -> io::Result<Option<u32>> {
    let c = c_name(name)?;
    lookup(|buf| {
        // SAFETY: group is plain old data; all-zero is a valid value the call overwrites.
        let mut gr: libc::group = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::group = std::ptr::null_mut();
        // SAFETY: `c` is NUL-terminated and outlives the call; `gr`, `buf` (of the length
        // given) and `found` are ours to fill for its duration.
        let rc = unsafe {
            libc::getgrnam_r(c.as_ptr(), &mut gr, buf.as_mut_ptr(), buf.len(), &mut found)
        };
        match rc {
            0 if found.is_null() => Ok(None),
            0 => Ok(Some(gr.gr_gid)),
            e if not_found(e) => Ok(None),
            e => Err(e),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `(name, id, primary group)` of each line of a `/etc/passwd`-like text.
    fn entries(text: &str) -> Vec<(String, u32, u32)> {
        text.lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                Some((
                    f.first()?.to_string(),
                    f.get(2)?.parse().ok()?,
                    f.get(3)?.parse().ok()?,
                ))
            })
            .collect()
    }

    #[test]
    fn users_and_groups_are_those_of_the_system_files() {
        // /etc/passwd and /etc/group read as text: the oracle for the NSS answers.
        let passwd = entries(&std::fs::read_to_string("/etc/passwd").unwrap());
        assert!(!passwd.is_empty());
        for (name, uid, gid) in &passwd {
            assert_eq!(
                user_named(name).unwrap(),
                Some(User {
                    uid: *uid,
                    gid: *gid
                }),
                "{name}"
            );
            assert_eq!(user_with_id(*uid).unwrap().map(|u| u.uid), Some(*uid));
        }
        let groups = std::fs::read_to_string("/etc/group").unwrap();
        for l in groups.lines() {
            let f: Vec<&str> = l.split(':').collect();
            if let (Some(name), Some(Ok(gid))) = (f.first(), f.get(2).map(|g| g.parse::<u32>())) {
                assert_eq!(group_named(name).unwrap(), Some(gid), "{name}");
            }
        }
    }

    #[test]
    fn unknown_names_and_ids_are_none() {
        assert_eq!(user_named("no-such-user-of-topicfs").unwrap(), None);
        assert_eq!(group_named("no-such-group-of-topicfs").unwrap(), None);
        assert_eq!(user_with_id(4_000_000_123).unwrap(), None);
        // A name NSS cannot even be asked for.
        assert!(user_named("a\0b").is_err());
    }
}
