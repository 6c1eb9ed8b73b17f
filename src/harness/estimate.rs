//! The token estimate compaction reads: what the provider last reported, plus what was
//! appended since, 4 characters a token.

/// 4 characters a token.
pub(super) fn tokens(chars: usize) -> u64 {
    (chars / 4) as u64
}

/// The token estimate of the next request: the input tokens the provider last reported,
/// plus 4 characters a token for what was appended to the history since.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Estimate {
    pub last_input_tokens: u64,
    pub appended_chars: usize,
}

impl Estimate {
    /// The estimate in tokens.
    pub fn tokens(&self) -> u64 {
        self.last_input_tokens
            .saturating_add(tokens(self.appended_chars))
    }

    /// The provider counted a model call's input.
    pub fn reported(&mut self, input_tokens: u64) {
        self.last_input_tokens = input_tokens;
        self.appended_chars = 0;
    }

    /// The provider reported no counts: the call's input is estimated from the
    /// characters sent (system prompt, tools and history), 4 a token.
    pub fn unreported(&mut self, sent_chars: usize) {
        self.last_input_tokens = tokens(sent_chars);
        self.appended_chars = 0;
    }
}
