//! What the file tools share: the read-before-write check and atomic writes.

use std::io::Write;
use std::path::Path;

use super::state::Stamp;
use super::{ToolContext, ToolOutput};

/// The current bytes of `path` if it exists, after checking that `read_file` read it in
/// this session and that it has not changed since. A file that does not exist passes.
pub fn check_fresh(ctx: &ToolContext, path: &Path) -> Result<Option<Vec<u8>>, ToolOutput> {
    let shown = ctx.display(path);
    let current = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ToolOutput::error(format!("cannot read `{shown}`: {e}"))),
    };
    let Some(stamp) = ctx.state.stamp_of(path) else {
        return Err(ToolOutput::error(format!(
            "`{shown}` already exists and has not been read in this session: read it with read_file first, then change it"
        )));
    };
    if Stamp::of(&current) != stamp {
        return Err(ToolOutput::error(format!(
            "`{shown}` was modified since it was last read (it has {} bytes now, {} when read): read it again with read_file before changing it",
            current.len(),
            stamp.len
        )));
    }
    Ok(Some(current))
}

/// Writes `bytes` to `path` atomically: a temporary file in the same folder, flushed to
/// disk, then renamed over the target. An existing file keeps its permissions.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".eve-write-")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(tmp.path(), meta.permissions())?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// `1 line`, `3 lines`.
pub fn lines(n: usize) -> String {
    if n == 1 {
        "1 line".into()
    } else {
        format!("{n} lines")
    }
}

/// How many lines a text has (a final line without `\n` counts).
pub fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        text.lines().count()
    }
}
