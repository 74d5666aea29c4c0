//! The `topicfs` command line: `mount` (daemonize, serve the tree, shut down cleanly on
//! `umount`, SIGTERM or SIGINT), `umount` (returns once the daemon's clean shutdown is done),
//! `dump-log` (a drop-in for Kafka's `kafka-dump-log.sh`), and `completions` and `man`, which
//! print the shell completions and the `topicfs(1)` man page made from these definitions.

mod manual;

use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::mount::MountArgs;

pub use manual::man_page;

#[derive(Parser)]
#[command(
    name = "topicfs",
    version,
    about = "Kafka topics as files: a FUSE filesystem that stores topics exactly as a Kafka broker does"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Mount the topics of the log dirs at MOUNTPOINT (returns once the mount is live)
    Mount(Box<MountArgs>),
    /// Unmount a topicfs mount and return once its daemon has finished its clean shutdown
    /// (checkpoints and marker written, lock released, process gone)
    Umount(UmountArgs),
    /// Print .log, .index and .timeindex files the way kafka-dump-log.sh does
    DumpLog(DumpLogArgs),
    /// Print the completion script of a shell (bash: save it as
    /// /usr/share/bash-completion/completions/topicfs; zsh: as _topicfs in a directory of
    /// $fpath; fish: as ~/.config/fish/completions/topicfs.fish)
    Completions(CompletionsArgs),
    /// Print the topicfs(1) man page (roff; `make install` puts it in place)
    Man,
}

#[derive(Args)]
struct UmountArgs {
    /// The mountpoint
    mountpoint: std::path::PathBuf,
}

#[derive(Args)]
struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

#[derive(Args)]
struct DumpLogArgs {
    /// Comma-separated .log, .index and .timeindex files to dump
    #[arg(long, required = true, value_name = "FILES")]
    files: String,
    /// Print the records' content
    #[arg(long)]
    print_data_log: bool,
    /// Iterate the records of each batch (implied by --print-data-log)
    #[arg(long)]
    deep_iteration: bool,
    /// Check the index files are sane without printing their entries
    #[arg(long)]
    index_sanity_check: bool,
    /// Verify the index against the log without printing its entries
    #[arg(long)]
    verify_index_only: bool,
    /// Read at most this many bytes of each .log file
    #[arg(long, value_name = "BYTES")]
    max_bytes: Option<u64>,
    /// The largest batch size accepted
    #[arg(long, value_name = "BYTES", default_value_t = 5_242_880)]
    max_message_size: usize,
    /// Print only the records' content, without their metadata
    #[arg(long)]
    skip_record_metadata: bool,
}

/// The whole command line, as `--help`, the completions and the man page show it.
pub fn command() -> clap::Command {
    Cli::command()
}

/// Runs `topicfs` with the process's arguments; returns the exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    match cli.command {
        Command::Mount(args) => {
            crate::mount::logging::init();
            crate::mount::run(*args)
        }
        Command::Umount(args) => {
            crate::mount::logging::init();
            crate::mount::lifecycle::umount(&args.mountpoint)
        }
        Command::DumpLog(args) => {
            crate::mount::logging::init();
            dump_main(args)
        }
        Command::Completions(args) => print(&completions(args.shell)),
        Command::Man => print(&man_page()),
    }
}

/// The completion script of `shell`.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command(), "topicfs", &mut script);
    script
}

/// Writes `bytes` to stdout; a failed write (a closed pipe, a full disk) is a message and
/// exit 1.
fn print(bytes: &[u8]) -> i32 {
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("topicfs: cannot write to stdout: {e}");
            1
        }
    }
}

fn dump_main(args: DumpLogArgs) -> i32 {
    let opts = crate::dump::DumpOptions {
        files: crate::dump::split_files_arg(&args.files),
        print_data_log: args.print_data_log,
        deep_iteration: args.deep_iteration,
        index_sanity_check: args.index_sanity_check,
        verify_index_only: args.verify_index_only,
        max_bytes: args.max_bytes,
        max_message_size: args.max_message_size,
        skip_record_metadata: args.skip_record_metadata,
    };
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    crate::dump::run(&opts, &mut stdout.lock(), &mut stderr.lock())
}

#[cfg(test)]
mod tests;
