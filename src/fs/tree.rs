//! The tree as a view of the storage: which names exist under a node, what each node's
//! attributes are, and what a directory lists (docs/contract.md, "The tree").

use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::group_handle::OffsetsHandle;
use super::inode::{
    self, GROUPS_DIR, GroupFile, LookupBy, MAILDIR_DIR, Node, PartitionDir, PartitionFile,
    TABLE_DIR, TopicFile, TopicName,
};
use super::types::{Attr, Kind};
use super::{DIR_TTL, FsResult, FsState, offset_text, tree};
use crate::addr::{OffsetForm, Start};
use crate::storage::{PartitionStore, TopicStore};
use crate::util::sync::MutexExt;

/// The directories of whole-topic reads under `<topic>/`.
const TOPIC_DIRS: [PartitionDir; 3] = [
    PartitionDir::ByOffset,
    PartitionDir::ByTime,
    PartitionDir::Follow,
];

/// The lookup files a directory holds.
fn lookup_by(dir: PartitionDir) -> LookupBy {
    match dir {
        PartitionDir::ByOffset => LookupBy::Offset,
        PartitionDir::ByTime => LookupBy::Time,
        _ => LookupBy::Follow,
    }
}

impl FsState {
    /// The live segment file `name` of `log` (ENOENT once it is gone).
    pub(super) fn segment_file(
        &self,
        log: &dyn crate::storage::PartitionStore,
        name: &str,
        node: &Node,
    ) -> FsResult<crate::base::SegmentFile> {
        match self
            .segments_of(log)?
            .into_iter()
            .find(|s| *s.name == *name)
        {
            Some(seg) => Ok(seg),
            None => tree(libc::ENOENT, format!("{node} no longer exists")),
        }
    }

    /// Resolves `name` in `parent`, asking the core whether it exists.
    pub(super) fn child(&self, parent: &Node, name: &OsStr) -> FsResult<Node> {
        if let Node::Table(t) = parent {
            return self.table_child(t, name);
        }
        if let Some(r) = self.maildir_child(parent, name) {
            return r;
        }
        let Some(name) = name.to_str() else {
            return tree(libc::ENOENT, "name is not UTF-8");
        };
        let missing = || tree(libc::ENOENT, format!("no entry {name:?} in {parent}"));
        match parent {
            Node::Root if name == inode::METRICS_FILE => Ok(Node::Metrics),
            Node::Root if name == inode::LOG_FILE => Ok(Node::Log),
            Node::Root => {
                let topic = self.storage.topic(name)?;
                Ok(Node::Topic(TopicName::new(
                    topic.name(),
                    topic.incarnation(),
                )))
            }
            Node::Topic(t) => self.topic_child(t, name),
            Node::Partition(t, p) => self.partition_child(t, *p, name),
            Node::PartitionDir(
                t,
                p,
                dir @ (PartitionDir::ByOffset | PartitionDir::ByTime | PartitionDir::Follow),
            ) => self.lookup_child(t, *p, *dir, name),
            Node::PartitionDir(t, p, PartitionDir::Segments) => self.segment_child(t, *p, name),
            Node::TopicDir(t, dir) => self.topic_lookup_child(t, *dir, name),
            Node::Groups(t) => {
                self.topic(t)?;
                // Any group id can be entered, by its name (escaped where it must be).
                let Some(id) = inode::group_id(name) else {
                    return tree(libc::ENOENT, format!("{name:?} is no group's name"));
                };
                Ok(Node::Group(t.clone(), Arc::from(id.as_str())))
            }
            Node::Group(t, g) if name == MAILDIR_DIR && self.groups.keeps_metadata() => {
                self.topic(t)?;
                Ok(Node::Maildir(t.clone(), Some(g.clone())))
            }
            Node::Group(t, g) => {
                self.topic(t)?;
                match GroupFile::ALL.into_iter().find(|f| f.name() == name) {
                    Some(f) => Ok(Node::GroupFile(t.clone(), g.clone(), f)),
                    None => missing(),
                }
            }
            Node::Table(_) | Node::Maildir(..) | Node::MailSub(..) => {
                unreachable!("answered above")
            }
            Node::Metrics
            | Node::Log
            | Node::TopicFile(..)
            | Node::PartitionFile(..)
            | Node::Lookup(..)
            | Node::TopicLookup(..)
            | Node::Segment(..)
            | Node::GroupFile(..)
            | Node::TableKey(..)
            | Node::TableHeld(..)
            | Node::MailHeld(..)
            | Node::MailRecord(..) => tree(libc::ENOTDIR, format!("{parent} is not a directory")),
        }
    }

    /// `<topic>/<p>/segments/<name>`: a file of the partition's directory.
    fn segment_child(&self, t: &TopicName, p: u32, name: &str) -> FsResult<Node> {
        let log = self.partition(t, p)?;
        if !self.segments_of(&*log)?.iter().any(|s| s.name == name) {
            return tree(libc::ENOENT, format!("no segment file {name:?} in {t}/{p}"));
        }
        let file = log.open_segment_file(name)?.metadata()?.ino();
        Ok(Node::Segment(t.clone(), p, Arc::from(name), file))
    }

    /// `<topic>/by-offset/<X>`, `by-time/<T>`, `follow/<X>`: a whole-topic lookup name.
    fn topic_lookup_child(&self, t: &TopicName, dir: PartitionDir, name: &str) -> FsResult<Node> {
        self.topic(t)?;
        match inode::parse_topic_lookup(lookup_by(dir), name) {
            Some(l) => Ok(Node::TopicLookup(t.clone(), l)),
            None => tree(
                libc::ENOENT,
                format!(
                    "{name:?} is not a whole-topic form (earliest, latest, -K, a time, T1..T2, @T)"
                ),
            ),
        }
    }

    /// The child `name` of topic `t`'s directory: its files, `groups`, `table`, the
    /// whole-topic directories and its partitions.
    fn topic_child(&self, t: &TopicName, name: &str) -> FsResult<Node> {
        if let Some(f) = TopicFile::ALL.into_iter().find(|f| f.name() == name) {
            self.topic(t)?;
            return Ok(Node::TopicFile(t.clone(), f));
        }
        if name == GROUPS_DIR {
            self.topic(t)?;
            return Ok(Node::Groups(t.clone()));
        }
        if name == TABLE_DIR {
            self.topic(t)?;
            return Ok(Node::Table(t.clone()));
        }
        if name == MAILDIR_DIR {
            self.topic(t)?;
            return Ok(Node::Maildir(t.clone(), None));
        }
        if let Some(d) = TOPIC_DIRS.into_iter().find(|d| d.name() == name) {
            self.topic(t)?;
            return Ok(Node::TopicDir(t.clone(), d));
        }
        match inode::parse_partition(name) {
            Some(p) => {
                self.partition(t, p)?;
                Ok(Node::Partition(t.clone(), p))
            }
            None => tree(
                libc::ENOENT,
                format!("no entry {name:?} in {}", Node::Topic(t.clone())),
            ),
        }
    }

    /// The child `name` of partition `p`'s directory: its files (`replicas` where the storage
    /// has them) and directories (`segments` where it has segment files).
    fn partition_child(&self, t: &TopicName, p: u32, name: &str) -> FsResult<Node> {
        let log = self.partition(t, p)?;
        if let Some(f) = PartitionFile::ALL
            .into_iter()
            .filter(|f| *f != PartitionFile::Replicas || log.has_replicas())
            .find(|f| f.name() == name)
        {
            return Ok(Node::PartitionFile(t.clone(), p, f));
        }
        if let Some(d) = PartitionDir::ALL
            .into_iter()
            .filter(|d| *d != PartitionDir::Segments || log.has_segment_files())
            .find(|d| d.name() == name)
        {
            return Ok(Node::PartitionDir(t.clone(), p, d));
        }
        tree(
            libc::ENOENT,
            format!("no entry {name:?} in {}", Node::Partition(t.clone(), p)),
        )
    }

    /// The name `name` in a `by-offset`, `by-time` or `follow` directory of partition `p`.
    fn lookup_child(&self, t: &TopicName, p: u32, dir: PartitionDir, name: &str) -> FsResult<Node> {
        let by = lookup_by(dir);
        let Some(lookup) = inode::parse_lookup(by, name) else {
            let what = match by {
                LookupBy::Offset => "an offset form (N, earliest, latest, -K, A..B)",
                LookupBy::Time => "a time form (ms, ISO-8601, a date, now, -15m, T1..T2)",
                LookupBy::Follow => "an offset form or @ and a time form",
            };
            return tree(libc::ENOENT, format!("{name:?} is not {what}"));
        };
        // The name exists only if it would open: a decimal offset must be in the
        // log; every other form names a place that exists (open positions itself).
        let log = self.partition(t, p)?;
        if let Start::Offset(OffsetForm::At(n)) = lookup.addr.start {
            log.check_offset(n)?;
        }
        Ok(Node::Lookup(t.clone(), p, lookup))
    }

    /// How long the kernel may keep `node`'s entry (which inode its name is): as long as
    /// its attributes, but a maildir's `tmp/`, `new/` and `cur/`, which exist as long as
    /// their maildir and change only their attributes (their mtime, never cached), are
    /// kept like any directory's: a path through them then costs no lookup of them.
    pub(super) fn entry_ttl(node: &Node) -> Duration {
        if matches!(node, Node::MailSub(..)) {
            return DIR_TTL;
        }
        Self::ttl(node)
    }

    /// How long the kernel may keep `node`'s attributes.
    pub(super) fn ttl(node: &Node) -> Duration {
        // A maildir's listings and held files change with every delivery, take and removal.
        if matches!(node, Node::MailSub(..) | Node::MailHeld(..)) {
            return Duration::ZERO;
        }
        // A group's record file never changes (its value, size and time are the record's),
        // and it goes only by a rename or unlink the kernel sees: cached like a directory,
        // it saves a Maildir reader's repeated `stat`s their requests.
        if matches!(node, Node::MailRecord(..)) {
            return DIR_TTL;
        }
        match node.kind() {
            Kind::Directory => DIR_TTL,
            // An append file's attributes never change (size 0, its mode, the mount's time)
            // and it lives as long as its partition directory: cached like a directory, it
            // saves `echo >> append` its lookup.
            Kind::File if node.is_append() => DIR_TTL,
            // A group's streams likewise (size 0, their mode, the topic's time), and any valid
            // group name exists as long as its topic. (Its `offsets` changes size with each
            // commit: never cached.)
            Kind::File if matches!(node, Node::GroupFile(.., f) if *f != GroupFile::Offsets) => {
                DIR_TTL
            }
            // Sizes and existence of other files change behind the kernel's back: never
            // cache them.
            Kind::File => Duration::ZERO,
        }
    }

    /// A node's permission bits: its own, with the group and other bits the log dirs grant.
    pub(super) fn perm(&self, node: &Node) -> u16 {
        self.owner.perm(node.perm())
    }

    pub(super) fn attr(&self, ino: u64, node: &Node) -> FsResult<Attr> {
        // Times are true: a partition's files and directory have the time of its last append,
        // a topic's the time of its last change; what has none known, the mount's.
        let mut time = self.mounted_at;
        let mut file_mode = 0o777u16;
        let mut blocks = None;
        let mut held_mode = None;
        let size: u64 = match node {
            Node::Segment(t, p, name, file_ino) => {
                let md = self.segment_metadata(ino, node, (t, *p, name, *file_ino))?;
                time = md.modified().unwrap_or(self.mounted_at);
                // What is stored, not the preallocated length (a sparse index): `du` is true.
                blocks = Some(md.blocks());
                // A segment file grants group and others no more than its own mode does.
                file_mode = std::os::unix::fs::PermissionsExt::mode(&md.permissions()) as u16;
                md.len()
            }
            _ => {
                let (size, at) = self.size_and_time(node)?;
                time = at.unwrap_or(time);
                if let Some(Ok(held)) = self.held_file(node) {
                    held_mode = Some(held.guard().mode());
                }
                size
            }
        };
        let kind = node.kind();
        // A held file has its own mode; a segment file grants group and others no more than
        // its file's.
        let perm = match held_mode {
            Some(mode) => self.perm(node) & mode,
            None => self.perm(node) & (0o700 | file_mode),
        };
        // Files are read in requests as large as the kernel sends; append files keep the
        // 128 KiB writes `cat` and `cp` make by default (bulk appends in 1 MiB requests
        // measured slower).
        let io_size = match node {
            Node::GroupFile(_, _, f) if f.format().is_some() => crate::group::LINE_IO_SIZE,
            _ if kind == Kind::File && !node.is_append() => super::IO_SIZE,
            _ => 4096,
        };
        Ok(Attr {
            ino,
            size,
            blocks: blocks.unwrap_or(size.div_ceil(512)),
            kind,
            perm,
            nlink: if kind == Kind::Directory { 2 } else { 1 },
            uid: self.owner.uid,
            gid: self.owner.gid,
            time,
            io_size,
        })
    }

    /// The size and time (None: the mount's) of every node but a segment file.
    fn size_and_time(&self, node: &Node) -> FsResult<(u64, Option<SystemTime>)> {
        Ok(match node {
            Node::Maildir(..) | Node::MailSub(..) | Node::MailHeld(..) | Node::MailRecord(..) => {
                let (size, at) = self.maildir_attr(node).expect("a maildir node")?;
                (size, Some(at))
            }
            // Made at each open: its size is known only then (a reader reads to the end).
            Node::Root | Node::Metrics => (0, None),
            // The lines kept now; a reader's `fstat` shows its own length (`LogHandle`).
            Node::Log => {
                let (start, end) = crate::logtail::global().bounds();
                (end - start, None)
            }
            Node::Topic(t) => (0, self.topic(t)?.modified()),
            Node::TopicFile(t, f) => {
                let topic = self.topic(t)?;
                (topic_file_size(&*topic, *f)?, topic.modified())
            }
            Node::Partition(t, p) | Node::PartitionDir(t, p, _) => {
                (0, self.partition(t, *p)?.modified())
            }
            Node::PartitionFile(t, p, f) => {
                let log = self.partition(t, *p)?;
                (partition_file_size(&*log, *f)?, log.modified())
            }
            Node::Lookup(t, p, _) => (0, self.partition(t, *p)?.modified()),
            // The group's offsets now: its true size (`tar` stores as many bytes as `stat` says),
            // where the mount holds them; asked of a cluster (remote mode), made at open.
            Node::GroupFile(t, g, GroupFile::Offsets) if self.groups.committed_is_held() => {
                let topic = self.topic(t)?;
                let size = OffsetsHandle::text(&*topic, g, &*self.groups)?.len() as u64;
                (size, topic.modified())
            }
            Node::Groups(t)
            | Node::Group(t, _)
            | Node::GroupFile(t, ..)
            | Node::TopicDir(t, _)
            | Node::TopicLookup(t, _)
            | Node::Table(t) => (0, self.topic(t)?.modified()),
            Node::TableKey(t, key) => {
                let (size, at) = self.table_attr(t, key)?;
                (size, Some(at))
            }
            Node::TableHeld(t, name) => {
                let Some(f) = self.held.get(t, name) else {
                    return tree(libc::ENOENT, format!("{node} was removed"));
                };
                let f = f.guard();
                (f.len(), Some(f.mtime()))
            }
            Node::Segment(..) => unreachable!("a segment file's attributes are its file's"),
        })
    }

    /// The metadata of segment file `name` of partition `p` (inode `ino`): the real file's,
    /// or, once it was replaced or removed, what an open file of it holds (its `fstat`).
    fn segment_metadata(
        &self,
        ino: u64,
        node: &Node,
        (t, p, name, file_ino): (&TopicName, u32, &str, u64),
    ) -> FsResult<std::fs::Metadata> {
        let log = self.partition(t, p)?;
        let live = self
            .segment_file(&*log, name, node)
            .and_then(|seg| Ok(log.open_segment_file(&seg.name)?.metadata()?));
        Ok(match live {
            Ok(md) if md.ino() == file_ino => md,
            live => match self.open_segment_file(ino) {
                Some(f) => f.metadata()?,
                None => {
                    live?;
                    return tree(
                        libc::ENOENT,
                        format!("{node}: the file was replaced by another one"),
                    );
                }
            },
        })
    }

    /// The entries of a directory (without `.` and `..`).
    ///
    /// One step (over 80 lines): one arm per directory of the tree, each listing what
    /// [`FsState::child`] finds, side by side so the two are read together.
    pub(super) fn entries(&self, node: &Node) -> FsResult<Vec<(Node, String)>> {
        let mut out = Vec::new();
        match node {
            Node::Root => {
                for t in self.storage.topics() {
                    // Deleted since the names were listed: not listed.
                    let Ok(topic) = self.storage.topic(&t) else {
                        continue;
                    };
                    let node = Node::Topic(TopicName::new(&t, topic.incarnation()));
                    out.push((node, t));
                }
            }
            Node::Topic(t) => {
                let topic = self.topic(t)?;
                for f in TopicFile::ALL {
                    out.push((Node::TopicFile(t.clone(), f), f.name().to_string()));
                }
                out.push((Node::Groups(t.clone()), GROUPS_DIR.to_string()));
                for d in TOPIC_DIRS {
                    out.push((Node::TopicDir(t.clone(), d), d.name().to_string()));
                }
                out.push((Node::Table(t.clone()), TABLE_DIR.to_string()));
                out.push((Node::Maildir(t.clone(), None), MAILDIR_DIR.to_string()));
                for p in 0..topic.partition_count() {
                    out.push((Node::Partition(t.clone(), p), p.to_string()));
                }
            }
            Node::Groups(t) => {
                self.topic(t)?;
                for g in self.groups.groups_of(t) {
                    let name = inode::group_file_name(&g);
                    out.push((Node::Group(t.clone(), Arc::from(g.as_str())), name));
                }
            }
            Node::Group(t, g) => {
                self.topic(t)?;
                // The record files consume (and `follow` waits): a tree walk (`cp -r`,
                // `grep -r`, `tar`) must not open them. They open by name, not listed, as
                // `follow/<N>` is.
                for f in GroupFile::ALL.into_iter().filter(|f| f.format().is_none()) {
                    out.push((
                        Node::GroupFile(t.clone(), g.clone(), f),
                        f.name().to_string(),
                    ));
                }
                if self.groups.keeps_metadata() {
                    out.push((
                        Node::Maildir(t.clone(), Some(g.clone())),
                        MAILDIR_DIR.to_string(),
                    ));
                }
            }
            Node::Partition(t, p) => out = self.partition_entries(t, *p)?,
            // Any valid name opens; none is listed.
            Node::TopicDir(t, _) => {
                self.topic(t)?;
            }
            Node::PartitionDir(
                t,
                p,
                PartitionDir::ByOffset | PartitionDir::ByTime | PartitionDir::Follow,
            ) => {
                self.partition(t, *p)?;
            }
            Node::PartitionDir(t, p, PartitionDir::Segments) => {
                for s in self.segments_of(&*self.partition(t, *p)?)? {
                    // Gone since it was listed: not shown.
                    let Ok(md) = std::fs::symlink_metadata(&s.path) else {
                        continue;
                    };
                    out.push((
                        Node::Segment(t.clone(), *p, Arc::from(s.name.as_str()), md.ino()),
                        s.name,
                    ));
                }
            }
            _ => return tree(libc::ENOTDIR, format!("{node} is not a directory")),
        }
        Ok(out)
    }

    /// A partition directory's entries: its files (`replicas` where the storage has them)
    /// and directories (`segments/` where it has segment files).
    fn partition_entries(&self, t: &TopicName, p: u32) -> FsResult<Vec<(Node, String)>> {
        let log = self.partition(t, p)?;
        let mut out = Vec::new();
        for f in PartitionFile::ALL
            .into_iter()
            .filter(|f| *f != PartitionFile::Replicas || log.has_replicas())
        {
            out.push((Node::PartitionFile(t.clone(), p, f), f.name().to_string()));
        }
        let has_segments = log.has_segment_files();
        for d in PartitionDir::ALL
            .into_iter()
            .filter(|d| *d != PartitionDir::Segments || has_segments)
        {
            out.push((Node::PartitionDir(t.clone(), p, d), d.name().to_string()));
        }
        Ok(out)
    }
}

/// The size of a topic file: its content as an open reads it now (append files are empty).
fn topic_file_size(topic: &dyn TopicStore, f: TopicFile) -> FsResult<u64> {
    Ok(match f {
        TopicFile::Partitions => format!("{}\n", topic.partition_count_now()?).len() as u64,
        TopicFile::Config => topic.config_text()?.len() as u64,
        TopicFile::Append | TopicFile::AppendJsonl | TopicFile::AppendKv => 0,
    })
}

/// The size of a partition file: its content as an open reads it now (append files are
/// empty).
fn partition_file_size(log: &dyn PartitionStore, f: PartitionFile) -> FsResult<u64> {
    Ok(match f {
        PartitionFile::Append | PartitionFile::AppendJsonl | PartitionFile::AppendKv => 0,
        PartitionFile::LogStartOffset => offset_text(log.offsets_now()?.0).len() as u64,
        PartitionFile::LogEndOffset => offset_text(log.offsets_now()?.1).len() as u64,
        // Counted by reading the partition (remote mode): made at open, as /proc's files are.
        PartitionFile::Count if !log.counts_without_reading() => 0,
        PartitionFile::Count => format!("{}\n", log.record_count()?).len() as u64,
        PartitionFile::Replicas => log.replicas_text()?.len() as u64,
    })
}
