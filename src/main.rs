//! The `topicfs` command (`topicfs::cli` defines it).

fn main() {
    std::process::exit(topicfs::cli::main());
}
