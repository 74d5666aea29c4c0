//! The cleaner's offset map (Kafka's `SkimpyOffsetMap`): key digest → the latest offset of that
//! key in the dirty section. Open addressing in one flat buffer of 24-byte slots (a 16-byte
//! digest of the key and an 8-byte offset); `log.cleaner.dedupe.buffer.size` fixes how many
//! slots it may have, hence how many keys a round maps (90 % of them), whatever the keys are.
//! Kafka allocates all slots at once; here the table starts small and doubles as keys come,
//! up to that size, so a round over few keys touches little memory (the same keys fit, the
//! same round ends). Kafka's digest is MD5; here it is SipHash-1-3 and FNV-1a of the key, 8
//! bytes each (the digest never leaves the process).

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

/// Bytes per slot: digest (16) + offset (8), as Kafka's map with MD5.
pub const BYTES_PER_ENTRY: usize = 24;

/// The fill at which a round stops adding keys (`log.cleaner.io.buffer.load.factor`).
pub const LOAD_FACTOR: f64 = 0.9;

/// Slots of a fresh table; it doubles once half full, until it has every slot allowed.
const INITIAL_SLOTS: usize = 1 << 12;

pub struct OffsetMap {
    /// `cap` slots; an all-zero offset word marks an empty one (offsets are stored + 1).
    buf: Vec<u8>,
    cap: usize,
    /// The slots `log.cleaner.dedupe.buffer.size` allows.
    slots: usize,
    entries: usize,
    /// The last offset this round mapped (every offset <= it is in the map's view).
    latest_offset: i64,
    lookups: u64,
    probes: u64,
}

/// 64-bit FNV-1a: the digest's second half (its first is SipHash-1-3; two unrelated hashes
/// collide together about as rarely as one 128-bit hash).
fn fnv1a(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn digest(key: &[u8]) -> [u8; 16] {
    let a = BuildHasherDefault::<DefaultHasher>::default().hash_one(key);
    let b = fnv1a(key);
    let mut d = [0u8; 16];
    d[..8].copy_from_slice(&a.to_be_bytes());
    d[8..].copy_from_slice(&b.to_be_bytes());
    d
}

fn home(d: &[u8], cap: usize) -> usize {
    (crate::record::be::u64_at(d, 0) % cap as u64) as usize
}

impl OffsetMap {
    /// A map of at most `memory` bytes (at least one slot).
    pub fn new(memory: usize) -> OffsetMap {
        let slots = (memory / BYTES_PER_ENTRY).max(1);
        let cap = slots.min(INITIAL_SLOTS);
        OffsetMap {
            buf: vec![0u8; cap * BYTES_PER_ENTRY],
            cap,
            slots,
            entries: 0,
            latest_offset: -1,
            lookups: 0,
            probes: 0,
        }
    }

    /// The slots the map may have (Kafka's `slots`).
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// How many keys a round may put before it stops (Kafka's `maxDesiredMapSize`).
    pub fn max_entries(&self) -> usize {
        ((self.slots as f64 * LOAD_FACTOR) as usize).max(1)
    }

    pub fn size(&self) -> usize {
        self.entries
    }

    pub fn latest_offset(&self) -> i64 {
        self.latest_offset
    }

    /// Kafka's `updateLatestOffset`: set, not raised.
    pub fn update_latest_offset(&mut self, offset: i64) {
        self.latest_offset = offset;
    }

    #[cfg(any(test, feature = "internals"))]
    /// Average extra probes per lookup so far (diagnostics).
    pub fn collision_rate(&self) -> f64 {
        if self.lookups == 0 {
            0.0
        } else {
            (self.probes - self.lookups) as f64 / self.lookups as f64
        }
    }

    /// Empties the map for the next round (back to a small table).
    pub fn clear(&mut self) {
        if self.entries > 0 || self.cap > INITIAL_SLOTS.min(self.slots) {
            self.cap = self.slots.min(INITIAL_SLOTS);
            self.buf = Vec::new();
            self.buf = vec![0u8; self.cap * BYTES_PER_ENTRY];
        }
        self.entries = 0;
        self.latest_offset = -1;
        self.lookups = 0;
        self.probes = 0;
    }

    fn slot(&self, i: usize) -> (&[u8], u64) {
        let s = &self.buf[i * BYTES_PER_ENTRY..(i + 1) * BYTES_PER_ENTRY];
        (&s[..16], crate::record::be::u64_at(s, 16))
    }

    /// The slot holding `d`, or the empty slot where it would go (None: every slot holds
    /// another key).
    fn find(&mut self, d: &[u8; 16]) -> Option<usize> {
        let start = home(d, self.cap);
        let mut i = start;
        self.lookups += 1;
        loop {
            self.probes += 1;
            let (sd, stored) = self.slot(i);
            if stored == 0 || sd == d {
                return Some(i);
            }
            i += 1;
            if i == self.cap {
                i = 0;
            }
            if i == start {
                return None;
            }
        }
    }

    /// Doubles the table (up to the allowed slots), placing every entry again.
    fn grow(&mut self) {
        let cap = (self.cap * 2).min(self.slots);
        let mut buf = vec![0u8; cap * BYTES_PER_ENTRY];
        for e in self.buf.chunks_exact(BYTES_PER_ENTRY) {
            if e[16..24] == [0u8; 8] {
                continue;
            }
            let mut i = home(&e[..16], cap);
            while buf[i * BYTES_PER_ENTRY + 16..(i + 1) * BYTES_PER_ENTRY] != [0u8; 8] {
                i = (i + 1) % cap;
            }
            buf[i * BYTES_PER_ENTRY..(i + 1) * BYTES_PER_ENTRY].copy_from_slice(e);
        }
        self.buf = buf;
        self.cap = cap;
    }

    /// Records `offset` as the latest of `key`. The caller keeps `len() < max_entries()`.
    pub fn put(&mut self, key: &[u8], offset: i64) {
        if self.cap < self.slots && self.entries * 2 >= self.cap {
            self.grow();
        }
        let d = digest(key);
        let i = self
            .find(&d)
            .expect("the cleaner never fills the offset map");
        let s = &mut self.buf[i * BYTES_PER_ENTRY..(i + 1) * BYTES_PER_ENTRY];
        if crate::record::be::u64_at(s, 16) == 0 {
            self.entries += 1;
            s[..16].copy_from_slice(&d);
        }
        s[16..24].copy_from_slice(&((offset as u64).wrapping_add(1)).to_be_bytes());
        self.latest_offset = offset;
    }

    /// The latest offset of `key` in the map, or -1 when the key is not in it.
    pub fn get(&mut self, key: &[u8]) -> i64 {
        let d = digest(key);
        match self.find(&d).map(|i| self.slot(i).1) {
            None | Some(0) => -1,
            Some(stored) => stored.wrapping_sub(1) as i64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_offsets_win_and_absent_keys_are_minus_one() {
        let mut m = OffsetMap::new(24 * 100);
        assert_eq!(m.slots(), 100);
        assert_eq!(m.max_entries(), 90);
        for i in 0..50i64 {
            m.put(format!("k{}", i % 10).as_bytes(), i);
        }
        assert_eq!(m.size(), 10);
        assert_eq!(m.get(b"k3"), 43);
        assert_eq!(m.get(b"k0"), 40);
        assert_eq!(m.get(b"nope"), -1);
        assert_eq!(m.latest_offset(), 49);
        m.put(b"", 0);
        assert_eq!(m.get(b""), 0);
        m.clear();
        assert_eq!(m.get(b"k3"), -1);
        assert_eq!(m.size(), 0);
        assert_eq!(m.latest_offset(), -1);
    }

    #[test]
    fn grows_up_to_its_slots_and_keeps_every_key() {
        let mut m = OffsetMap::new(24 * 100_000);
        assert_eq!(m.slots(), 100_000);
        for i in 0..90_000i64 {
            m.put(&i.to_be_bytes(), i);
        }
        assert_eq!(m.size(), 90_000);
        assert_eq!(m.cap, 100_000);
        for i in (0..90_000i64).step_by(7) {
            assert_eq!(m.get(&i.to_be_bytes()), i);
        }
        assert_eq!(m.get(b"absent"), -1);
        m.clear();
        assert_eq!((m.size(), m.cap), (0, INITIAL_SLOTS));
        assert_eq!(m.get(&5i64.to_be_bytes()), -1);
    }

    #[test]
    fn fills_to_every_slot_with_wraparound() {
        let mut m = OffsetMap::new(24 * 7);
        for i in 0..7i64 {
            m.put(&i.to_be_bytes(), i * 10);
        }
        for i in 0..7i64 {
            assert_eq!(m.get(&i.to_be_bytes()), i * 10);
        }
        assert_eq!(m.get(b"absent"), -1);
    }
}
