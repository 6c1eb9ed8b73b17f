//! A file of the agent directory as read into memory, and the content hash the compiled
//! parts record. Kept apart from [`super::inputs`] (which finds and reads the files) so
//! that what compiles one file needs nothing of the loader.

use sha2::{Digest, Sha256};

use crate::text::hex;

/// A text file that was read successfully.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Path relative to this agent's directory, with `/` separators.
    pub path: String,
    /// Path relative to the top-level agent directory (what diagnostics show).
    pub display: String,
    pub text: String,
}

/// `sha256:<hex>` of a text.
pub fn sha256(text: &str) -> String {
    format!("sha256:{}", hex(&Sha256::digest(text.as_bytes())))
}
