//! Any bytes: the batch decoder and record iterator return errors, never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use topicfs::record::BatchView;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    let mut scratch = Vec::new();
    while let Ok(v) = BatchView::new(rest) {
        let _ = v.ensure_valid();
        if let Ok(it) = v.records(&mut scratch) {
            for r in it.take(10_000) {
                if let Ok(r) = r {
                    let _ = r.headers();
                }
            }
        }
        rest = &rest[v.bytes.len()..];
    }
});
