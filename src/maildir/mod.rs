//! A topic as a Maildir (docs/contract.md, "Files in, files out"): the rules of the tree's
//! `maildir/` directories, without files or FUSE. `names.rs`: what a delivered name's key is,
//! and the names of a group's records; `held.rs`: a file of `tmp/` before it becomes a
//! record; `acks.rs`: a group's acknowledgements in one partition and their form in the
//! OffsetCommit metadata; `group.rs`: a group's maildir (the window of records shown in
//! `new/`, the taken ones, acknowledgements committed through the storage's `GroupStore`).

pub mod acks;
pub mod delivery;
pub mod group;
pub mod held;
pub mod names;

/// How many of a group's records `new/` shows at most, unless the mount says otherwise
/// (`-o maildir.window=N`).
pub const DEFAULT_WINDOW: usize = 1000;
