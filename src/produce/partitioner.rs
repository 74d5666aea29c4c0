//! Kafka's default partitioner for keyed records: `toPositive(murmur2(key)) % numPartitions`,
//! bit for bit as `org.apache.kafka.common.utils.Utils.murmur2` and `Utils.toPositive`.

/// Kafka's 32-bit murmur2 hash (`Utils.murmur2`), seed `0x9747b28c`.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;

    let length = data.len();
    // Java's `seed ^ length` on ints: the length wraps to 32 bits like Java's int.
    let mut h: u32 = SEED ^ (length as u32);

    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }

    let tail = chunks.remainder();
    // Java's switch with fall-through: case 3, case 2, case 1 (then h *= m).
    if tail.len() >= 3 {
        h ^= (tail[2] as u32) << 16;
    }
    if tail.len() >= 2 {
        h ^= (tail[1] as u32) << 8;
    }
    if !tail.is_empty() {
        h ^= tail[0] as u32;
        h = h.wrapping_mul(M);
    }

    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// Kafka's `Utils.toPositive`: clears the sign bit (not `abs`, so `i32::MIN` maps to 0).
pub fn to_positive(n: i32) -> i32 {
    n & 0x7fff_ffff
}

/// The partition Kafka's producer sends a record with this key to.
pub fn partition_for_key(key: &[u8], num_partitions: u32) -> u32 {
    assert!(num_partitions > 0, "a topic has at least one partition");
    (to_positive(murmur2(key)) as u32) % num_partitions
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectors of Kafka's `UtilsTest.testMurmur2`.
    #[test]
    fn kafka_murmur2_vectors() {
        let cases: &[(&[u8], i32)] = &[
            (b"21", -973932308),
            (b"foobar", -790332482),
            (b"a-little-bit-long-string", -985981536),
            (b"a-little-bit-longer-string", -1486304829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58897971,
            ),
            (b"abc", 479470107), // Kafka: new byte[] {'a', 'b', 'c'}
        ];
        for (key, expected) in cases {
            assert_eq!(
                murmur2(key),
                *expected,
                "murmur2({:?})",
                String::from_utf8_lossy(key)
            );
        }
    }

    #[test]
    fn to_positive_clears_sign_bit() {
        assert_eq!(to_positive(-1), i32::MAX);
        assert_eq!(to_positive(i32::MIN), 0);
        assert_eq!(to_positive(0), 0);
        assert_eq!(to_positive(42), 42);
        assert_eq!(to_positive(-973932308), -973932308 & 0x7fffffff);
    }

    #[test]
    fn partition_is_positive_hash_modulo_count() {
        // toPositive(-973932308) = 1173551340.
        assert_eq!(to_positive(murmur2(b"21")), 1173551340);
        assert_eq!(partition_for_key(b"21", 1), 0);
        assert_eq!(partition_for_key(b"21", 3), 1173551340 % 3);
        assert_eq!(partition_for_key(b"abc", 7), 479470107 % 7);
        for n in 1..20 {
            assert!(partition_for_key(b"foobar", n) < n);
        }
    }

    #[test]
    fn empty_key_hashes_like_java() {
        // Java: h = seed ^ 0, no body, no tail, then the final mix.
        let mut h: u32 = 0x9747_b28c;
        h ^= h >> 13;
        h = h.wrapping_mul(0x5bd1_e995);
        h ^= h >> 15;
        assert_eq!(murmur2(b""), h as i32);
    }
}
