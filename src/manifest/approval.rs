//! Whether a tool call waits for a person: shared by the manifest's tools and its
//! connections.

use serde::{Deserialize, Serialize};

/// Whether a person must approve each call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    Never,
    Always,
}
