//! The launcher's messages: numbers and byte strings, length-prefixed, read back without
//! trusting a length.

/// Builds a message.
#[derive(Debug, Default)]
pub struct Writer(Vec<u8>);

impl Writer {
    pub fn new() -> Writer {
        Writer::default()
    }

    pub fn u32(&mut self, value: u32) -> &mut Writer {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    pub fn bytes(&mut self, bytes: &[u8]) -> &mut Writer {
        self.u32(u32::try_from(bytes.len()).unwrap_or(u32::MAX));
        self.0.extend_from_slice(bytes);
        self
    }

    /// A count, then each item.
    pub fn list<'a>(&mut self, items: impl ExactSizeIterator<Item = &'a [u8]>) -> &mut Writer {
        self.u32(u32::try_from(items.len()).unwrap_or(u32::MAX));
        for item in items {
            self.bytes(item);
        }
        self
    }

    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.0)
    }
}

/// Reads a message; `None` at the first field that does not fit.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf }
    }

    pub fn u32(&mut self) -> Option<u32> {
        let (head, rest) = self.buf.split_first_chunk::<4>()?;
        self.buf = rest;
        Some(u32::from_le_bytes(*head))
    }

    pub fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.u32()?).ok()?;
        if len > self.buf.len() {
            return None;
        }
        let (head, rest) = self.buf.split_at(len);
        self.buf = rest;
        Some(head)
    }

    pub fn list(&mut self) -> Option<Vec<&'a [u8]>> {
        let count = usize::try_from(self.u32()?).ok()?;
        // Each item takes at least its four length bytes.
        if count > self.buf.len() / 4 {
            return None;
        }
        (0..count).map(|_| self.bytes()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_back_and_short_messages_do_not() {
        let items: [&[u8]; 3] = [b"bash", b"", b"-c"];
        let message = Writer::new()
            .u32(7)
            .bytes(b"/bin/bash")
            .list(items.iter().copied())
            .finish();
        let mut r = Reader::new(&message);
        assert_eq!(r.u32(), Some(7));
        assert_eq!(r.bytes(), Some(&b"/bin/bash"[..]));
        assert_eq!(r.list(), Some(items.to_vec()));
        assert_eq!(r.u32(), None);
        for cut in 0..message.len() {
            let mut r = Reader::new(&message[..cut]);
            let whole = r.u32().is_some() && r.bytes().is_some() && r.list().is_some();
            assert!(!whole, "a message cut at {cut} read whole");
        }
        // A count that claims more items than the bytes can hold is refused at once.
        let lying = Writer::new().u32(u32::MAX).finish();
        assert_eq!(Reader::new(&lying).list(), None);
    }
}
