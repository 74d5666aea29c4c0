//! The tree as a view of the storage: which names exist under a node, what each node's
//! attributes are, and what a directory lists (docs/contract.md, "The tree").

use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::handle::Handle;
use super::inode::{
    self, GROUPS_DIR, LookupBy, LookupName, MAILDIR_DIR, Node, PartitionDir, PartitionFile,
    TABLE_DIR, TopicFile, TopicName,
};
use super::types::{Access, Attr, Kind, Opened};
use super::view::{Mine, View};
use super::{DIR_TTL, FsResult, FsState, OpenFile, offset_text, tree, view_of};
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

    /// The child `name` of a directory of the topics' tree (None: `parent` is not one).
    fn tree_child(&self, parent: &Node, name: &OsStr) -> Mine<Node> {
        if !matches!(
            parent,
            Node::Root
                | Node::Topic(_)
                | Node::Partition(..)
                | Node::PartitionDir(..)
                | Node::TopicDir(..)
        ) {
            return None;
        }
        let Some(name) = name.to_str() else {
            return Some(tree(libc::ENOENT, "name is not UTF-8"));
        };
        Some(match parent {
            Node::Root if name == inode::METRICS_FILE => Ok(Node::Metrics),
            Node::Root if name == inode::LOG_FILE => Ok(Node::Log),
            Node::Root => self
                .storage
                .topic(name)
                .map_err(Into::into)
                .map(|topic| Node::Topic(TopicName::new(topic.name(), topic.incarnation()))),
            Node::Topic(t) => self.topic_child(t, name),
            Node::Partition(t, p) => self.partition_child(t, *p, name),
            Node::PartitionDir(t, p, PartitionDir::Segments) => self.segment_child(t, *p, name),
            Node::PartitionDir(t, p, dir) => self.lookup_child(t, *p, *dir, name),
            Node::TopicDir(t, dir) => self.topic_lookup_child(t, *dir, name),
            _ => unreachable!("a directory of the topics' tree"),
        })
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
        let decoded = self.schemas.for_topic(t).is_some();
        let shows = super::cache::shows(&*log, &lookup, decoded)?;
        Ok(Node::Lookup(t.clone(), p, LookupName { shows, ..lookup }))
    }

    /// How long the kernel may keep `node`'s entry (which inode its name is): as long as
    /// its attributes, unless its view says otherwise.
    pub(super) fn entry_ttl(node: &Node) -> Duration {
        if let Node::Lookup(.., name) = node
            && name.shows != 0
        {
            return super::cache::ENTRY_TTL;
        }
        view_of(node)
            .entry_ttl(node)
            .unwrap_or_else(|| Self::ttl(node))
    }

    /// How long the kernel may keep `node`'s attributes (its view may say otherwise).
    pub(super) fn ttl(node: &Node) -> Duration {
        if let Some(ttl) = view_of(node).ttl(node) {
            return ttl;
        }
        match node.kind() {
            Kind::Directory => DIR_TTL,
            // An append file's attributes never change (size 0, its mode, the mount's time)
            // and it lives as long as its partition directory: cached like a directory, it
            // saves `echo >> append` its lookup.
            Kind::File if node.is_append() => DIR_TTL,
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
                let view = view_of(node);
                let Some(answer) = view.size_and_time(self, node) else {
                    return tree(libc::ENOENT, format!("{node} has no attributes"));
                };
                let (size, at) = answer?;
                // A cached file's length is counted at GETATTR only (FsState::getattr).
                let size = match node {
                    Node::Lookup(.., name) if name.shows != 0 => self.shown_size(ino, node),
                    _ => size,
                };
                time = at.unwrap_or(time);
                if let Some(Ok(held)) = view.held(self, node) {
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
        let io_size = match view_of(node).io_size(node) {
            Some(size) => size,
            // A cached file is read ahead by the kernel: a buffered reader's first read
            // (`head -n 1`) asks for less than a stream's.
            None if matches!(node, Node::Lookup(.., n) if n.shows != 0) => super::cache::IO_SIZE,
            None if kind == Kind::File && !node.is_append() => super::IO_SIZE,
            None => 4096,
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

    /// The size and time (None: the mount's) of a node of the topics' tree but a segment
    /// file (None: not one).
    fn tree_size_and_time(&self, node: &Node) -> Mine<(u64, Option<SystemTime>)> {
        (|| -> FsResult<Option<(u64, Option<SystemTime>)>> {
            Ok(Some(match node {
                Node::Root => (0, None),
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
                Node::TopicDir(t, _) | Node::TopicLookup(t, _) => (0, self.topic(t)?.modified()),
                Node::Segment(..) => unreachable!("a segment file's attributes are its file's"),
                _ => return Ok(None),
            }))
        })()
        .transpose()
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

    /// The entries of a directory of the topics' tree (without `.` and `..`; None: not one).
    /// One arm per directory, each listing what `tree_child` finds.
    fn tree_entries(&self, node: &Node) -> FsResult<Option<Vec<(Node, String)>>> {
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
            _ => return Ok(None),
        }
        Ok(Some(out))
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

/// The tree of topics and partitions (docs/contract.md, "The tree"): the root, each topic's
/// files and directories, its partitions, their lookup names and segment files; every node
/// no other view owns.
pub(super) struct TopicsView;

impl View for TopicsView {
    fn name(&self) -> &'static str {
        "topics"
    }

    fn owns(&self, _: &Node) -> bool {
        true
    }

    fn child(&self, fs: &FsState, parent: &Node, name: &OsStr) -> Mine<Node> {
        fs.tree_child(parent, name)
    }

    fn size_and_time(&self, fs: &FsState, node: &Node) -> Mine<(u64, Option<SystemTime>)> {
        fs.tree_size_and_time(node)
    }

    fn entries(&self, fs: &FsState, node: &Node) -> Mine<Vec<(Node, String)>> {
        fs.tree_entries(node).transpose()
    }

    fn open(&self, fs: &FsState, ino: u64, node: &Node, access: Access, pid: u32) -> Mine<Opened> {
        fs.tree_open(ino, node, access, pid)
    }

    fn write(
        &self,
        fs: &FsState,
        _: &OpenFile,
        h: &mut Handle,
        (_, data): (u64, &[u8]),
        owner: Option<u64>,
    ) -> Mine<u32> {
        let res = match h {
            Handle::Append(a) => a.write(data, owner).map(|n| n as u32),
            Handle::Text(t) => t
                .write(&*fs.storage, data, owner)
                .map(|()| data.len() as u32),
            _ => return None,
        };
        Some(res.map_err(Into::into))
    }

    fn ioctl(&self, h: &Handle, cmd: u32) -> Mine<()> {
        super::read::terminal_ioctl(h, cmd)
    }
}
