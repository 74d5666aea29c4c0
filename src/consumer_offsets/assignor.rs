//! Kafka's range assignor (`RangeAssignor`, `partition.assignment.strategy=range`) for the
//! members of one group reading one topic.
//!
//! Members are sorted by member id (Java's `String.compareTo`: UTF-16 code units); with P
//! partitions and C members each takes a contiguous range of P / C partitions, and the first
//! P % C members one more. With more members than partitions the last ones get nothing.

use std::collections::BTreeMap;

/// Java's `String.compareTo`: lexicographic over UTF-16 code units (differs from Rust's
/// byte order only for characters outside the BMP against U+E000..U+FFFF).
pub fn java_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Assigns partitions `0..partitions` to `members`: member id -> its partitions, ascending.
/// Every member appears in the result, those without partitions with an empty list.
/// Duplicate member ids count once.
pub fn range_assign(members: &[&str], partitions: u32) -> BTreeMap<String, Vec<u32>> {
    let mut sorted: Vec<&str> = members.to_vec();
    sorted.sort_by(|a, b| java_cmp(a, b));
    sorted.dedup();
    let mut out = BTreeMap::new();
    if sorted.is_empty() {
        return out;
    }
    let c = sorted.len() as u32;
    let (per, extra) = (partitions / c, partitions % c);
    for (i, m) in sorted.iter().enumerate() {
        let i = i as u32;
        let start = i * per + i.min(extra);
        let len = per + u32::from(i < extra);
        out.insert(m.to_string(), (start..start + len).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(a: &BTreeMap<String, Vec<u32>>, m: &str) -> Vec<u32> {
        a[m].clone()
    }

    #[test]
    fn seven_partitions_three_members() {
        // Kafka's own example: m0 -> 0,1,2; m1 -> 3,4; m2 -> 5,6 (given in any order).
        let a = range_assign(&["m2", "m0", "m1"], 7);
        assert_eq!(parts(&a, "m0"), vec![0, 1, 2]);
        assert_eq!(parts(&a, "m1"), vec![3, 4]);
        assert_eq!(parts(&a, "m2"), vec![5, 6]);
    }

    #[test]
    fn even_split() {
        let a = range_assign(&["b", "a"], 4);
        assert_eq!(parts(&a, "a"), vec![0, 1]);
        assert_eq!(parts(&a, "b"), vec![2, 3]);
    }

    #[test]
    fn more_members_than_partitions() {
        let a = range_assign(&["d", "c", "b", "a"], 2);
        assert_eq!(parts(&a, "a"), vec![0]);
        assert_eq!(parts(&a, "b"), vec![1]);
        assert!(parts(&a, "c").is_empty());
        assert!(parts(&a, "d").is_empty());
        assert_eq!(a.len(), 4);
    }

    #[test]
    fn one_member_takes_all_and_none_gives_nothing() {
        assert_eq!(parts(&range_assign(&["x"], 3), "x"), vec![0, 1, 2]);
        assert!(range_assign(&[], 3).is_empty());
        assert!(parts(&range_assign(&["x", "y"], 0), "x").is_empty());
    }

    #[test]
    fn every_partition_exactly_once() {
        for p in 0..12u32 {
            for c in 1..8usize {
                let ids: Vec<String> = (0..c).map(|i| format!("member-{i:02}")).collect();
                let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                let a = range_assign(&refs, p);
                let mut all: Vec<u32> = a.values().flatten().copied().collect();
                all.sort();
                assert_eq!(all, (0..p).collect::<Vec<_>>(), "p={p} c={c}");
                let sizes: Vec<usize> = ids.iter().map(|m| a[m].len()).collect();
                // Sorted members: sizes never grow, and differ by at most one.
                assert!(sizes.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1));
            }
        }
    }

    #[test]
    fn order_is_java_utf16_order() {
        // U+FF5E sorts after U+1F600 in UTF-8 byte order but before it in UTF-16 (the
        // surrogate 0xD83D is below 0xFF5E).
        let a = range_assign(&["\u{ff5e}", "\u{1f600}"], 2);
        assert_eq!(parts(&a, "\u{1f600}"), vec![0]);
        assert_eq!(parts(&a, "\u{ff5e}"), vec![1]);
        assert!("\u{ff5e}" < "\u{1f600}");
    }

    #[test]
    fn duplicates_count_once() {
        let a = range_assign(&["a", "a", "b"], 3);
        assert_eq!(parts(&a, "a"), vec![0, 1]);
        assert_eq!(parts(&a, "b"), vec![2]);
    }
}
