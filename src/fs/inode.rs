//! The nodes of the mounted tree (docs/contract.md) and the inode table that numbers them.
//! A node names a place in the tree; whether it still exists is asked of the core each time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::types::Kind;
use crate::addr::{self, Address};
use crate::util::sync::MutexExt;

/// The topic a node belongs to: its name and its incarnation, so the nodes (and inode
/// numbers) of a deleted topic are never those of a topic created since under its name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TopicName {
    name: Arc<str>,
    incarnation: u64,
}

impl TopicName {
    pub fn new(name: &str, incarnation: u64) -> TopicName {
        TopicName {
            name: Arc::from(name),
            incarnation,
        }
    }

    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }
}

impl std::ops::Deref for TopicName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Display for TopicName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// The inode number of the mount's root.
pub const ROOT_INO: u64 = 1;

/// A place in the mounted tree.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    Root,
    Topic(TopicName),
    TopicFile(TopicName, TopicFile),
    Partition(TopicName, u32),
    PartitionFile(TopicName, u32, PartitionFile),
    PartitionDir(TopicName, u32, PartitionDir),
    /// `by-offset/<N>` or `by-time/<T>`.
    Lookup(TopicName, u32, LookupName),
    /// `segments/<name>`, and the inode number of the real file it is: a file put in its
    /// place under that name (the cleaner's rewrite) is another node, as on a disk, while
    /// the kernel may still hold the old one open.
    Segment(TopicName, u32, Arc<str>, u64),
    /// `<topic>/by-offset/`, `<topic>/by-time/`, `<topic>/follow/`: every partition at once.
    TopicDir(TopicName, PartitionDir),
    /// A file of those: the whole topic from each partition's start, no group.
    TopicLookup(TopicName, LookupName),
    /// `<topic>/groups/`.
    Groups(TopicName),
    /// `<topic>/groups/<G>/`.
    Group(TopicName, Arc<str>),
    /// A file of `<topic>/groups/<G>/`.
    GroupFile(TopicName, Arc<str>, GroupFile),
    /// `<mountpoint>/@metrics`.
    Metrics,
    /// `<mountpoint>/@log`: the daemon's last log lines, followed.
    Log,
    /// `<topic>/table/`.
    Table(TopicName),
    /// `<topic>/table/<key>`: the key's bytes (the name is their escaped form).
    TableKey(TopicName, Arc<[u8]>),
    /// `<topic>/table/.<name>`: a file the mount holds, never a key (see `held.rs`).
    TableHeld(TopicName, Arc<str>),
    /// `<topic>/maildir/` (no group) or `<topic>/groups/<G>/maildir/`.
    Maildir(TopicName, Option<Arc<str>>),
    /// `tmp/`, `new/` or `cur/` of one of those.
    MailSub(TopicName, Option<Arc<str>>, MailSub),
    /// A file held in `<topic>/maildir/tmp/` (or being written into `new/`): its id.
    MailHeld(TopicName, u64),
    /// A record of `<topic>/groups/<G>/maildir/` (in `new/` or `cur/`, the same file):
    /// partition and offset.
    MailRecord(TopicName, Arc<str>, u32, i64),
}

/// The directories of a maildir.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MailSub {
    Tmp,
    New,
    Cur,
}

impl MailSub {
    pub const ALL: [MailSub; 3] = [MailSub::Tmp, MailSub::New, MailSub::Cur];

    pub fn name(self) -> &'static str {
        match self {
            MailSub::Tmp => "tmp",
            MailSub::New => "new",
            MailSub::Cur => "cur",
        }
    }
}

/// The name of a maildir under a topic and under a group.
pub const MAILDIR_DIR: &str = "maildir";

/// Files of `<topic>/groups/<G>/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupFile {
    Records,
    RecordsJsonl,
    Follow,
    FollowJsonl,
    Offsets,
}

impl GroupFile {
    pub const ALL: [GroupFile; 5] = [
        GroupFile::Records,
        GroupFile::RecordsJsonl,
        GroupFile::Follow,
        GroupFile::FollowJsonl,
        GroupFile::Offsets,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GroupFile::Records => "records",
            GroupFile::RecordsJsonl => "records.jsonl",
            GroupFile::Follow => "follow",
            GroupFile::FollowJsonl => "follow.jsonl",
            GroupFile::Offsets => "offsets",
        }
    }

    /// The record files' format (None for `offsets`).
    pub fn format(self) -> Option<Format> {
        match self {
            GroupFile::Records | GroupFile::Follow => Some(Format::Lines),
            GroupFile::RecordsJsonl | GroupFile::FollowJsonl => Some(Format::Jsonl),
            GroupFile::Offsets => None,
        }
    }

    pub fn follows(self) -> bool {
        matches!(self, GroupFile::Follow | GroupFile::FollowJsonl)
    }
}

/// The name of the directory of groups under a topic.
pub const GROUPS_DIR: &str = "groups";

/// The name of the metrics file at the root (`@` starts no topic name).
pub const METRICS_FILE: &str = "@metrics";
pub const LOG_FILE: &str = "@log";

/// The name of the directory of keys under a topic.
pub const TABLE_DIR: &str = "table";

/// Files directly under `<topic>/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TopicFile {
    Partitions,
    Config,
    Append,
    AppendJsonl,
    AppendKv,
}

/// Files directly under `<topic>/<p>/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PartitionFile {
    Append,
    AppendJsonl,
    AppendKv,
    LogStartOffset,
    LogEndOffset,
    /// `count`: the data records in the partition now.
    Count,
    /// The leader, replicas and in-sync replicas (a storage with replicas: remote mode).
    Replicas,
}

/// Directories directly under `<topic>/<p>/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PartitionDir {
    ByOffset,
    ByTime,
    Follow,
    Segments,
}

/// Where a lookup file starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LookupBy {
    Offset,
    Time,
    /// `follow/<X>`: from an offset form or `@` and a time form, never ending.
    Follow,
}

impl LookupBy {
    /// The name forms its directory takes.
    pub fn forms(self) -> addr::Forms {
        match self {
            LookupBy::Offset => addr::Forms::ByOffset,
            LookupBy::Time => addr::Forms::ByTime,
            LookupBy::Follow => addr::Forms::Follow,
        }
    }

    /// The directory of the lookup files.
    pub fn dir(self) -> PartitionDir {
        match self {
            LookupBy::Offset => PartitionDir::ByOffset,
            LookupBy::Time => PartitionDir::ByTime,
            LookupBy::Follow => PartitionDir::Follow,
        }
    }
}

pub use crate::render::Format;

/// The parsed name of a lookup file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LookupName {
    pub by: LookupBy,
    /// Where it starts and ends, as named (resolved against the log at open).
    pub addr: Address,
    pub format: Format,
    /// For a file the kernel caches, what it shows (see [`crate::fs::cache`]): the
    /// partition's generation; 0 for a stream. A name whose bytes changed is another node.
    pub shows: u64,
}

impl TopicFile {
    pub const ALL: [TopicFile; 5] = [
        TopicFile::Partitions,
        TopicFile::Config,
        TopicFile::Append,
        TopicFile::AppendJsonl,
        TopicFile::AppendKv,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TopicFile::Partitions => "partitions",
            TopicFile::Config => "config",
            TopicFile::Append => "append",
            TopicFile::AppendJsonl => "append.jsonl",
            TopicFile::AppendKv => "append.kv",
        }
    }
}

impl PartitionFile {
    pub const ALL: [PartitionFile; 7] = [
        PartitionFile::Append,
        PartitionFile::AppendJsonl,
        PartitionFile::AppendKv,
        PartitionFile::LogStartOffset,
        PartitionFile::LogEndOffset,
        PartitionFile::Count,
        PartitionFile::Replicas,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PartitionFile::Append => "append",
            PartitionFile::AppendJsonl => "append.jsonl",
            PartitionFile::AppendKv => "append.kv",
            PartitionFile::LogStartOffset => "log-start-offset",
            PartitionFile::LogEndOffset => "log-end-offset",
            PartitionFile::Count => "count",
            PartitionFile::Replicas => "replicas",
        }
    }
}

impl PartitionDir {
    pub const ALL: [PartitionDir; 4] = [
        PartitionDir::ByOffset,
        PartitionDir::ByTime,
        PartitionDir::Follow,
        PartitionDir::Segments,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PartitionDir::ByOffset => "by-offset",
            PartitionDir::ByTime => "by-time",
            PartitionDir::Follow => "follow",
            PartitionDir::Segments => "segments",
        }
    }
}

/// The name a consumer group shows as in `groups/`. Kafka allows any string as a group id;
/// it is named by the rule of `table/` keys ([`crate::table::names::key_to_name`]): one that
/// is a file name and has no `%` is its own name; any other is percent-escaped (`a/b` is
/// `a%2Fb`, `50%` is `50%25`, `.` and `..` are `%2E` and `%2E%2E`, the empty id is `%`).
/// Every `%` being escaped, no id's name is another's.
pub fn group_file_name(id: &str) -> String {
    crate::table::names::group_to_name(id.as_bytes())
}

/// The group id a name of `groups/` stands for ([`group_file_name`] undone); None for a
/// name that is no group's (a bad escape, bytes that are not UTF-8, or an escape where none
/// is needed: each group has one name).
pub fn group_id(name: &str) -> Option<String> {
    String::from_utf8(crate::table::names::name_to_group(name)?).ok()
}

/// Parses a partition directory name: the canonical decimal form only (`0`, `12`, not `012`).
pub fn parse_partition(name: &str) -> Option<u32> {
    let p: u32 = addr::parse_decimal(name)?.try_into().ok()?;
    (p.to_string() == name).then_some(p)
}

/// Parses the name of a file under `by-offset/`, `by-time/` or `follow/`: one of the forms
/// of `crate::addr` for that directory, optionally followed by `.jsonl`.
pub fn parse_lookup(by: LookupBy, name: &str) -> Option<LookupName> {
    let (form, format) = match name.strip_suffix(Format::Jsonl.suffix()) {
        Some(d) => (d, Format::Jsonl),
        None => (name, Format::Lines),
    };
    let addr = addr::parse(by.forms(), form)?;
    Some(LookupName {
        by,
        addr,
        format,
        shows: 0,
    })
}

impl LookupName {
    /// `by-offset/<n>` (or `<n>.jsonl`).
    #[cfg(feature = "internals")]
    pub fn at_offset(n: i64, format: Format) -> LookupName {
        LookupName {
            by: LookupBy::Offset,
            addr: Address {
                start: addr::Start::Offset(addr::OffsetForm::At(n)),
                end: None,
            },
            format,
            shows: 0,
        }
    }
}

/// Parses the name of a file under `<topic>/by-offset/`, `<topic>/by-time/` or
/// `<topic>/follow/`: the forms that mean something in every partition at once (no decimal
/// offset; a range of times, not of offsets).
pub fn parse_topic_lookup(by: LookupBy, name: &str) -> Option<LookupName> {
    let l = parse_lookup(by, name)?;
    let per_partition = matches!(l.addr.start, addr::Start::Offset(addr::OffsetForm::At(_)))
        || matches!(l.addr.end, Some(addr::End::Offset(_)));
    (!per_partition).then_some(l)
}

impl std::fmt::Display for LookupName {
    /// The file name.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.addr, self.format.suffix())
    }
}

impl Node {
    /// The topic this node belongs to (None for the root).
    pub fn topic(&self) -> Option<&TopicName> {
        match self {
            Node::Root | Node::Metrics | Node::Log => None,
            Node::Topic(t)
            | Node::TopicFile(t, _)
            | Node::Partition(t, _)
            | Node::PartitionFile(t, ..)
            | Node::PartitionDir(t, ..)
            | Node::Lookup(t, ..)
            | Node::Segment(t, ..)
            | Node::TopicDir(t, _)
            | Node::TopicLookup(t, _)
            | Node::Groups(t)
            | Node::Group(t, _)
            | Node::GroupFile(t, ..)
            | Node::Table(t)
            | Node::TableKey(t, _)
            | Node::TableHeld(t, _)
            | Node::Maildir(t, _)
            | Node::MailSub(t, ..)
            | Node::MailHeld(t, _)
            | Node::MailRecord(t, ..) => Some(t),
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Node::Root
            | Node::Topic(_)
            | Node::Partition(..)
            | Node::PartitionDir(..)
            | Node::TopicDir(..)
            | Node::Groups(_)
            | Node::Group(..)
            | Node::Table(_)
            | Node::Maildir(..)
            | Node::MailSub(..) => Kind::Directory,
            Node::TopicLookup(..)
            | Node::TableKey(..)
            | Node::TableHeld(..)
            | Node::Metrics
            | Node::Log
            | Node::TopicFile(..)
            | Node::PartitionFile(..)
            | Node::Lookup(..)
            | Node::Segment(..)
            | Node::GroupFile(..)
            | Node::MailHeld(..)
            | Node::MailRecord(..) => Kind::File,
        }
    }

    /// Permission bits. The filesystem enforces them itself at open (root included).
    pub fn perm(&self) -> u16 {
        match self {
            Node::Root | Node::Topic(_) | Node::Partition(..) | Node::Table(_) => 0o755,
            Node::TableKey(..) | Node::TableHeld(..) | Node::MailHeld(..) => 0o644,
            // The daemon's log names paths and groups of every user: its owner's only.
            Node::Log => 0o400,
            // Files are made, renamed and removed in them; the maildir itself is fixed.
            Node::MailSub(..) => 0o755,
            Node::Maildir(..) => 0o555,
            Node::MailRecord(..) => 0o444,
            Node::PartitionDir(..) | Node::TopicDir(..) | Node::Groups(_) | Node::Group(..) => {
                0o555
            }
            Node::TopicLookup(..) => 0o444,
            Node::GroupFile(_, _, GroupFile::Offsets) => 0o644,
            // Reading a group's records commits, and `follow` takes partitions from the
            // group's readers: as much a write to the group as resetting its `offsets`, so
            // only who may write `offsets` (its owner) may read them.
            Node::GroupFile(..) => 0o400,
            Node::TopicFile(_, TopicFile::Partitions | TopicFile::Config) => 0o644,
            // An append file reads as empty for who may write it, so a walk of the tree
            // (`cp -r`, `tar`, `grep -r`) copies it as an empty file instead of failing.
            Node::TopicFile(
                _,
                TopicFile::Append | TopicFile::AppendJsonl | TopicFile::AppendKv,
            )
            | Node::PartitionFile(
                _,
                _,
                PartitionFile::Append | PartitionFile::AppendJsonl | PartitionFile::AppendKv,
            ) => 0o600,
            Node::PartitionFile(..) | Node::Lookup(..) | Node::Segment(..) | Node::Metrics => 0o444,
        }
    }

    /// The append files (`append`, `append.jsonl`, at topic and partition level).
    pub fn is_append(&self) -> bool {
        matches!(
            self,
            Node::TopicFile(
                _,
                TopicFile::Append | TopicFile::AppendJsonl | TopicFile::AppendKv
            ) | Node::PartitionFile(
                _,
                _,
                PartitionFile::Append | PartitionFile::AppendJsonl | PartitionFile::AppendKv
            )
        )
    }

    pub fn readable(&self) -> bool {
        self.perm() & 0o400 != 0
    }

    pub fn writable(&self) -> bool {
        self.perm() & 0o200 != 0
    }

    /// Files whose truncation (`>` sends `setattr(size=0)`) is accepted as a no-op.
    pub fn truncatable(&self) -> bool {
        matches!(
            self,
            Node::TopicFile(..)
                | Node::PartitionFile(
                    _,
                    _,
                    PartitionFile::Append | PartitionFile::AppendJsonl | PartitionFile::AppendKv
                )
                | Node::GroupFile(_, _, GroupFile::Offsets)
                | Node::TableKey(..)
                | Node::TableHeld(..)
        )
    }

    /// The directory this node lives in (the root is its own parent).
    pub fn parent(&self) -> Node {
        match self {
            Node::Root | Node::Topic(_) | Node::Metrics | Node::Log => Node::Root,
            Node::TopicFile(t, _) | Node::Partition(t, _) => Node::Topic(t.clone()),
            Node::PartitionFile(t, p, _) | Node::PartitionDir(t, p, _) => {
                Node::Partition(t.clone(), *p)
            }
            Node::Lookup(t, p, l) => Node::PartitionDir(t.clone(), *p, l.by.dir()),
            Node::Segment(t, p, ..) => Node::PartitionDir(t.clone(), *p, PartitionDir::Segments),
            Node::Groups(t) | Node::TopicDir(t, _) => Node::Topic(t.clone()),
            Node::TopicLookup(t, l) => Node::TopicDir(t.clone(), l.by.dir()),
            Node::Group(t, _) => Node::Groups(t.clone()),
            Node::GroupFile(t, g, _) => Node::Group(t.clone(), g.clone()),
            Node::Table(t) => Node::Topic(t.clone()),
            Node::TableKey(t, _) | Node::TableHeld(t, _) => Node::Table(t.clone()),
            Node::Maildir(t, None) => Node::Topic(t.clone()),
            Node::Maildir(t, Some(g)) => Node::Group(t.clone(), g.clone()),
            Node::MailSub(t, g, _) => Node::Maildir(t.clone(), g.clone()),
            Node::MailHeld(t, _) => Node::MailSub(t.clone(), None, MailSub::Tmp),
            Node::MailRecord(t, g, ..) => Node::MailSub(t.clone(), Some(g.clone()), MailSub::New),
        }
    }
}

impl std::fmt::Display for Node {
    /// The node's path below the mountpoint, for log lines.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Node::Root => write!(f, "/"),
            Node::Metrics => write!(f, "{METRICS_FILE}"),
            Node::Log => write!(f, "{LOG_FILE}"),
            Node::Topic(t) => write!(f, "{t}"),
            Node::TopicFile(t, file) => write!(f, "{t}/{}", file.name()),
            Node::Partition(t, p) => write!(f, "{t}/{p}"),
            Node::PartitionFile(t, p, file) => write!(f, "{t}/{p}/{}", file.name()),
            Node::PartitionDir(t, p, dir) => write!(f, "{t}/{p}/{}", dir.name()),
            Node::Lookup(t, p, l) => write!(f, "{t}/{p}/{}/{l}", l.by.dir().name()),
            Node::Segment(t, p, name, _) => write!(f, "{t}/{p}/segments/{name}"),
            Node::TopicDir(t, dir) => write!(f, "{t}/{}", dir.name()),
            Node::TopicLookup(t, l) => write!(f, "{t}/{}/{l}", l.by.dir().name()),
            Node::Groups(t) => write!(f, "{t}/{GROUPS_DIR}"),
            Node::Group(t, g) => write!(f, "{t}/{GROUPS_DIR}/{g}"),
            Node::GroupFile(t, g, file) => write!(f, "{t}/{GROUPS_DIR}/{g}/{}", file.name()),
            Node::Table(t) => write!(f, "{t}/{TABLE_DIR}"),
            Node::TableKey(t, key) => write!(
                f,
                "{t}/{TABLE_DIR}/{}",
                crate::table::names::key_to_name(key)
            ),
            Node::TableHeld(t, name) => write!(f, "{t}/{TABLE_DIR}/{name}"),
            Node::Maildir(t, None) => write!(f, "{t}/{MAILDIR_DIR}"),
            Node::Maildir(t, Some(g)) => write!(f, "{t}/{GROUPS_DIR}/{g}/{MAILDIR_DIR}"),
            Node::MailSub(t, g, sub) => {
                write!(f, "{}/{}", Node::Maildir(t.clone(), g.clone()), sub.name())
            }
            Node::MailHeld(t, id) => write!(f, "{t}/{MAILDIR_DIR}/(held file {id})"),
            Node::MailRecord(t, g, p, o) => write!(
                f,
                "{t}/{GROUPS_DIR}/{g}/{MAILDIR_DIR}/{}",
                crate::maildir::names::record_name(*p, *o)
            ),
        }
    }
}

impl Node {
    /// What the node's stable inode number is derived from, with its topic's identity: the
    /// kind of node and its path (and for a segment file, the real file's inode number:
    /// a file the cleaner put in its place shows other bytes).
    fn stable_key(&self) -> String {
        let debug = format!("{self:?}");
        let variant = debug.split(['(', ' ']).next().unwrap_or_default();
        match self {
            Node::Segment(.., file_ino) => format!("{variant}\0{self}\0{file_ino}"),
            Node::Lookup(.., name) if name.shows != 0 => {
                format!("{variant}\0{self}\0{}", name.shows)
            }
            _ => format!("{variant}\0{self}"),
        }
    }
}

/// Stable inode numbers lie in [2, this): the numbers of the listings' own entries (the
/// views') lie above it.
const STABLE_END: u64 = 1 << 61;

/// A topic's identity as the storage tells it (see
/// [`crate::storage::TopicStore::identity`]); None when it cannot (the topic is gone).
pub type TopicIdentity = Box<dyn Fn(&TopicName) -> Option<u64> + Send + Sync>;

struct Entry {
    node: Node,
    /// Lookups the kernel holds on this inode (entries replied minus forgets).
    lookups: u64,
    /// The size the kernel was last shown of a file it caches (see [`crate::fs::cache`]).
    size: u64,
}

struct Table {
    by_ino: HashMap<u64, Entry>,
    by_node: HashMap<Node, u64>,
    next: u64,
}

/// Gives each node an inode number while the kernel remembers it: one derived from what the
/// node shows (its topic's identity, its kind and path), so that the same name has the same
/// number after a remount, or, when another node holds that number now (a hash collision),
/// the next free number of a counter.
pub struct InodeTable {
    inner: Mutex<Table>,
    identity: std::sync::OnceLock<TopicIdentity>,
}

impl Default for InodeTable {
    fn default() -> Self {
        Self::new()
    }
}

impl InodeTable {
    pub fn new() -> InodeTable {
        let mut t = Table {
            by_ino: HashMap::new(),
            by_node: HashMap::new(),
            next: ROOT_INO + 1,
        };
        t.by_ino.insert(
            ROOT_INO,
            Entry {
                node: Node::Root,
                lookups: 0,
                size: 0,
            },
        );
        t.by_node.insert(Node::Root, ROOT_INO);
        InodeTable {
            inner: Mutex::new(t),
            identity: std::sync::OnceLock::new(),
        }
    }

    /// Where topics' identities come from (set once; without it, a topic's name and
    /// incarnation stand for it).
    pub fn set_identity(&self, identity: TopicIdentity) {
        let _ = self.identity.set(identity);
    }

    /// The number `node` has when no other node holds it.
    fn stable(&self, node: &Node) -> u64 {
        let topic = node.topic().map_or(0, |t| {
            let known = self.identity.get().and_then(|f| f(t));
            known.unwrap_or_else(|| {
                crate::util::stable_hash(&[t.as_bytes(), &t.incarnation().to_le_bytes()])
            })
        });
        let h = crate::util::stable_hash(&[&topic.to_le_bytes(), node.stable_key().as_bytes()]);
        h % (STABLE_END - ROOT_INO - 1) + ROOT_INO + 1
    }

    pub fn get(&self, ino: u64) -> Option<Node> {
        let t = self.inner.guard();
        t.by_ino.get(&ino).map(|e| e.node.clone())
    }

    /// The inode of `node`, counting one kernel lookup (call once per entry replied).
    pub fn lookup(&self, node: &Node) -> u64 {
        self.intern(node, 1)
    }

    /// The inode of `node` without counting a lookup (for readdir entries).
    pub fn peek(&self, node: &Node) -> u64 {
        self.intern(node, 0)
    }

    /// The `d_ino` a listing shows for `node`, taking no inode: its inode number when the
    /// kernel knows it, else a number of its own (stable, above any inode number). Listings
    /// of entries that come and go (segments, topics, groups) then leave nothing behind.
    pub fn listed(&self, node: &Node) -> u64 {
        use std::hash::{Hash, Hasher};
        if let Some(&ino) = self.inner.guard().by_node.get(node) {
            return ino;
        }
        // The number a lookup would give it, unless another node holds that one.
        let stable = self.stable(node);
        if !self.inner.guard().by_ino.contains_key(&stable) {
            return stable;
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        node.hash(&mut h);
        (1 << 62) | (h.finish() >> 2)
    }

    fn intern(&self, node: &Node, count: u64) -> u64 {
        if let Some(ino) = Self::known(&mut self.inner.guard(), node, count) {
            return ino;
        }
        // Asks the storage for the topic's identity: no lock of ours held.
        let stable = self.stable(node);
        let mut t = self.inner.guard();
        if let Some(ino) = Self::known(&mut t, node, count) {
            return ino;
        }
        let ino = match t.by_ino.contains_key(&stable) {
            false => stable,
            true => {
                while t.by_ino.contains_key(&t.next) {
                    t.next += 1;
                }
                t.next += 1;
                log::debug!(
                    "{node}: inode number {stable} is another name's: given {}",
                    t.next - 1
                );
                t.next - 1
            }
        };
        t.by_ino.insert(
            ino,
            Entry {
                node: node.clone(),
                lookups: count,
                size: 0,
            },
        );
        t.by_node.insert(node.clone(), ino);
        ino
    }

    /// The inode `t` gives `node`, counting `count` kernel lookups, if it has one.
    fn known(t: &mut Table, node: &Node, count: u64) -> Option<u64> {
        let ino = *t.by_node.get(node)?;
        t.by_ino.get_mut(&ino)?.lookups += count;
        Some(ino)
    }

    /// The kernel dropped `n` lookups; the inode is forgotten when none are left.
    pub fn forget(&self, ino: u64, n: u64) {
        if ino == ROOT_INO {
            return;
        }
        let mut t = self.inner.guard();
        let remove = match t.by_ino.get_mut(&ino) {
            Some(e) => {
                e.lookups = e.lookups.saturating_sub(n);
                e.lookups == 0
            }
            None => false,
        };
        if remove {
            let e = t.by_ino.remove(&ino).unwrap();
            t.by_node.remove(&e.node);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.inner.guard().by_ino.len()
    }
}

mod sizes;

#[cfg(test)]
mod tests;
