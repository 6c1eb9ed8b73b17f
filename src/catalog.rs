//! What a built-in tool is, as data: its name, model-facing description, input schema and
//! settings. The compiler reads a [`Catalog`] of them; each built-in's entry lives beside its
//! executor in `tools/builtin/`, which hands the whole catalog to the compiler.

/// When a built-in tool is offered to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    /// Always (unless disabled).
    Always,
    /// Only when the agent has at least one skill.
    WithSkills,
    /// Only when the model's provider runs the tool itself (a server-side tool: Anthropic's
    /// Messages API, OpenAI's Responses API).
    ProviderHosted,
    /// Only when some tool is deferred (`defer = true`) or a skill is: the search of
    /// the tool catalog.
    WithDeferred,
    /// Only when some tool is deferred: what runs a tool of the catalog.
    WithDeferredTools,
}

/// The type of a built-in tool's setting (`[settings]` in `tools/<slug>.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingKind {
    /// `true` or `false`.
    Bool,
    /// An array of strings.
    StringList,
    /// An integer of at least 1.
    PositiveInt,
    /// An integer from `min` to `max`, both included: for a value that costs more the
    /// larger it is, so a file cannot ask for more than eve can give. `default` is the
    /// value when the setting is not written.
    IntRange { min: u64, max: u64, default: u64 },
    /// An array of command patterns (`bash`'s `allow` and `deny`).
    CommandPatterns,
}

/// One key a built-in tool accepts under `[settings]`.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The key under `[settings]`.
    pub name: &'static str,
    /// The type its value must have.
    pub kind: SettingKind,
    /// What it does, for diagnostics and documentation.
    pub description: &'static str,
}

/// A built-in tool as the model sees it, before any override.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinTool {
    /// The name the model calls it by (also its slug in `tools/<slug>.toml`).
    pub name: &'static str,
    /// The description the model reads.
    pub description: &'static str,
    /// The input JSON Schema, as JSON text (an object schema).
    pub input_schema: &'static str,
    /// Read-only tools may run in parallel; the others run alone.
    pub read_only: bool,
    /// Upper bound on one call, in seconds.
    pub timeout_secs: u64,
    /// The keys it accepts under `[settings]`.
    pub settings: &'static [Setting],
    /// When it is offered to the model.
    pub availability: Availability,
}

/// The built-in tools, in the order they are offered to the model.
#[derive(Debug, Clone, Copy)]
pub struct Catalog {
    tools: &'static [&'static BuiltinTool],
}

impl Catalog {
    /// A catalog of these tools, in this order.
    pub const fn new(tools: &'static [&'static BuiltinTool]) -> Catalog {
        Catalog { tools }
    }

    /// Every built-in tool, in offer order.
    pub fn iter(&self) -> impl Iterator<Item = &'static BuiltinTool> {
        self.tools.iter().copied()
    }

    /// The built-in tool with this name.
    pub fn find(&self, name: &str) -> Option<&'static BuiltinTool> {
        self.iter().find(|tool| tool.name == name)
    }

    /// The names of all built-in tools.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        self.iter().map(|tool| tool.name)
    }
}

impl BuiltinTool {
    /// The input schema parsed as JSON.
    pub fn schema(&self) -> serde_json::Value {
        // Parsed once a process: every build asks for every built-in's schema, and a
        // copy costs a fraction of a parse.
        static PARSED: std::sync::LazyLock<
            std::sync::Mutex<std::collections::HashMap<&'static str, serde_json::Value>>,
        > = std::sync::LazyLock::new(Default::default);
        let mut parsed = PARSED.lock().unwrap_or_else(|e| e.into_inner());
        parsed
            .entry(self.input_schema)
            .or_insert_with(|| {
                // The unit tests parse every schema, so the fallback is never reached.
                serde_json::from_str(self.input_schema)
                    .unwrap_or_else(|_| serde_json::json!({ "type": "object" }))
            })
            .clone()
    }

    /// The setting with this name, if the tool accepts it.
    pub fn setting(&self, name: &str) -> Option<&'static Setting> {
        self.settings.iter().find(|setting| setting.name == name)
    }
}
