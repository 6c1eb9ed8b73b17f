//! The keys of every file kind, as data: each key's type, meaning, default and allowed
//! values. The readers take their known keys from here (unknown keys, "did you mean")
//! and `eve schema` turns the same tables into JSON Schemas, so the two cannot drift.

pub mod agent;
pub mod connection;
pub mod eval;
pub mod hook;
pub mod skill;
pub mod tool;

#[cfg(test)]
mod tests;

/// The keys one table of a file may hold.
#[derive(Debug)]
pub struct Table {
    pub keys: &'static [Key],
    /// Keys that must be present.
    pub required: &'static [&'static str],
    /// Groups of keys of which exactly one must be present.
    pub one_of: &'static [&'static [&'static str]],
    /// Whether keys not listed are accepted (and ignored): only skill frontmatter, where
    /// other Agent Skills clients define fields of their own.
    pub open: bool,
    /// Whether a key written without a value (YAML's `key:`) counts as not written.
    pub nullable: bool,
}

impl Table {
    /// A closed table of these keys, none required.
    pub const fn of(keys: &'static [Key]) -> Table {
        Table {
            keys,
            required: &[],
            one_of: &[],
            open: false,
            nullable: false,
        }
    }

    /// The key with this name.
    pub fn key(&self, name: &str) -> Option<&'static Key> {
        self.keys.iter().find(|k| k.name == name)
    }

    /// The names of the keys, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.keys.iter().map(|k| k.name)
    }
}

/// One key of a table.
#[derive(Debug)]
pub struct Key {
    pub name: &'static str,
    pub kind: Kind,
    /// What it means, for people: taken from the docs, shown on hover in an editor.
    pub doc: &'static str,
    /// The value eve uses when the key is absent.
    pub default: DefaultValue,
    /// Keys this one only makes sense beside (`headers` needs `url`).
    pub needs: &'static [&'static str],
}

impl Key {
    /// A key without a default or dependencies.
    pub const fn new(name: &'static str, kind: Kind, doc: &'static str) -> Key {
        Key {
            name,
            kind,
            doc,
            default: DefaultValue::None,
            needs: &[],
        }
    }

    /// This key with a default.
    pub const fn default(self, default: DefaultValue) -> Key {
        Key { default, ..self }
    }

    /// This key, valid only beside `needs`.
    pub const fn needs(self, needs: &'static [&'static str]) -> Key {
        Key { needs, ..self }
    }
}

/// The value of a key.
#[derive(Debug)]
pub enum Kind {
    /// A string; `non_blank` when spaces alone are refused, at most `max_chars`
    /// characters, matching `pattern` (a regular expression) when given.
    Str(Str),
    /// One of these strings.
    Enum(&'static [&'static str]),
    /// One of these strings, in any case (`get` for `GET`).
    EnumAnyCase(&'static [&'static str]),
    Bool,
    /// Only `true`.
    True,
    /// An integer of at least 1.
    PositiveInt,
    /// An integer of at least 0.
    Count,
    /// An integer from `min` to `max`, both included.
    IntRange {
        min: u64,
        max: u64,
    },
    /// A number (an integer is accepted), greater than `above` and at most `max`.
    Number {
        above: Option<f64>,
        max: Option<f64>,
    },
    /// An array of strings.
    Strings(Str),
    /// An array of these strings.
    EnumList(&'static [&'static str]),
    /// A string or an array of strings.
    StringOrStrings,
    /// A nested table.
    Table(&'static Table),
    /// An array of tables (`[[turn]]`, or an array of inline tables).
    Tables(&'static Table),
    /// A table whose keys are names the author chooses (`[providers.NAME]`), each name
    /// matching `names` when given, each value of this kind.
    Map {
        names: Option<&'static str>,
        values: &'static Kind,
    },
    /// An array of values of this kind.
    Array(&'static Kind),
    /// A value of any of these kinds.
    OneOf(&'static [Kind]),
    /// A JSON Schema, written as a TOML table; `object` when it must describe an object.
    JsonSchema {
        object: bool,
    },
    /// Any table.
    AnyTable,
    /// Any value.
    Any,
    /// A built-in tool's `[settings]`: its keys are in the tool's catalog entry.
    Settings,
}

/// What a string must look like.
#[derive(Debug)]
pub struct Str {
    pub non_blank: bool,
    pub max_chars: Option<u64>,
    pub pattern: Option<&'static str>,
}

/// Any string.
pub const STRING: Str = Str {
    non_blank: false,
    max_chars: None,
    pattern: None,
};

/// A string that is not empty or blank.
pub const NON_BLANK: Str = Str {
    non_blank: true,
    ..STRING
};

/// An environment variable name.
pub const ENV_NAME: Str = Str {
    pattern: Some("^[A-Za-z_][A-Za-z0-9_]*$"),
    ..STRING
};

/// The value eve uses for a key that is not written.
#[derive(Debug, Clone, Copy)]
pub enum DefaultValue {
    /// No default: absent means "none", or the default depends on other keys (the doc
    /// says how).
    None,
    Bool(bool),
    Int(u64),
    Float(f64),
    Str(&'static str),
    /// `[]`.
    EmptyArray,
    /// `{}`.
    EmptyTable,
}

impl DefaultValue {
    /// The default as JSON, if there is one.
    pub fn to_json(self) -> Option<serde_json::Value> {
        use serde_json::{Value, json};
        Some(match self {
            DefaultValue::None => return None,
            DefaultValue::Bool(b) => Value::Bool(b),
            DefaultValue::Int(n) => json!(n),
            DefaultValue::Float(x) => json!(x),
            DefaultValue::Str(s) => json!(s),
            DefaultValue::EmptyArray => json!([]),
            DefaultValue::EmptyTable => json!({}),
        })
    }
}

/// `approval`: whether a person approves each call.
pub const APPROVALS: &[&str] = &["never", "always"];

/// The doc of an `approval` key.
pub const APPROVAL_DOC: &str =
    "\"always\": a person approves each call before it runs; \"never\": it runs without asking";
