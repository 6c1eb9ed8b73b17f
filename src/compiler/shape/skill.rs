//! The fields of a skill's YAML frontmatter that eve reads (docs/agent-directory.md#frontmatter).

use super::DefaultValue as D;
use super::{Key, Kind, STRING, Table};

/// A skill's frontmatter. Other fields (`allowed-tools`, `compatibility`, …) belong to
/// other Agent Skills clients: they are accepted and ignored, so the table is open.
pub static FRONTMATTER: Table = Table {
    open: true,
    nullable: true,
    ..Table::of(&[
        Key::new(
            "name",
            Kind::Str(STRING),
            "Optional: the file or folder names the skill. A different name is a warning, and the skill keeps its path's name.",
        ),
        Key::new(
            "description",
            Kind::Str(STRING),
            "What the skill is for and when to load it; listed in the system prompt. Without one, the body's first line is used.",
        ),
        Key::new("license", Kind::Str(STRING), "Copied to the manifest."),
        Key::new(
            "metadata",
            Kind::Any,
            "Any YAML value, copied to the manifest as JSON.",
        ),
        Key::new(
            "deferred",
            Kind::Bool,
            "`true` keeps the skill out of the system prompt's list; `load_skill` still loads it.",
        )
        .default(D::Bool(false)),
    ])
};
