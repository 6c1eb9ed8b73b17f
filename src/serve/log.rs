//! Where `eve serve`'s log lines go: the sink the binary sets ([`to`]; `eve serve`
//! writes them to stderr). The library prints nothing itself (`src/lib.rs` denies
//! printing outside `commands/`, `console/` and `dev/`); without a sink, lines are
//! dropped.

use std::sync::OnceLock;

type Sink = Box<dyn Fn(std::fmt::Arguments<'_>) + Send + Sync>;

static SINK: OnceLock<Sink> = OnceLock::new();

/// Sends the log lines to `sink` from now on (the first sink set stays).
pub fn to(sink: impl Fn(std::fmt::Arguments<'_>) + Send + Sync + 'static) {
    let _ = SINK.set(Box::new(sink));
}

/// One log line (without its newline).
pub fn line(args: std::fmt::Arguments<'_>) {
    if let Some(sink) = SINK.get() {
        sink(args);
    }
}

/// `log_line!("eve serve: …", …)`: one line to the sink, formatted as `format!` does.
macro_rules! log_line {
    ($($arg:tt)*) => {
        $crate::serve::log::line(format_args!($($arg)*))
    };
}
pub(crate) use log_line;
