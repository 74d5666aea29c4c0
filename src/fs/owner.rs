//! Who owns the tree and what its group and others may: the one home of every answer about an
//! owner (the `uid`, `gid` and mode bits of each attribute, `access(2)`, what `chown` and
//! `chmod` may set). What clients create in the tree is the tree's owner's too.

use std::path::PathBuf;

/// The tree's owner as the mount options set it (`-o uid=,gid=`, a service user): each `None`
/// keeps the first log dir's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceUser {
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// `allow_other` too: other users get the other bits the log dirs grant. Without it they
    /// get none (the kernel lets them in only because the service user is another user).
    pub others: bool,
}

/// The tree's owner, group, and the group and other bits it grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ownership {
    pub uid: u32,
    pub gid: u32,
    /// The group and other permission bits every log dir grants (ANDed): the tree grants no
    /// more than the log dirs do, and with `allow_other` (or a service user) the kernel
    /// enforces it.
    dir_mode: u16,
}

impl Ownership {
    /// The tree belongs to the owner and group of the first log dir (the daemon's user without
    /// one), or to the service user, and grants group and others no more than every log dir
    /// does (a 0700 log dir gives a tree only its owner can enter).
    pub fn of(log_dirs: &[PathBuf], service: Option<ServiceUser>) -> Ownership {
        use std::os::unix::fs::MetadataExt;
        let (mut uid, mut gid) = crate::os::process::user_ids();
        let mut dir_mode = 0o077u16;
        for (i, dir) in log_dirs.iter().enumerate() {
            match std::fs::metadata(dir) {
                Ok(md) => {
                    if i == 0 {
                        (uid, gid) = (md.uid(), md.gid());
                    }
                    dir_mode &= (md.mode() & 0o077) as u16;
                }
                Err(e) => {
                    log::warn!(
                        "log dir {}: {e}; the tree is its owner's only",
                        dir.display()
                    );
                    dir_mode = 0;
                }
            }
        }
        if let Some(s) = service {
            uid = s.uid.unwrap_or(uid);
            gid = s.gid.unwrap_or(gid);
            if !s.others {
                dir_mode &= 0o070;
            }
        }
        Ownership { uid, gid, dir_mode }
    }

    /// A node's permission bits from its own (`Node::perm`): the owner's as they are, the
    /// group and other bits those the log dirs grant.
    pub fn perm(&self, own: u16) -> u16 {
        own & (0o700 | self.dir_mode)
    }

    /// Whether the owner's bits of `perm` allow `mask` (R_OK, W_OK, X_OK) to the owner.
    pub fn owner_may(perm: u16, mask: i32) -> bool {
        let allowed = i32::from((perm >> 6) & 7);
        mask & 7 & !allowed == 0
    }

    /// Whether a `chmod`/`chown` (`want`) asks for what a node of `perm` already has: only
    /// that succeeds (`cp -p`, `sed -i` set what is there).
    pub fn unchanged(&self, want: super::types::Owner, perm: u16) -> bool {
        want.mode.is_none_or(|m| m & 0o7777 == u32::from(perm))
            && want.uid.is_none_or(|u| u == self.uid)
            && want.gid.is_none_or(|g| g == self.gid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn log_dir(mode: u32) -> (tempfile::TempDir, Vec<PathBuf>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        let dirs = vec![dir.path().to_path_buf()];
        (dir, dirs)
    }

    #[test]
    fn the_first_log_dir_owns_the_tree_and_its_bits_bound_group_and_others() {
        use std::os::unix::fs::MetadataExt;
        let (dir, dirs) = log_dir(0o750);
        let md = std::fs::metadata(dir.path()).unwrap();
        let o = Ownership::of(&dirs, None);
        assert_eq!((o.uid, o.gid), (md.uid(), md.gid()));
        assert_eq!(o.perm(0o755), 0o750);
        assert_eq!(o.perm(0o644), 0o640);
        assert_eq!(o.perm(0o400), 0o400);
    }

    #[test]
    fn a_service_user_owns_the_tree_and_others_get_nothing_without_allow_other() {
        let (_dir, dirs) = log_dir(0o755);
        let service = ServiceUser {
            uid: Some(8),
            gid: Some(12),
            others: false,
        };
        let o = Ownership::of(&dirs, Some(service));
        assert_eq!((o.uid, o.gid), (8, 12));
        assert_eq!(o.perm(0o755), 0o750);
        let o = Ownership::of(
            &dirs,
            Some(ServiceUser {
                others: true,
                ..service
            }),
        );
        assert_eq!(o.perm(0o755), 0o755);
        // Only the group given: the owner stays the log dir's.
        let only_gid = ServiceUser {
            uid: None,
            gid: Some(12),
            others: false,
        };
        let o = Ownership::of(&dirs, Some(only_gid));
        assert_eq!(o.gid, 12);
        assert_eq!(o.uid, Ownership::of(&dirs, None).uid);
    }

    #[test]
    fn a_missing_log_dir_grants_group_and_others_nothing() {
        let o = Ownership::of(&[PathBuf::from("/nonexistent/topicfs-logs")], None);
        assert_eq!(o.perm(0o755), 0o700);
        assert_eq!((o.uid, o.gid), crate::os::process::user_ids());
    }

    #[test]
    fn the_owner_bits_decide_access_and_only_what_is_there_may_be_set() {
        assert!(Ownership::owner_may(0o600, libc::R_OK | libc::W_OK));
        assert!(!Ownership::owner_may(0o400, libc::W_OK));
        assert!(!Ownership::owner_may(0o644, libc::X_OK));
        assert!(Ownership::owner_may(0o000, libc::F_OK));
        let o = Ownership {
            uid: 8,
            gid: 12,
            dir_mode: 0o055,
        };
        let ask = |mode, uid, gid| super::super::types::Owner { mode, uid, gid };
        assert!(o.unchanged(ask(Some(0o100644), Some(8), Some(12)), 0o644));
        assert!(o.unchanged(ask(None, None, None), 0o644));
        assert!(!o.unchanged(ask(Some(0o600), None, None), 0o644));
        assert!(!o.unchanged(ask(None, Some(0), None), 0o644));
        assert!(!o.unchanged(ask(None, None, Some(0)), 0o644));
    }
}
