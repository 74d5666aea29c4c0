//! A consumer's records taken from librdkafka a batch at a time (`rd_kafka_consume_batch_queue`)
//! instead of a poll each: rdkafka's `poll` reads the clock three times a record (its own
//! deadline, librdkafka's poll-interval bookkeeping before and after) and wraps each record in
//! an event; on a 256 MiB remote read of 100-byte records the clock alone was a sixth of the
//! daemon's time.

use std::ffi::CStr;
use std::ptr::NonNull;
use std::time::Duration;

use rdkafka::Timestamp;
use rdkafka::bindings as rd;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::types::RDKafkaErrorCode;

use crate::record::varint::put_varint;

/// The queue an assigned consumer's records arrive on (a reference of our own, released when
/// dropped: before the consumer).
pub(super) struct Batches(NonNull<rd::rd_kafka_queue_t>);

// SAFETY: librdkafka's queues are thread-safe; the handle is used by one stream at a time.
unsafe impl Send for Batches {}

impl Drop for Batches {
    fn drop(&mut self) {
        // SAFETY: our own reference, from rd_kafka_queue_get_consumer, released once.
        unsafe { rd::rd_kafka_queue_destroy(self.0.as_ptr()) }
    }
}

/// What a batch holds, in order.
pub(super) enum Taken<'a> {
    Record(Msg<'a>),
    /// The partition's end (`enable.partition.eof`).
    Eof,
    Error(RDKafkaErrorCode),
}

/// A record of a batch.
pub(super) struct Msg<'a>(&'a rd::rd_kafka_message_t);

impl Batches {
    /// The queue of `consumer` (None when librdkafka has none for it).
    pub(super) fn of(consumer: &BaseConsumer) -> Option<Batches> {
        // SAFETY: the client pointer is live as long as `consumer`, which outlives the
        // reference taken here (the stream drops this first).
        NonNull::new(unsafe { rd::rd_kafka_queue_get_consumer(consumer.client().native_ptr()) })
            .map(Batches)
    }

    /// Takes up to `max` queued records (none waited for), or, when none is queued, waits up
    /// to `wait` for one; hands each to `f` in order until it returns false (the rest are
    /// dropped). Returns how many were taken from the queue.
    pub(super) fn take(
        &self,
        max: usize,
        wait: Duration,
        f: &mut dyn FnMut(Taken<'_>) -> bool,
    ) -> usize {
        let mut taken = self.take_now(max, 0, f);
        if taken.0 == 0 && !wait.is_zero() {
            // A batch call waits until its whole size arrived: wait for one record only.
            let ms = wait.as_millis().clamp(1, i32::MAX as u128) as i32;
            taken = self.take_now(1, ms, f);
            if taken.0 == 1 && taken.1 {
                taken.0 += self.take_now(max - 1, 0, f).0;
            }
        }
        taken.0
    }

    /// One batch call: (records taken, whether `f` wants more).
    fn take_now(
        &self,
        max: usize,
        timeout_ms: i32,
        f: &mut dyn FnMut(Taken<'_>) -> bool,
    ) -> (usize, bool) {
        let mut msgs: Vec<*mut rd::rd_kafka_message_t> = vec![std::ptr::null_mut(); max];
        // SAFETY: `msgs` has room for `max` pointers; the queue is live.
        let n = unsafe {
            rd::rd_kafka_consume_batch_queue(self.0.as_ptr(), timeout_ms, msgs.as_mut_ptr(), max)
        };
        let n = usize::try_from(n).unwrap_or(0).min(max);
        let mut more = true;
        for &m in &msgs[..n] {
            // SAFETY: librdkafka handed over `n` live messages, each ours to destroy.
            let msg = unsafe { &*m };
            if more {
                more = f(match msg.err {
                    rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR => Taken::Record(Msg(msg)),
                    rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR__PARTITION_EOF => Taken::Eof,
                    e => Taken::Error(e.into()),
                });
            }
            // SAFETY: destroyed once, after its last use.
            unsafe { rd::rd_kafka_message_destroy(m) };
        }
        (n, more)
    }
}

/// `len` bytes at `p`, None for a null pointer.
///
/// # Safety
/// `p` points at `len` bytes that live as long as `'a`, or is null.
unsafe fn bytes<'a>(p: *const std::ffi::c_void, len: usize) -> Option<&'a [u8]> {
    // SAFETY: the caller's promise.
    (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

impl<'a> Msg<'a> {
    pub(super) fn offset(&self) -> i64 {
        self.0.offset
    }

    pub(super) fn payload(&self) -> Option<&'a [u8]> {
        // SAFETY: the message owns its payload until it is destroyed, after the last use.
        unsafe { bytes(self.0.payload, self.0.len) }
    }

    pub(super) fn key(&self) -> Option<&'a [u8]> {
        // SAFETY: as the payload.
        unsafe { bytes(self.0.key, self.0.key_len) }
    }

    pub(super) fn timestamp(&self) -> Timestamp {
        let mut kind = rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
        // SAFETY: reads a live message; writes the type into a local.
        let t = unsafe { rd::rd_kafka_message_timestamp(self.0, &mut kind) };
        match kind {
            rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_CREATE_TIME => {
                Timestamp::CreateTime(t)
            }
            rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME => {
                Timestamp::LogAppendTime(t)
            }
            _ => Timestamp::NotAvailable,
        }
    }

    /// The record's headers as a record batch encodes them, into `out` (cleared first):
    /// (their count, the bytes of their keys and values).
    pub(super) fn headers_into(&self, out: &mut Vec<u8>) -> (i32, usize) {
        out.clear();
        let mut hdrs = std::ptr::null_mut();
        // SAFETY: reads a live message; the headers belong to it.
        let found = unsafe { rd::rd_kafka_message_headers(self.0, &mut hdrs) };
        if found != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR || hdrs.is_null() {
            return (0, 0);
        }
        let (mut count, mut size) = (0, 0);
        loop {
            let (mut name, mut value, mut len) = (std::ptr::null(), std::ptr::null(), 0usize);
            // SAFETY: index `count` of the message's live headers; the outputs are locals.
            let got = unsafe {
                rd::rd_kafka_header_get_all(hdrs, count as usize, &mut name, &mut value, &mut len)
            };
            if got != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR || name.is_null() {
                break;
            }
            // SAFETY: a header's name is a NUL-terminated string owned by the message.
            let key = unsafe { CStr::from_ptr(name) }.to_bytes();
            put_varint(out, key.len() as i32);
            out.extend_from_slice(key);
            // SAFETY: its value is `len` bytes owned by the message, or null.
            match unsafe { bytes(value, len) } {
                Some(v) => {
                    put_varint(out, v.len() as i32);
                    out.extend_from_slice(v);
                    size += key.len() + v.len();
                }
                None => {
                    put_varint(out, -1);
                    size += key.len();
                }
            }
            count += 1;
        }
        (count, size)
    }
}
