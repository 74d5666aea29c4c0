//! `topicfs mount`: `options` turns the command line and `-o` into a [`MountPlan`];
//! `daemon` forks, mounts, serves and shuts down. The storage core below never touches
//! process-wide state (limits, signals, stdio); only this module does.

pub(crate) mod daemon;
pub mod lifecycle;
pub mod logging;
pub(crate) mod options;
pub(crate) mod remote;

pub use daemon::run;
pub use options::MountArgs;
