//! Big-endian fields, the byte order of every Kafka format topicfs reads (batch headers, index
//! entries, `.txnindex` entries, `__consumer_offsets` records, KRaft control records, the
//! files dump-log prints): a field at a position of a slice the caller has checked, or fields
//! taken in turn by a [`Cursor`] that says when the bytes run out.

macro_rules! field_at {
    ($($name:ident: $t:ty),*) => {$(
        /// The field at byte `at` of `b` (which holds it).
        #[inline]
        pub fn $name(b: &[u8], at: usize) -> $t {
            <$t>::from_be_bytes(b[at..at + size_of::<$t>()].try_into().unwrap())
        }
    )*};
}

field_at!(i16_at: i16, i32_at: i32, u32_at: u32, i64_at: i64, u64_at: u64);
#[cfg(test)]
field_at!(u16_at: u16);

/// Fields read one after the other; each is None once the bytes run out (nothing is taken).
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

macro_rules! field {
    ($($name:ident: $t:ty),*) => {$(
        #[inline]
        pub fn $name(&mut self) -> Option<$t> {
            self.take(size_of::<$t>())
                .map(|b| <$t>::from_be_bytes(b.try_into().unwrap()))
        }
    )*};
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Cursor<'a> {
        Cursor { buf, pos: 0 }
    }

    /// The bytes taken so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }

    field!(i16: i16, u16: u16, i32: i32, i64: i64);

    /// An unsigned varint of at most 5 bytes (the protocol's): Err with the value so far when
    /// a fifth byte still has its high bit set.
    pub fn uvarint(&mut self) -> Option<Result<u32, u32>> {
        let mut v: u32 = 0;
        for i in 0..5 {
            let b = self.take(1)?[0];
            v |= ((b & 0x7f) as u32) << (7 * i);
            if b & 0x80 == 0 {
                return Some(Ok(v));
            }
        }
        Some(Err(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_at_positions_and_in_turn() {
        let b = [0x80, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xfe];
        assert_eq!(i64_at(&b, 0), i64::MIN + 1);
        assert_eq!(u64_at(&b, 0), (1 << 63) + 1);
        assert_eq!(i16_at(&b, 8), -2);
        assert_eq!(u16_at(&b, 8), 0xfffe);
        assert_eq!(i32_at(&b, 4), 1);
        assert_eq!(u32_at(&b, 6), 0x1_fffe);
        let mut c = Cursor::new(&b);
        assert_eq!(c.i32(), Some(i32::MIN));
        assert_eq!(c.i32(), Some(1));
        assert_eq!(c.i32(), None, "two bytes left");
        assert_eq!((c.pos(), c.remaining()), (8, 2));
        assert_eq!(c.i16(), Some(-2));
        assert_eq!(c.take(1), None);
    }

    #[test]
    fn unsigned_varints() {
        assert_eq!(Cursor::new(&[0x96, 0x01]).uvarint(), Some(Ok(150)));
        assert_eq!(Cursor::new(&[0x96]).uvarint(), None);
        assert_eq!(
            Cursor::new(&[0xff, 0xff, 0xff, 0xff, 0x8f]).uvarint(),
            Some(Err(u32::MAX))
        );
    }
}
