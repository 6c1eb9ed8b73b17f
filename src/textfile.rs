//! Reading a text file eve is given (an agent's files, a skill body) safely: a size
//! limit checked before reading, UTF-8, and anything but a regular file refused by its
//! type without blocking, so a FIFO planted in a folder cannot hang eve.

use std::fs;
use std::io::Read;
use std::path::Path;

/// Input files larger than this are refused without being read.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Reads a UTF-8 text file of at most [`MAX_FILE_BYTES`], never loading a larger one.
/// Anything but a regular file (a FIFO, a socket, a device) is refused by its type and
/// opened without blocking, so a FIFO planted in the agent directory cannot hang a build.
pub fn read_text(path: &Path) -> Result<String, String> {
    read_text_meta(path).map(|(text, _)| text)
}

/// [`read_text`], with the metadata of the file that was read (taken from the open file).
pub fn read_text_meta(path: &Path) -> Result<(String, fs::Metadata), String> {
    read_text_within(path, MAX_FILE_BYTES)
}

/// [`read_text_meta`] with another size limit (for eve's own files, such as the build
/// cache, which are checked like any input: they sit in a folder someone else may fill).
pub fn read_text_within(path: &Path, limit: u64) -> Result<(String, fs::Metadata), String> {
    let (bytes, meta) = read_bytes_within(path, limit)?;
    String::from_utf8(bytes)
        .map(|text| (text, meta))
        .map_err(|e| not_utf8(e.as_bytes(), e.utf8_error().valid_up_to()))
}

/// A text file as [`read_text_meta`] reads it, except that bytes that are not UTF-8 are
/// replaced by U+FFFD, as editors and Node.js read such a file; the third value says
/// where the first one was (`file is not valid UTF-8 (line 2, byte 3)`), if any. For
/// files eve takes from other clients' libraries (skills), which load there.
pub fn read_text_lossy(path: &Path) -> Result<(String, fs::Metadata, Option<String>), String> {
    let (bytes, meta) = read_bytes_within(path, MAX_FILE_BYTES)?;
    match String::from_utf8(bytes) {
        Ok(text) => Ok((text, meta, None)),
        Err(e) => {
            let bad = not_utf8(e.as_bytes(), e.utf8_error().valid_up_to());
            let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
            Ok((text, meta, Some(bad)))
        }
    }
}

/// What to say of `bytes`, valid UTF-8 up to `offset` only.
fn not_utf8(bytes: &[u8], offset: usize) -> String {
    let line = bytes[..offset].iter().filter(|b| **b == b'\n').count() + 1;
    format!("file is not valid UTF-8 (line {line}, byte {offset})")
}

/// The bytes of a regular file of at most `limit` bytes, and its metadata (taken from
/// the open file).
fn read_bytes_within(path: &Path, limit: u64) -> Result<(Vec<u8>, fs::Metadata), String> {
    let describe = |e: std::io::Error| match e.raw_os_error() {
        Some(libc::ELOOP) => "symbolic link loop".to_string(),
        _ => format!("cannot read: {e}"),
    };
    let meta = fs::metadata(path).map_err(describe)?;
    if meta.is_dir() {
        return Err("expected a file, found a folder".into());
    }
    if !meta.is_file() {
        return Err(format!("expected a regular file, found {}", special(&meta)));
    }
    if meta.len() > limit {
        return Err(format!(
            "file is too large ({} bytes; the limit is {limit} bytes)",
            meta.len(),
        ));
    }
    let file = open_nonblocking(path).map_err(describe)?;
    // The file may have been swapped since it was looked at.
    let opened = file.metadata().map_err(describe)?;
    if !opened.is_file() {
        return Err(format!(
            "expected a regular file, found {}",
            special(&opened)
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(describe)?;
    if bytes.len() as u64 > limit {
        return Err(format!("file is too large (over {limit} bytes)"));
    }
    Ok((bytes, opened))
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<fs::File> {
    fs::File::open(path)
}

/// What a file that is neither a regular file nor a folder is.
fn special(meta: &fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let kind = meta.file_type();
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
    }
    let _ = meta;
    "a special file"
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_stray_byte_is_replaced_when_reading_lossily_and_refused_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("SKILL.md");
        fs::write(&path, b"---\nname: caf\xe9\n---\nbody\n").unwrap();
        let refused = read_text(&path).unwrap_err();
        assert_eq!(refused, "file is not valid UTF-8 (line 2, byte 13)");
        let (text, _, bad) = read_text_lossy(&path).unwrap();
        assert_eq!(text, "---\nname: caf\u{fffd}\n---\nbody\n");
        assert_eq!(bad.as_deref(), Some(refused.as_str()));
        fs::write(&path, "fine").unwrap();
        assert_eq!(read_text_lossy(&path).unwrap().2, None);
    }
}
