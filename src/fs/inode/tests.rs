//! The node names and the inode table.

use super::*;

#[test]
fn group_names_are_one_per_group_id() {
    for (id, name) in [
        ("g", "g"),
        ("sp ace", "sp ace"),
        ("a/b", "a%2Fb"),
        ("%x", "%25x"),
        ("50%", "50%25"),
        ("nul\0", "nul%00"),
        ("", "%"),
        (".", "%2E"),
        ("..", "%2E%2E"),
        ("...", "..."),
    ] {
        assert_eq!(group_file_name(id), name);
        assert_eq!(group_id(name).as_deref(), Some(id));
    }
    for not_a_name in ["%2e", "%41", "a%2", "a%zz", "%FF", "%%"] {
        assert_eq!(group_id(not_a_name), None, "{not_a_name}");
    }
}

#[test]
fn lookup_names() {
    use crate::addr::{OffsetForm, Start, TimeForm};
    let start = |by, name| parse_lookup(by, name).unwrap().addr.start;
    assert_eq!(
        start(LookupBy::Offset, "15"),
        Start::Offset(OffsetForm::At(15))
    );
    assert_eq!(
        start(LookupBy::Offset, "-1"),
        Start::Offset(OffsetForm::Last(1))
    );
    assert_eq!(
        start(LookupBy::Time, "9223372036854775807"),
        Start::Time(TimeForm::At(i64::MAX))
    );
    let l = parse_lookup(LookupBy::Offset, "earliest..20.jsonl").unwrap();
    assert_eq!(l.format, Format::Jsonl);
    assert_eq!(l.to_string(), "earliest..20.jsonl");
    for bad in ["", "+1", "1a", "0x10", " 1", "9223372036854775808", "1.5"] {
        assert!(parse_lookup(LookupBy::Offset, bad).is_none(), "{bad:?}");
    }
}

#[test]
fn partition_names_are_canonical() {
    assert_eq!(parse_partition("0"), Some(0));
    assert_eq!(parse_partition("12"), Some(12));
    assert_eq!(parse_partition("012"), None);
    assert_eq!(parse_partition("4294967296"), None);
    assert_eq!(parse_partition("x"), None);
}

#[test]
fn inodes_are_stable_and_forgotten() {
    let t = InodeTable::new();
    let topic = TopicName::new("orders", 1);
    let n = Node::Partition(topic.clone(), 3);
    let a = t.lookup(&n);
    assert_eq!(t.lookup(&n), a);
    assert_eq!(t.get(a), Some(n.clone()));
    t.forget(a, 1);
    assert_eq!(t.get(a), Some(n.clone()));
    t.forget(a, 1);
    assert_eq!(t.get(a), None);
    assert_eq!(t.len(), 1);
    // Looked up again, the same name has the same number.
    let b = t.lookup(&n);
    assert_eq!(a, b);
    // The same name in another incarnation of the topic is another inode.
    let again = Node::Partition(TopicName::new("orders", 2), 3);
    assert_ne!(t.lookup(&again), b);
    t.forget(ROOT_INO, 100);
    assert_eq!(t.get(ROOT_INO), Some(Node::Root));
}

#[test]
fn a_number_another_name_holds_is_not_given_twice() {
    let t = InodeTable::new();
    let n = Node::Partition(TopicName::new("orders", 1), 3);
    // Another node holds the number `n` would get (a collision of the hash).
    let stable = t.stable(&n);
    let other = Node::Partition(TopicName::new("other", 1), 0);
    t.inner.guard().by_ino.insert(
        stable,
        Entry {
            node: other.clone(),
            lookups: 1,
            size: 0,
        },
    );
    t.inner.guard().by_node.insert(other.clone(), stable);
    assert_ne!(t.listed(&n), stable);
    let ino = t.lookup(&n);
    assert_ne!(ino, stable);
    assert_eq!(t.get(ino), Some(n));
    assert_eq!(t.get(stable), Some(other));
}

#[test]
fn modes_follow_the_spec() {
    let t = TopicName::new("t", 1);
    // Append files: written, and read as empty (mode 0600).
    assert_eq!(Node::TopicFile(t.clone(), TopicFile::Append).perm(), 0o600);
    assert_eq!(
        Node::PartitionFile(t.clone(), 0, PartitionFile::AppendJsonl).perm(),
        0o600
    );
    assert!(!Node::PartitionFile(t.clone(), 0, PartitionFile::LogEndOffset).writable());
    assert!(Node::TopicFile(t.clone(), TopicFile::Partitions).writable());
    assert_eq!(
        Node::Lookup(t.clone(), 0, parse_lookup(LookupBy::Time, "5").unwrap()).parent(),
        Node::PartitionDir(t, 0, PartitionDir::ByTime)
    );
}
