//! Splitting written bytes into lines, one record each (the `append` files' format): the
//! `\n`s are found 64 bytes at a time (a byte-by-byte split was a quarter of the daemon's time
//! in bulk appends, a `memchr` call per line a tenth). A line is a record with the line (without
//! its `\n`) as value, no key and no headers.

use super::RecordInput;

/// The `\n` positions of one 64-byte block as bits: four 16-byte compares (SSE2, part of
/// every x86-64 CPU).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn newline_bits(block: &[u8; 64]) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    let mut bits = 0u64;
    for (i, part) in block.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is part of every x86-64 CPU; `part` is 16 readable bytes and the load
        // has no alignment requirement.
        let lane = unsafe {
            let v = _mm_loadu_si128(part.as_ptr().cast::<__m128i>());
            _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'\n' as i8)))
        };
        bits |= (lane as u16 as u64) << (16 * i);
    }
    bits
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn newline_bits(block: &[u8; 64]) -> u64 {
    let mut bits = 0u64;
    for (i, &b) in block.iter().enumerate() {
        bits |= ((b == b'\n') as u64) << i;
    }
    bits
}

/// Calls `f` with the end of every line of `data`, in order: the position of each `\n`, and
/// `data.len()` for an unterminated last line. `f` has one call site (the last block is padded
/// with zeros), so the compiler inlines it.
#[inline(always)]
pub(crate) fn for_each_line_end(data: &[u8], mut f: impl FnMut(usize)) {
    let unterminated = data.last().is_some_and(|&b| b != b'\n');
    let end = data.len() + usize::from(unterminated);
    let mut base = 0;
    while base < end {
        let mut bits = match data.get(base..base + 64) {
            Some(block) => newline_bits(block.try_into().expect("64-byte block")),
            None => {
                let mut tail = [0u8; 64];
                let n = data.len() - base;
                tail[..n].copy_from_slice(&data[base..]);
                newline_bits(&tail) | (u64::from(unterminated) << n)
            }
        };
        while bits != 0 {
            f(base + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
        base += 64;
    }
}

/// How many records [`for_each_line`] makes of `data`.
pub(crate) fn count_lines(data: &[u8]) -> usize {
    // memchr's count (32 bytes a step where the CPU has AVX2) needs no bit positions.
    memchr::memchr_iter(b'\n', data).count() + usize::from(data.last().is_some_and(|&b| b != b'\n'))
}

/// Calls `f` with every line of `data` without its `\n`; an unterminated last line counts.
pub(crate) fn for_each_line<'a>(data: &'a [u8], mut f: impl FnMut(&'a [u8])) {
    let mut start = 0;
    for_each_line_end(data, |end| {
        f(&data[start..end]);
        start = end + 1;
    });
}

/// The record of one line (without its `\n`).
pub fn line_record(line: &[u8], timestamp: i64) -> RecordInput<'_> {
    RecordInput {
        key: None,
        value: Some(line),
        headers: &[],
        timestamp,
    }
}

/// The records of the lines of each of `parts`, in order, all with `timestamp`.
pub fn line_records<'a>(parts: &[&'a [u8]], timestamp: i64) -> Vec<RecordInput<'a>> {
    let mut records = Vec::with_capacity(parts.iter().map(|p| count_lines(p)).sum());
    for part in parts {
        for_each_line(part, |line| records.push(line_record(line, timestamp)));
    }
    records
}

#[cfg(test)]
mod tests {
    use super::{count_lines, for_each_line};

    #[test]
    fn block_split_matches_a_byte_split_around_every_block_boundary() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for len in (0..300).chain([1000, 4096, 131_072]) {
            for density in [2u64, 7, 100] {
                let data: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        if x.is_multiple_of(density) {
                            b'\n'
                        } else {
                            b'a' + (x % 26) as u8
                        }
                    })
                    .collect();
                let mut want: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
                if want.last().is_some_and(|l| l.is_empty()) {
                    want.pop();
                }
                let mut got = Vec::new();
                for_each_line(&data, |l| got.push(l));
                assert_eq!(got, want, "len {len}, density {density}");
                assert_eq!(count_lines(&data), want.len(), "len {len}");
            }
        }
    }
}
