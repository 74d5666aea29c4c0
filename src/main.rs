//! The `topicfs` command: `mount` (daemonize, serve the tree, shut down cleanly on `umount`,
//! SIGTERM or SIGINT), `umount` (returns once the daemon's clean shutdown is done) and
//! `dump-log` (a drop-in for Kafka's `kafka-dump-log.sh`).

use clap::{Args, Parser, Subcommand};

use topicfs::mount::MountArgs;

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
}

#[derive(Args)]
struct UmountArgs {
    /// The mountpoint
    mountpoint: std::path::PathBuf,
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

fn main() {
    let cli = Cli::parse();
    init_logging();
    let code = match cli.command {
        Command::Mount(args) => topicfs::mount::run(*args),
        Command::Umount(args) => topicfs::mount::lifecycle::umount(&args.mountpoint),
        Command::DumpLog(args) => dump_main(args),
    };
    std::process::exit(code);
}

fn init_logging() {
    topicfs::mount::logging::init();
}

fn dump_main(args: DumpLogArgs) -> i32 {
    let opts = topicfs::dump::DumpOptions {
        files: topicfs::dump::split_files_arg(&args.files),
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
    topicfs::dump::run(&opts, &mut stdout.lock(), &mut stderr.lock())
}
