//! How the FUSE session is mounted, in topicfs's terms ([`FuseConfig`]), and its translation
//! into fuser's mount configuration.

/// The FUSE mount: the source mount(8) shows, read-only, allow_other, request threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuseConfig {
    /// The source mount(8) shows (the first log dir, or the bootstrap servers).
    pub source: String,
    /// `ro`: the kernel refuses every write.
    pub read_only: bool,
    /// `allow_other`: other users reach the mount, the kernel checking the mode bits.
    pub allow_other: bool,
    /// Threads serving the kernel's requests (at least one).
    pub threads: usize,
    /// `io_uring`: carry the requests over io_uring where the kernel offers it.
    pub io_uring: bool,
}

impl FuseConfig {
    /// fuser's configuration: source and subtype as mount(8) shows them, ro, allow_other
    /// (with `default_permissions`), threads, one device fd per thread.
    pub(super) fn fuser_config(&self) -> fuser::Config {
        let mut fuse = fuser::Config::default();
        // A source that would split the option string mount(8) writes is replaced.
        let source = if self.source.contains([',', ' ', '\t', '\n']) {
            "topicfs".to_string()
        } else {
            self.source.clone()
        };
        fuse.mount_options = vec![
            fuser::MountOption::FSName(source),
            fuser::MountOption::CUSTOM("subtype=topicfs".to_string()),
        ];
        if self.read_only {
            fuse.mount_options.push(fuser::MountOption::RO);
        }
        if self.allow_other {
            fuse.acl = fuser::SessionACL::All;
            fuse.mount_options
                .push(fuser::MountOption::DefaultPermissions);
        }
        fuse.n_threads = Some(self.threads.max(1));
        fuse.clone_fd = true;
        fuse
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fuser::MountOption;

    fn config(source: &str, read_only: bool, allow_other: bool, threads: usize) -> FuseConfig {
        FuseConfig {
            source: source.to_string(),
            read_only,
            allow_other,
            threads,
            io_uring: false,
        }
    }

    #[test]
    fn fuse_config_ro_allow_other_threads_and_source() {
        let c = config("/var/lib/kafka", false, false, 0).fuser_config();
        assert_eq!(
            c.mount_options,
            vec![
                MountOption::FSName("/var/lib/kafka".to_string()),
                MountOption::CUSTOM("subtype=topicfs".to_string()),
            ]
        );
        assert!(!matches!(c.acl, fuser::SessionACL::All));
        assert_eq!(c.n_threads, Some(1));
        assert!(c.clone_fd);

        let c = config("a:9092,b:9092", true, true, 4).fuser_config();
        assert_eq!(
            c.mount_options[0],
            MountOption::FSName("topicfs".to_string())
        );
        assert!(c.mount_options.contains(&MountOption::RO));
        assert!(c.mount_options.contains(&MountOption::DefaultPermissions));
        assert!(matches!(c.acl, fuser::SessionACL::All));
        assert_eq!(c.n_threads, Some(4));
    }
}
