//! Output streams with `PrintStream` semantics (write errors are swallowed, as Java does).

use std::fmt;
use std::io::{BufWriter, Write};

pub(super) struct PrintStream<'a> {
    w: BufWriter<&'a mut dyn Write>,
    failed: bool,
}

impl<'a> PrintStream<'a> {
    pub(super) fn new(w: &'a mut dyn Write) -> Self {
        PrintStream {
            w: BufWriter::with_capacity(64 * 1024, w),
            failed: false,
        }
    }
    pub(super) fn print(&mut self, args: fmt::Arguments) {
        if !self.failed && self.w.write_fmt(args).is_err() {
            self.failed = true;
        }
    }
    pub(super) fn println(&mut self, args: fmt::Arguments) {
        self.print(args);
        self.print(format_args!("\n"));
    }
    pub(super) fn flush(&mut self) {
        if !self.failed && self.w.flush().is_err() {
            self.failed = true;
        }
    }
}
