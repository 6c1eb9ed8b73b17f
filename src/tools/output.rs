//! Bounded capture of a process's output: the head and the tail are kept, the middle is cut.

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

/// Output read from a stream, with at most `limit` bytes kept.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Captured {
    head: Vec<u8>,
    /// The last bytes, as a ring once it is full.
    tail: Vec<u8>,
    tail_start: usize,
    /// Every byte read, kept or not.
    pub total: u64,
    limit: usize,
}

impl Captured {
    /// An empty capture keeping at most `limit` bytes (half head, half tail).
    pub fn new(limit: usize) -> Captured {
        Captured {
            limit,
            ..Captured::default()
        }
    }

    /// Adds bytes read from the stream.
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let head_room = (self.limit / 2).saturating_sub(self.head.len());
        let take = head_room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        let tail_limit = self.limit - self.limit / 2;
        if tail_limit == 0 {
            return;
        }
        if bytes.len() >= tail_limit {
            self.tail = bytes[bytes.len() - tail_limit..].to_vec();
            self.tail_start = 0;
            return;
        }
        for &b in bytes {
            if self.tail.len() < tail_limit {
                self.tail.push(b);
            } else {
                self.tail[self.tail_start] = b;
                self.tail_start = (self.tail_start + 1) % tail_limit;
            }
        }
    }

    /// Whether bytes were cut.
    pub fn truncated(&self) -> bool {
        self.total > (self.head.len() + self.tail.len()) as u64
    }

    /// The kept text (invalid UTF-8 replaced), with a note where bytes were cut.
    pub fn text(&self) -> String {
        let mut tail = Vec::with_capacity(self.tail.len());
        tail.extend_from_slice(&self.tail[self.tail_start..]);
        tail.extend_from_slice(&self.tail[..self.tail_start]);
        if self.truncated() {
            let cut = self.total - (self.head.len() + tail.len()) as u64;
            format!(
                "{}\n… [{cut} of {} bytes cut from the middle] …\n{}",
                String::from_utf8_lossy(&self.head),
                self.total,
                String::from_utf8_lossy(&tail)
            )
        } else {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            String::from_utf8_lossy(&all).into_owned()
        }
    }
}

/// Reads `reader` to its end, or until `stop` is cancelled, keeping at most `limit` bytes.
pub async fn capture<R: AsyncRead + Unpin>(
    reader: Option<R>,
    limit: usize,
    stop: CancellationToken,
) -> Captured {
    let mut captured = Captured::new(limit);
    let Some(mut reader) = reader else {
        return captured;
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let read = tokio::select! {
            read = reader.read(&mut buf) => read,
            () = stop.cancelled() => break,
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(n) => captured.push(&buf[..n]),
        }
    }
    captured
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut c = Captured::new(10);
        c.push(b"hello");
        assert!(!c.truncated());
        assert_eq!(c.text(), "hello");
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_says_how_much_was_cut() {
        let mut c = Captured::new(2048);
        for chunk in (0..100).map(|i| format!("line {i:03}\n")) {
            c.push(chunk.as_bytes());
        }
        assert!(!c.truncated());
        assert_eq!(c.total, 900);
        let whole = (0..100)
            .map(|i| format!("line {i:03}\n"))
            .collect::<String>();
        assert_eq!(c.text(), whole, "900 bytes fit in 2048");

        let mut c = Captured::new(20);
        c.push(whole.as_bytes());
        let text = c.text();
        assert!(text.starts_with("line 000\nl"), "{text}");
        assert!(text.ends_with("…\n\nline 099\n"), "{text}");
        assert!(
            text.contains("\n… [880 of 900 bytes cut from the middle] …\n"),
            "{text}"
        );
    }

    #[test]
    fn the_tail_ring_survives_many_small_pushes() {
        let mut c = Captured::new(8);
        for b in b"abcdefghijklmnop" {
            c.push(&[*b]);
        }
        let text = c.text();
        assert!(text.starts_with("abcd\n"), "{text}");
        assert!(text.ends_with("\nmnop"), "{text}");
    }
}
