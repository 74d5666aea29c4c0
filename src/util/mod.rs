//! Small pieces every layer uses: `sync` (the one path to a lock), `read_window` (the one
//! positional read window) and `clock` (the wall clock in Kafka's milliseconds).

pub mod clock;
pub(crate) mod read_window;
pub mod sync;
