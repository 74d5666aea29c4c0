//! The group engine without the tree: readers held in a map by id, as any caller may hold
//! them, joined to their group and rebalanced by [`Membership`] alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use super::{GroupHandle, Join, Membership, Readers};
use crate::config::BrokerConfig;
use crate::error::Error;
use crate::manager::LogManager;
use crate::render::Format;
use crate::storage::{Storage, TopicStore};
use crate::util::sync::MutexExt;

/// Readers by id, and the ids the membership asked to resume.
struct Host {
    members: Membership,
    readers: Mutex<HashMap<u64, GroupHandle>>,
    resumed: Mutex<Vec<u64>>,
}

impl Readers for Host {
    fn membership(&self) -> &Membership {
        &self.members
    }
    fn with_reader(&self, id: u64, f: &mut dyn FnMut(&mut GroupHandle)) -> bool {
        match self.readers.guard().get_mut(&id) {
            Some(g) => {
                f(g);
                true
            }
            None => false,
        }
    }
    fn topic(&self, _name: &str, _incarnation: u64) -> Option<Arc<dyn TopicStore>> {
        None
    }
    fn resume(&self, ids: &[u64]) {
        self.resumed.guard().extend_from_slice(ids);
    }
}

/// A topic `t` of 4 partitions and a host whose groups' offsets are the log's.
fn host(dir: &std::path::Path) -> (Arc<Host>, Arc<dyn TopicStore>) {
    let mut c = BrokerConfig::default();
    c.log_dirs = vec![dir.to_path_buf()];
    c.num_partitions = 4;
    let log = LogManager::open_in_test(c);
    let topic = Storage::create_topic(&*log, "t").unwrap();
    let store = log.open_groups().unwrap();
    let host = Arc::new_cyclic(|me: &Weak<Host>| Host {
        members: Membership::new(store, me.clone()),
        readers: Mutex::new(HashMap::new()),
        resumed: Mutex::new(Vec::new()),
    });
    (host, topic)
}

fn join(h: &Arc<Host>, topic: &Arc<dyn TopicStore>, id: u64, follow: bool) -> crate::Result<()> {
    let j = Join {
        topic,
        group: "g",
        follow,
        format: Format::Lines,
        id,
        internal: false,
    };
    h.members.join(&**h, &j, |g| {
        h.readers.guard().insert(id, g);
    })
}

fn partitions(h: &Host) -> Vec<(u64, Vec<u32>)> {
    let mut v: Vec<(u64, Vec<u32>)> = (h.readers.guard().iter())
        .map(|(id, g)| (*id, g.partitions()))
        .collect();
    v.sort();
    v
}

#[test]
fn follow_readers_share_a_topic_by_range_and_the_last_one_takes_all() {
    let d = tempfile::tempdir().unwrap();
    let (h, topic) = host(d.path());
    join(&h, &topic, 1, true).unwrap();
    assert_eq!(partitions(&h), vec![(1, vec![0, 1, 2, 3])]);
    join(&h, &topic, 2, true).unwrap();
    assert_eq!(partitions(&h), vec![(1, vec![0, 1]), (2, vec![2, 3])]);
    // The reader already there was given other partitions: its waiting reads go on.
    assert_eq!(*h.resumed.guard(), vec![1]);
    assert!(h.members.busy("t", topic.incarnation(), "g"));
    // `records` reads alone: refused beside follow readers.
    assert!(matches!(
        join(&h, &topic, 3, false),
        Err(Error::GroupBusy(_))
    ));
    h.readers.guard().remove(&1);
    h.members.leave(&*h, &topic, "g", 1, None);
    assert_eq!(partitions(&h), vec![(2, vec![0, 1, 2, 3])]);
    h.readers.guard().remove(&2);
    h.members.leave(&*h, &topic, "g", 2, None);
    assert!(!h.members.busy("t", topic.incarnation(), "g"));
    // Without readers, `records` may read the group.
    join(&h, &topic, 4, false).unwrap();
    assert_eq!(partitions(&h), vec![(4, vec![0, 1, 2, 3])]);
}
