//! Topic administration in remote mode: CreateTopics, DeleteTopics, CreatePartitions,
//! DescribeConfigs and IncrementalAlterConfigs.
//!
//! rdkafka's `alter_configs` is Kafka's legacy AlterConfigs, which resets every key it does
//! not name; setting one key must leave the others alone, so the `config` file goes through
//! librdkafka's IncrementalAlterConfigs, which rdkafka does not wrap (the FFI below).

use std::ffi::{CStr, CString};

use rdkafka::admin::{
    AdminOptions, ConfigSource, NewPartitions, NewTopic, ResourceSpecifier, TopicReplication,
};
use rdkafka::bindings as ffi;
use rdkafka::error::RDKafkaErrorCode;

use super::block::block_on;
use super::{Inner, code_error, kafka};
use crate::error::{Error, Result};

fn options(inner: &Inner) -> AdminOptions {
    AdminOptions::new()
        .request_timeout(Some(inner.timeout))
        .operation_timeout(Some(inner.timeout))
}

/// The error of one topic's result.
fn topic_error(what: &str, topic: &str, code: RDKafkaErrorCode) -> Error {
    use RDKafkaErrorCode as C;
    match code {
        C::TopicAlreadyExists => Error::TopicExists(topic.to_string()),
        C::UnknownTopicOrPartition | C::UnknownTopic => Error::UnknownTopic(topic.to_string()),
        C::InvalidPartitions => Error::InvalidConfig(format!("{what} {topic}: {code}")),
        _ => code_error(&format!("{what} {topic}"), code, &code.to_string()),
    }
}

fn one_result(
    what: &str,
    topic: &str,
    r: rdkafka::error::KafkaResult<Vec<rdkafka::admin::TopicResult>>,
) -> Result<()> {
    match r.map_err(|e| kafka(&format!("{what} {topic}"), e))?.pop() {
        Some(Ok(_)) => Ok(()),
        Some(Err((_, code))) => Err(topic_error(what, topic, code)),
        None => Err(Error::Cluster(format!("{what} {topic}: no answer"))),
    }
}

pub(super) fn create_topic(inner: &Inner, name: &str) -> Result<()> {
    let partitions = inner.cfg.num_partitions.unwrap_or(-1);
    let rf = inner.cfg.replication_factor.unwrap_or(-1);
    let topic = NewTopic::new(name, partitions, TopicReplication::Fixed(rf));
    let r = block_on(inner.admin.create_topics([&topic], &options(inner)));
    one_result("creating topic", name, r)?;
    log::info!("created topic {name} in the cluster");
    Ok(())
}

pub(super) fn delete_topic(inner: &Inner, name: &str) -> Result<()> {
    let r = block_on(inner.admin.delete_topics(&[name], &options(inner)));
    one_result("deleting topic", name, r)?;
    log::info!("deleted topic {name} from the cluster");
    Ok(())
}

pub(super) fn create_partitions(inner: &Inner, name: &str, count: u32) -> Result<()> {
    let np = NewPartitions::new(name, count as usize);
    let r = block_on(inner.admin.create_partitions([&np], &options(inner)));
    one_result("growing topic", name, r)?;
    log::info!("topic {name} now has {count} partitions in the cluster");
    Ok(())
}

/// The topic's own settings (DescribeConfigs, source DYNAMIC_TOPIC_CONFIG), sorted by key.
pub(super) fn topic_overrides(inner: &Inner, name: &str) -> Result<Vec<(String, String)>> {
    let spec = ResourceSpecifier::Topic(name);
    let r = block_on(inner.admin.describe_configs([&spec], &options(inner)))
        .map_err(|e| kafka(&format!("describing the configs of {name}"), e))?;
    let res = match r.into_iter().next() {
        Some(Ok(res)) => res,
        Some(Err(code)) => return Err(topic_error("describing the configs of", name, code)),
        None => return Err(Error::Cluster(format!("describing {name}: no answer"))),
    };
    let mut out: Vec<(String, String)> = res
        .entries
        .into_iter()
        .filter(|e| e.source == ConfigSource::DynamicTopic)
        .filter_map(|e| Some((e.name, e.value?)))
        .collect();
    out.sort();
    Ok(out)
}

/// One key's value as the topic has it (its own setting or the default it inherits).
pub(super) fn topic_config(inner: &Inner, name: &str, key: &str) -> Result<Option<String>> {
    let spec = ResourceSpecifier::Topic(name);
    let r = block_on(inner.admin.describe_configs([&spec], &options(inner)))
        .map_err(|e| kafka(&format!("describing the configs of {name}"), e))?;
    Ok(match r.into_iter().next() {
        Some(Ok(res)) => res.get(key).and_then(|e| e.value.clone()),
        _ => None,
    })
}

/// Owns what the FFI calls allocate; frees it on every path.
struct Call {
    res: *mut ffi::rd_kafka_ConfigResource_t,
    opts: *mut ffi::rd_kafka_AdminOptions_t,
    queue: *mut ffi::rd_kafka_queue_t,
    event: *mut ffi::rd_kafka_event_t,
}

impl Drop for Call {
    fn drop(&mut self) {
        // SAFETY: each pointer is null or was returned by its librdkafka constructor and is
        // destroyed once, here.
        unsafe {
            if !self.event.is_null() {
                ffi::rd_kafka_event_destroy(self.event);
            }
            if !self.queue.is_null() {
                ffi::rd_kafka_queue_destroy(self.queue);
            }
            if !self.opts.is_null() {
                ffi::rd_kafka_AdminOptions_destroy(self.opts);
            }
            if !self.res.is_null() {
                ffi::rd_kafka_ConfigResource_destroy(self.res);
            }
        }
    }
}

fn c_string(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::InvalidConfig(format!("{s:?} contains a NUL byte")))
}

/// # Safety
/// `p` is null or a NUL-terminated string that lives as long as the call.
unsafe fn text(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: as the caller promises.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// The cluster's answer to an IncrementalAlterConfigs call for `topic`: the request's error,
/// then its resource's.
///
/// # Safety
/// `event` is the live, non-null result event of that call.
unsafe fn alter_answer(event: *mut ffi::rd_kafka_event_t, topic: &str) -> Result<()> {
    // SAFETY: `event` is live (the caller's promise); its result, the resources and their
    // strings belong to it and are only read while it lives.
    unsafe {
        let code = ffi::rd_kafka_event_error(event);
        if code != ffi::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
            let msg = text(ffi::rd_kafka_event_error_string(event));
            return Err(code_error(
                &format!("changing the configs of {topic}"),
                code.into(),
                &msg,
            ));
        }
        let result = ffi::rd_kafka_event_IncrementalAlterConfigs_result(event);
        let mut n = 0usize;
        let rs = ffi::rd_kafka_IncrementalAlterConfigs_result_resources(result, &mut n);
        for i in 0..n {
            let r = *rs.add(i);
            let code = ffi::rd_kafka_ConfigResource_error(r);
            if code != ffi::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                let msg = text(ffi::rd_kafka_ConfigResource_error_string(r));
                let code: RDKafkaErrorCode = code.into();
                return Err(match code {
                    RDKafkaErrorCode::UnknownTopicOrPartition => {
                        Error::UnknownTopic(topic.to_string())
                    }
                    _ => code_error(&format!("changing the configs of {topic}"), code, &msg),
                });
            }
        }
    }
    Ok(())
}

/// Whether a config change is applied or only validated by the cluster.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Alter {
    Apply,
    ValidateOnly,
}

/// Sets (`Some`) or deletes (`None`, back to the cluster's default) the topic's keys in one
/// IncrementalAlterConfigs request: the cluster applies all or none. One librdkafka Admin
/// call, whose resources `Call` frees; the answer is read by [`alter_answer`].
pub(super) fn alter_configs(
    inner: &Inner,
    topic: &str,
    changes: &[(&str, Option<&str>)],
    alter: Alter,
) -> Result<()> {
    let name = c_string(topic)?;
    let mut keys = Vec::new();
    for (k, v) in changes {
        keys.push((c_string(k)?, v.map(c_string).transpose()?));
    }
    let rk = inner.admin.inner().native_ptr();
    let ms = inner.timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: librdkafka's documented use of the Admin API; every pointer passed is live
    // for the call (CStrings above, `call`'s allocations until it drops), the resources
    // are copied by rd_kafka_IncrementalAlterConfigs, and the answer is read from the event
    // once it is not null, while `call` holds it.
    unsafe {
        let mut call = Call {
            res: ffi::rd_kafka_ConfigResource_new(
                ffi::rd_kafka_ResourceType_t::RD_KAFKA_RESOURCE_TOPIC,
                name.as_ptr(),
            ),
            opts: std::ptr::null_mut(),
            queue: std::ptr::null_mut(),
            event: std::ptr::null_mut(),
        };
        for (k, v) in &keys {
            let op = match v {
                Some(_) => ffi::rd_kafka_AlterConfigOpType_t::RD_KAFKA_ALTER_CONFIG_OP_TYPE_SET,
                None => ffi::rd_kafka_AlterConfigOpType_t::RD_KAFKA_ALTER_CONFIG_OP_TYPE_DELETE,
            };
            let vp = v.as_ref().map_or(std::ptr::null(), |v| v.as_ptr());
            let err =
                ffi::rd_kafka_ConfigResource_add_incremental_config(call.res, k.as_ptr(), op, vp);
            if !err.is_null() {
                let msg = text(ffi::rd_kafka_error_string(err));
                ffi::rd_kafka_error_destroy(err);
                return Err(Error::InvalidConfig(format!("{topic}: {msg}")));
            }
        }
        call.opts = ffi::rd_kafka_AdminOptions_new(
            rk,
            ffi::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_INCREMENTALALTERCONFIGS,
        );
        let mut errbuf = [0 as std::ffi::c_char; 256];
        ffi::rd_kafka_AdminOptions_set_request_timeout(
            call.opts,
            ms,
            errbuf.as_mut_ptr(),
            errbuf.len(),
        );
        if alter == Alter::ValidateOnly {
            ffi::rd_kafka_AdminOptions_set_validate_only(
                call.opts,
                1,
                errbuf.as_mut_ptr(),
                errbuf.len(),
            );
        }
        call.queue = ffi::rd_kafka_queue_new(rk);
        let mut resources = [call.res];
        ffi::rd_kafka_IncrementalAlterConfigs(rk, resources.as_mut_ptr(), 1, call.opts, call.queue);
        call.event = ffi::rd_kafka_queue_poll(call.queue, ms.saturating_add(5000));
        if call.event.is_null() {
            return Err(Error::Cluster(format!(
                "changing the configs of {topic}: no answer within {ms} ms"
            )));
        }
        alter_answer(call.event, topic)?;
    }
    if alter == Alter::Apply {
        log::info!("changed the configs of {topic} in the cluster: {changes:?}");
    }
    Ok(())
}
