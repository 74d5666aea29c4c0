//! `uid=` and `gid=` (`--uid`, `--gid`): the service user that owns the tree, given by name or
//! number as mount(8)'s vfat and sshfs take them, resolved before the daemon forks.

use crate::fs::ServiceUser;
use crate::os::users;

/// A user or group id as a number: digits only, and not -1 (which chown(2) takes for "leave
/// it"). None when `v` is not a number at all (then it is a name).
fn id_number(what: &str, v: &str) -> Result<Option<u32>, String> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    match v.parse::<u32>() {
        Ok(n) if n != u32::MAX => Ok(Some(n)),
        _ => Err(format!(
            "{what}={v}: not a valid id (0 to {})",
            u32::MAX - 1
        )),
    }
}

/// The user `v` names (or numbers): its id, and its primary group when the passwd database
/// knows it.
fn resolve_user(v: &str) -> Result<(u32, Option<u32>), String> {
    let lookup_failed = |e: std::io::Error| format!("uid={v}: cannot look the user up: {e}");
    if v.is_empty() {
        return Err("uid=: a user name or number is needed".into());
    }
    if let Some(uid) = id_number("uid", v)? {
        let primary = users::user_with_id(uid).map_err(lookup_failed)?;
        return Ok((uid, primary.map(|u| u.gid)));
    }
    match users::user_named(v).map_err(lookup_failed)? {
        Some(u) => Ok((u.uid, Some(u.gid))),
        None => Err(format!("uid={v}: no such user")),
    }
}

/// The group `v` names (or numbers).
fn resolve_group(v: &str) -> Result<u32, String> {
    if v.is_empty() {
        return Err("gid=: a group name or number is needed".into());
    }
    if let Some(gid) = id_number("gid", v)? {
        return Ok(gid);
    }
    match users::group_named(v) {
        Ok(Some(gid)) => Ok(gid),
        Ok(None) => Err(format!("gid={v}: no such group")),
        Err(e) => Err(format!("gid={v}: cannot look the group up: {e}")),
    }
}

/// The tree's service user from `uid=` and `gid=` (None when neither is given). A user
/// without `gid=` brings its primary group, as `chown USER:` does. `allow_other`: whether
/// other users are let in too.
pub(super) fn service_user(
    uid: Option<&str>,
    gid: Option<&str>,
    allow_other: bool,
) -> Result<Option<ServiceUser>, String> {
    if uid.is_none() && gid.is_none() {
        return Ok(None);
    }
    let (uid, primary) = match uid {
        Some(v) => {
            let (uid, primary) = resolve_user(v.trim())?;
            (Some(uid), primary)
        }
        None => (None, None),
    };
    let gid = match gid {
        Some(v) => Some(resolve_group(v.trim())?),
        None => primary,
    };
    Ok(Some(ServiceUser {
        uid,
        gid,
        others: allow_other,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(name, id, primary group)` of each /etc/passwd line: the oracle, read as text.
    fn passwd() -> Vec<(String, u32, u32)> {
        std::fs::read_to_string("/etc/passwd")
            .unwrap()
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                Some((
                    f[0].to_string(),
                    f.get(2)?.parse().ok()?,
                    f.get(3)?.parse().ok()?,
                ))
            })
            .collect()
    }

    fn group_id(name: &str) -> u32 {
        std::fs::read_to_string("/etc/group")
            .unwrap()
            .lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f[0] == name).then(|| f[2].parse().unwrap())
            })
            .unwrap()
    }

    fn su(uid: Option<u32>, gid: Option<u32>, others: bool) -> Option<ServiceUser> {
        Some(ServiceUser { uid, gid, others })
    }

    #[test]
    fn names_resolve_to_ids_and_a_user_brings_its_primary_group() {
        for (name, uid, gid) in passwd() {
            assert_eq!(
                service_user(Some(&name), None, false),
                Ok(su(Some(uid), Some(gid), false)),
                "{name}"
            );
        }
        let root_group = std::fs::read_to_string("/etc/group")
            .unwrap()
            .lines()
            .find(|l| l.split(':').nth(2) == Some("0"))
            .map(|l| l.split(':').next().unwrap().to_string())
            .unwrap();
        assert_eq!(
            service_user(Some("root"), Some(&root_group), true),
            Ok(su(Some(0), Some(group_id(&root_group)), true))
        );
        assert_eq!(
            service_user(None, Some(&root_group), false),
            Ok(su(None, Some(0), false))
        );
    }

    #[test]
    fn numbers_are_taken_as_they_are() {
        // A number with no passwd entry is still a user (as vfat and sshfs take it), with
        // the tree's group unchanged.
        let known = passwd();
        let unknown = (1..u32::MAX - 1)
            .rev()
            .find(|n| !known.iter().any(|(_, uid, _)| uid == n))
            .unwrap();
        assert_eq!(
            service_user(Some(&unknown.to_string()), None, false),
            Ok(su(Some(unknown), None, false))
        );
        assert_eq!(
            service_user(Some("1234"), Some("5678"), true),
            Ok(su(Some(1234), Some(5678), true))
        );
        // A known number brings its primary group.
        let (_, uid, gid) = known[0].clone();
        assert_eq!(
            service_user(Some(&uid.to_string()), None, false),
            Ok(su(Some(uid), Some(gid), false))
        );
        assert_eq!(
            service_user(Some(" 7 "), Some(" 9"), false),
            Ok(su(Some(7), Some(9), false))
        );
        assert_eq!(service_user(None, None, true), Ok(None));
    }

    #[test]
    fn bad_names_and_numbers_are_refused_clearly() {
        let e = service_user(Some("no-such-user-of-topicfs"), None, false).unwrap_err();
        assert_eq!(e, "uid=no-such-user-of-topicfs: no such user");
        let e = service_user(None, Some("no-such-group-of-topicfs"), false).unwrap_err();
        assert_eq!(e, "gid=no-such-group-of-topicfs: no such group");
        // A bad group fails even with a good user.
        assert!(service_user(Some("root"), Some("no-such-group-of-topicfs"), false).is_err());
        for bad in ["4294967295", "99999999999"] {
            let e = service_user(Some(bad), None, false).unwrap_err();
            assert!(e.starts_with(&format!("uid={bad}: not a valid id")), "{e}");
            let e = service_user(None, Some(bad), false).unwrap_err();
            assert!(e.starts_with(&format!("gid={bad}: not a valid id")), "{e}");
        }
        assert!(
            service_user(Some("-1"), None, false)
                .unwrap_err()
                .contains("no such user")
        );
        assert!(
            service_user(Some(""), None, false)
                .unwrap_err()
                .contains("a user name or number")
        );
        assert!(
            service_user(None, Some(""), false)
                .unwrap_err()
                .contains("a group name or number")
        );
    }
}
