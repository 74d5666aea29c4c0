//! The `topicfs` command (the library's `cli` module defines it).

fn main() {
    std::process::exit(topicfs::main());
}
