//! Small pieces every layer uses: `sync` (the one path to a lock), `read_window` (the one
//! positional read window) and `clock` (the wall clock in Kafka's milliseconds), and
//! [`stable_hash`] (a hash that is the same in every run and every build).

pub mod clock;
pub(crate) mod read_window;
pub mod sync;

/// FNV-1a (64 bits) of `parts`, each preceded by its length so that no two lists of parts
/// hash alike by being cut differently: the same in every run and every build of the daemon
/// (the standard library's hashers are not), for numbers that must outlive the process.
pub fn stable_hash(parts: &[&[u8]]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for part in parts {
        for b in (part.len() as u64).to_le_bytes().iter().chain(part.iter()) {
            h = (h ^ u64::from(*b)).wrapping_mul(PRIME);
        }
    }
    h
}
