//! Helpers shared by the integration tests (`mod common;` in a test file):
//! - [`mount`]: real mounts (`TestMount`) and the processes and files around them;
//! - [`decode`]: segment files decoded into records (kafka-protocol, an independent decoder);
//! - [`drain`]: a partition's reader drained into records;
//! - [`readers`]: background readers of a mount (lines over a channel, signals, bounded waits).
//! - [`readme`]: the README's console examples (blocks, a bash session, the comparison);
//! - [`schema`]: Confluent's own serdes (tests/schema/oracle.py) as an oracle;
//! - [`service`]: servers a test starts with its own configuration (dovecot, rsyslogd).

#![allow(dead_code)]

pub mod decode;
pub mod drain;
pub mod mount;
pub mod readers;
pub mod readme;
pub mod schema;
pub mod service;
