use proptest::prelude::*;

use super::*;
use crate::record::{BatchBuilder, BatchOptions, RecordInput};

/// A record of any shape the fast lines loop must take or leave to the general path:
/// values around the one-, two- and three-byte varint lengths, null values, keys,
/// headers, timestamps far from the batch's first.
fn record() -> impl Strategy<Value = (Option<Vec<u8>>, Option<Vec<u8>>, bool, i64)> {
    let len = prop_oneof![0usize..4, 55usize..70, 8180usize..8200, 0usize..300];
    (
        prop::option::weighted(0.1, prop::collection::vec(any::<u8>(), 0..4)),
        prop::option::weighted(0.9, len.prop_map(|n| vec![b'v'; n])),
        prop::bool::weighted(0.1),
        prop_oneof![Just(0i64), -100i64..100, -10_000_000i64..10_000_000],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// lines_into writes exactly what the general decoder gives: each value in range
    /// and `\n`, and moves `from` past the last one.
    #[test]
    fn lines_into_matches_the_general_decoder(
        recs in prop::collection::vec(record(), 1..80),
        filler in prop_oneof![Just(0usize), 8200usize..8400],
        from_pick in any::<prop::sample::Index>(),
        to_pick in any::<prop::sample::Index>(),
        stop_pick in any::<prop::sample::Index>(),
    ) {
        let header: [(&[u8], Option<&[u8]>); 1] = [(b"h", Some(b"x"))];
        let mut inputs: Vec<RecordInput> = recs
            .iter()
            .map(|(k, v, h, ts)| RecordInput {
                key: k.as_deref(),
                value: v.as_deref(),
                headers: if *h { &header } else { &[] },
                timestamp: 1_700_000_000_000 + ts,
            })
            .collect();
        // Offset deltas past 8,191 (three varint bytes) after the filler.
        inputs.extend((0..filler).map(|_| RecordInput {
            value: Some(b"f"),
            timestamp: 1_700_000_000_000,
            ..Default::default()
        }));
        let mut b = BatchBuilder::new();
        b.begin(1000, BatchOptions::default());
        b.add_all(&inputs);
        let bytes = b.finish().unwrap().to_vec();
        let view = BatchView::new(&bytes).unwrap();
        let n = inputs.len() as i64;
        let from0 = 1000 + from_pick.index(n as usize + 1) as i64;
        let to = 1000 + to_pick.index(n as usize + 2) as i64;
        let mut want = b"prefix".to_vec();
        let mut want_from = from0;
        let mut scratch = Vec::new();
        view.records(&mut scratch).unwrap().for_each_record(|r| {
            if r.offset >= from0 && r.offset < to {
                want.extend_from_slice(r.value.unwrap_or_default());
                want.push(b'\n');
                want_from = r.offset + 1;
            }
        }).unwrap();
        let mut got = b"prefix".to_vec();
        let mut from = from0;
        view.records(&mut scratch).unwrap().lines_into(&mut from, to, &mut got).unwrap();
        prop_assert!(got == want, "{} bytes, want {}", got.len(), want.len());
        prop_assert_eq!(from, want_from);
        // Stopped once `stop` bytes are out, then the batch read again from its start (as a
        // lookup's first read and the read after it do): the same bytes, in pieces.
        let mut got = b"prefix".to_vec();
        let mut from = from0;
        let mut pieces = 0;
        loop {
            let stop = got.len() + 1 + stop_pick.index(300);
            let whole = view.records(&mut scratch).unwrap().lines_until(&mut from, to, &mut got, stop).unwrap();
            pieces += 1;
            if whole {
                break;
            }
            prop_assert!(got.len() >= stop, "stopped at {} bytes, before {stop}", got.len());
            prop_assert!(pieces <= inputs.len(), "no progress");
        }
        prop_assert!(got == want, "{} bytes in {pieces} pieces, want {}", got.len(), want.len());
        prop_assert_eq!(from, want_from);
    }
}
