//! The views of the tree, a folder each: the node kinds each owns, its handles and its
//! state. A view is plugged into the core by a line of [`VIEWS`].

pub(super) mod groups;
pub(super) mod log_file;
pub(super) mod maildir;
pub(super) mod metrics;
pub(super) mod table;

use super::view::View;

/// The views, asked in this order which owns a node: one registration line each. The tree
/// of topics and partitions comes last and owns every node the others do not.
pub(super) static VIEWS: [&dyn View; 6] = [
    &metrics::MetricsView,
    &log_file::LogView,
    &groups::GroupsView,
    &table::TableView,
    &maildir::MailView,
    &super::tree::TopicsView,
];
