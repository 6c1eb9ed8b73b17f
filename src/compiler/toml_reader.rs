//! Reads TOML tables key by key, reporting every unknown key and wrong type with its position.

use std::cell::RefCell;
use std::ops::Range;

use toml_edit::{Item, Key, TableLike, Value};

use super::diagnostic::{Diagnostic, Diagnostics, code};
use super::shape::{self, Kind};
use super::source::SourceFile;
use crate::suggest;

/// A value together with where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Option<Range<usize>>,
}

/// A parsed TOML file plus the diagnostics found while reading it.
pub struct TomlFile {
    pub src: SourceFile,
    doc: toml_edit::Document<String>,
    diags: RefCell<Diagnostics>,
}

impl TomlFile {
    /// Parses `src`; a syntax error is returned as a diagnostic.
    pub fn parse(src: SourceFile) -> Result<Self, Box<Diagnostic>> {
        match toml_edit::Document::parse(src.text.clone()) {
            Ok(doc) => Ok(TomlFile {
                src,
                doc,
                diags: RefCell::default(),
            }),
            Err(err) => {
                let message = err.message().trim_end().to_string();
                let message = message.lines().next().unwrap_or("invalid TOML").to_string();
                Err(Box::new(
                    Diagnostic::error(code::TOML_SYNTAX, format!("invalid TOML: {message}"))
                        .at(&src, err.span()),
                ))
            }
        }
    }

    /// A reader over the document's root table, which holds the keys of `shape`.
    pub fn root(&self, shape: &'static shape::Table) -> TableReader<'_> {
        TableReader {
            file: self,
            table: self.doc.as_table(),
            path: String::new(),
            seen: Vec::new(),
            all_known: false,
            span: None,
            shape: Shape::Table(shape),
        }
    }

    pub fn report(&self, diagnostic: Diagnostic) {
        self.diags.borrow_mut().push(diagnostic);
    }

    pub fn error(
        &self,
        code: &'static str,
        message: impl Into<String>,
        span: Option<Range<usize>>,
    ) {
        self.report(Diagnostic::error(code, message).at(&self.src, span));
    }

    /// How many errors were reported so far.
    pub fn error_count(&self) -> usize {
        self.diags.borrow().error_count()
    }

    pub fn into_diagnostics(self) -> Diagnostics {
        self.diags.into_inner()
    }
}

/// What keys a table may hold.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// The keys of this table of [`shape`].
    Table(&'static shape::Table),
    /// Names the author chooses, each holding a value of this kind (read with
    /// [`TableReader::entries`]).
    Entries(&'static Kind),
    /// Not declared: a reader asked for a key [`shape`] does not have (a bug the debug
    /// assertions catch). Keys asked for count as known.
    Undeclared,
}

/// Reads one table. Its known keys are those of its [`shape::Table`];
/// [`TableReader::finish`] reports the rest as unknown, suggesting the closest known key.
/// Every key a reader asks for must be in the table's shape, so the JSON Schemas that
/// `eve schema` makes from the shapes list every key the compiler reads.
pub struct TableReader<'a> {
    file: &'a TomlFile,
    table: &'a dyn TableLike,
    path: String,
    seen: Vec<&'static str>,
    /// Set once every entry was taken with [`TableReader::entries`].
    all_known: bool,
    /// Where the table was written (an inline table, a `[[…]]` header); `None` at the root.
    span: Option<Range<usize>>,
    shape: Shape,
}

impl<'a> TableReader<'a> {
    pub fn file(&self) -> &'a TomlFile {
        self.file
    }

    /// Where the table was written, if known.
    pub fn span(&self) -> Option<Range<usize>> {
        self.span.clone()
    }

    /// The dotted path of this table, for messages (`""` at the root).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The whole table as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        table_to_json(self.table)
    }

    /// Reads this table as holding the keys of `shape` from now on: for a file whose
    /// kind shows only in the keys it has (a tool file).
    pub fn set_shape(&mut self, shape: &'static shape::Table) {
        self.shape = Shape::Table(shape);
    }

    /// The kind of the value under `key`, as declared by this table's shape.
    fn kind(&self, key: &str) -> Option<&'static Kind> {
        match self.shape {
            Shape::Table(table) => table.key(key).map(|k| &k.kind),
            Shape::Entries(kind) => Some(kind),
            Shape::Undeclared => None,
        }
    }

    /// The shape of the table found under `key`.
    fn child_shape(&self, key: &str) -> Shape {
        let shape = self.kind(key).and_then(table_of);
        debug_assert!(
            shape.is_some(),
            "`{}` is read as a table, but its shape declares no table there",
            self.key_path(key)
        );
        shape.unwrap_or(Shape::Undeclared)
    }

    fn child(
        &self,
        path: String,
        table: &'a dyn TableLike,
        span: Option<Range<usize>>,
        shape: Shape,
    ) -> Self {
        TableReader {
            file: self.file,
            table,
            path,
            seen: Vec::new(),
            all_known: false,
            span,
            shape,
        }
    }

    /// The tables of an array of tables (`[[turn]]`) or of an array of inline tables
    /// (`turn = [{…}]`), named `key[1]`, `key[2]`… in messages.
    pub fn tables(&mut self, key: &'static str) -> Option<Vec<TableReader<'a>>> {
        self.expect_kind(key, |k| matches!(k, Kind::Tables(_)));
        let item = self.item(key)?;
        let name = |n: usize| format!("{}[{}]", self.key_path(key), n + 1);
        let shape = self.child_shape(key);
        match item {
            Item::ArrayOfTables(array) => Some(
                array
                    .iter()
                    .enumerate()
                    .map(|(n, t)| {
                        self.child(name(n), t, t.span().or_else(|| self.key_span(key)), shape)
                    })
                    .collect(),
            ),
            Item::Value(Value::Array(array)) => {
                let mut out = Vec::new();
                for (n, value) in array.iter().enumerate() {
                    match value.as_inline_table() {
                        Some(t) => out.push(self.child(name(n), t, value.span(), shape)),
                        None => self.file.error(
                            code::WRONG_TYPE,
                            format!(
                                "`{}` must be an array of tables, found {} in it",
                                self.key_path(key),
                                describe_value(value)
                            ),
                            value.span(),
                        ),
                    }
                }
                Some(out)
            }
            _ => {
                self.wrong_type(key, item, "an array of tables");
                None
            }
        }
    }

    /// A reader over an inline table found as a value in the array under `key`, named
    /// `path`.
    pub fn value_table(
        &self,
        key: &str,
        path: String,
        value: &'a Value,
    ) -> Option<TableReader<'a>> {
        let shape = self.child_shape(key);
        value
            .as_inline_table()
            .map(|t| self.child(path, t, value.span(), shape))
    }

    /// The dotted path of `key` inside this table, for messages.
    pub fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// Whether the key is present (does not mark it as known).
    pub fn contains(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    /// The keys present in this table, in file order.
    pub fn keys(&self) -> Vec<&'a str> {
        self.table.iter().map(|(k, _)| k).collect()
    }

    /// The span of a key, or of the whole table when the key is absent.
    pub fn key_span(&self, key: &str) -> Option<Range<usize>> {
        self.table.key(key).and_then(Key::span)
    }

    /// The raw item for `key`, marking it known.
    pub fn item(&mut self, key: &'static str) -> Option<&'a Item> {
        debug_assert!(
            self.kind(key).is_some(),
            "the compiler reads `{}`, which its shape (src/compiler/shape/) does not declare",
            self.key_path(key)
        );
        self.seen.push(key);
        self.table.get(key).filter(|i| !i.is_none())
    }

    /// Checks, in debug builds, that the shape declares `key` with a kind `fits` accepts:
    /// a reader must read a key as the type its shape (and so its JSON Schema) gives it.
    fn expect_kind(&self, key: &str, fits: fn(&Kind) -> bool) {
        debug_assert!(
            self.kind(key).is_none_or(fits),
            "the compiler reads `{}` as another type than its shape declares",
            self.key_path(key)
        );
    }

    /// Marks `key` as dealt with although no shape declares it: the reader reported it
    /// already with a message of its own (`api_key`, which must never be in a file).
    pub fn handled(&mut self, key: &'static str) {
        self.seen.push(key);
    }

    fn span_of(&self, key: &str, item: &Item) -> Option<Range<usize>> {
        item.span().or_else(|| self.key_span(key))
    }

    pub fn wrong_type(&self, key: &str, item: &Item, expected: &str) {
        self.file.error(
            code::WRONG_TYPE,
            format!(
                "`{}` must be {expected}, found {}",
                self.key_path(key),
                describe(item)
            ),
            self.span_of(key, item),
        );
    }

    pub fn string(&mut self, key: &'static str) -> Option<Spanned<String>> {
        self.expect_kind(key, |k| {
            matches!(k, Kind::Str(_) | Kind::Enum(_) | Kind::EnumAnyCase(_))
        });
        let item = self.item(key)?;
        match item.as_str() {
            Some(s) => Some(Spanned {
                value: s.to_string(),
                span: self.span_of(key, item),
            }),
            None => {
                self.wrong_type(key, item, "a string");
                None
            }
        }
    }

    pub fn bool(&mut self, key: &'static str) -> Option<Spanned<bool>> {
        self.expect_kind(key, |k| matches!(k, Kind::Bool | Kind::True));
        let item = self.item(key)?;
        match item.as_bool() {
            Some(b) => Some(Spanned {
                value: b,
                span: self.span_of(key, item),
            }),
            None => {
                self.wrong_type(key, item, "true or false");
                None
            }
        }
    }

    /// A positive integer; zero and negative values are reported as out of range.
    pub fn positive_int(&mut self, key: &'static str) -> Option<Spanned<u64>> {
        self.expect_kind(key, |k| matches!(k, Kind::PositiveInt));
        let item = self.item(key)?;
        let span = self.span_of(key, item);
        match item.as_integer() {
            Some(n) if n > 0 => Some(Spanned {
                value: n as u64,
                span,
            }),
            Some(n) => {
                self.file.error(
                    code::OUT_OF_RANGE,
                    format!("`{}` must be at least 1, found {n}", self.key_path(key)),
                    span,
                );
                None
            }
            None => {
                self.wrong_type(key, item, "a positive integer");
                None
            }
        }
    }

    /// A number; integers are accepted where a float is expected.
    pub fn number(&mut self, key: &'static str) -> Option<Spanned<f64>> {
        self.expect_kind(key, |k| matches!(k, Kind::Number { .. }));
        let item = self.item(key)?;
        let span = self.span_of(key, item);
        let value = item
            .as_float()
            .or_else(|| item.as_integer().map(|i| i as f64));
        match value {
            Some(value) => Some(Spanned { value, span }),
            None => {
                self.wrong_type(key, item, "a number");
                None
            }
        }
    }

    pub fn string_array(&mut self, key: &'static str) -> Option<Vec<Spanned<String>>> {
        self.expect_kind(key, |k| matches!(k, Kind::Strings(_) | Kind::EnumList(_)));
        let item = self.item(key)?;
        let Some(array) = item.as_array() else {
            self.wrong_type(key, item, "an array of strings");
            return None;
        };
        let mut out = Vec::new();
        let mut ok = true;
        for value in array.iter() {
            match value.as_str() {
                Some(s) => out.push(Spanned {
                    value: s.to_string(),
                    span: value.span(),
                }),
                None => {
                    ok = false;
                    self.file.error(
                        code::WRONG_TYPE,
                        format!(
                            "`{}` must be an array of strings, found {} in it",
                            self.key_path(key),
                            describe_value(value)
                        ),
                        value.span(),
                    );
                }
            }
        }
        ok.then_some(out)
    }

    /// A nested table (`[a.b]`, `a.b = …` or an inline table).
    pub fn table(&mut self, key: &'static str) -> Option<TableReader<'a>> {
        self.expect_kind(key, |k| {
            matches!(k, Kind::Table(_) | Kind::Map { .. } | Kind::Settings)
        });
        let item = self.item(key)?;
        self.nested(key, item)
    }

    /// A nested table under a key only known at run time (like `[providers.NAME]`).
    pub fn nested(&self, key: &str, item: &'a Item) -> Option<TableReader<'a>> {
        match item.as_table_like() {
            Some(table) => Some(self.child(
                self.key_path(key),
                table,
                item.span().or_else(|| self.key_span(key)),
                self.child_shape(key),
            )),
            None => {
                self.wrong_type(key, item, "a table");
                None
            }
        }
    }

    /// Every entry of this table, marking them all known.
    pub fn entries(&mut self) -> Vec<(&'a str, &'a Item)> {
        self.all_known = true;
        self.table.iter().collect()
    }

    /// Reports every key that no getter asked for.
    pub fn finish(self) {
        if self.all_known {
            return;
        }
        let known: Vec<&str> = match self.shape {
            Shape::Table(table) => table.names().collect(),
            Shape::Entries(_) | Shape::Undeclared => self.seen.to_vec(),
        };
        for (key, _) in self.table.iter() {
            if known.contains(&key) || self.seen.contains(&key) {
                continue;
            }
            let diagnostic = Diagnostic::error(
                code::UNKNOWN_KEY,
                format!("unknown key `{}`", self.key_path(key)),
            )
            .at(&self.file.src, self.key_span(key))
            .label("unknown key");
            let diagnostic = match suggest::closest(key, known.iter().copied()) {
                Some(s) => diagnostic.help(format!("did you mean `{s}`?")),
                None => diagnostic.note(format!("expected one of {}", list(&known))),
            };
            self.file.report(diagnostic);
        }
    }

    /// Reports every key except `allowed` as unknown, with a reason, instead of a suggestion.
    pub fn reject_all_but(&self, allowed: &[&str], reason: &str, code: &'static str) {
        for (key, _) in self.table.iter() {
            if !allowed.contains(&key) {
                self.file.report(
                    Diagnostic::error(code, format!("`{}` {reason}", self.key_path(key)))
                        .at(&self.file.src, self.key_span(key)),
                );
            }
        }
    }
}

/// The shape of a table held by a value of this kind.
fn table_of(kind: &'static Kind) -> Option<Shape> {
    match kind {
        Kind::Table(table) | Kind::Tables(table) => Some(Shape::Table(table)),
        Kind::Map { values, .. } => Some(Shape::Entries(values)),
        Kind::Settings => Some(Shape::Entries(&Kind::Any)),
        Kind::OneOf(kinds) => kinds.iter().find_map(table_of),
        Kind::Array(kind) => table_of(kind),
        _ => None,
    }
}

/// `a`, `b` or `c`, sorted, for messages.
pub fn list(names: &[&str]) -> String {
    let mut names: Vec<&str> = names.to_vec();
    names.sort_unstable();
    names.dedup();
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn describe(item: &Item) -> &'static str {
    match item {
        Item::Value(v) => describe_value(v),
        Item::Table(_) => "a table",
        Item::ArrayOfTables(_) => "an array of tables",
        Item::None => "nothing",
    }
}

pub fn describe_value(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "an array",
        Value::InlineTable(_) => "a table",
    }
}

/// Converts a TOML item to JSON (for input schemas and settings). Dates become strings.
pub fn to_json(item: &Item) -> serde_json::Value {
    match item {
        Item::None => serde_json::Value::Null,
        Item::Value(v) => value_to_json(v),
        Item::Table(t) => table_to_json(t),
        Item::ArrayOfTables(a) => {
            serde_json::Value::Array(a.iter().map(|t| table_to_json(t)).collect())
        }
    }
}

fn table_to_json(table: &dyn TableLike) -> serde_json::Value {
    serde_json::Value::Object(
        table
            .iter()
            .map(|(k, v)| (k.to_string(), to_json(v)))
            .collect(),
    )
}

/// Converts a TOML value to JSON.
pub fn value_to_json(value: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        Value::String(s) => J::String(s.value().clone()),
        Value::Integer(i) => J::from(*i.value()),
        Value::Float(f) => serde_json::Number::from_f64(*f.value()).map_or(J::Null, J::Number),
        Value::Boolean(b) => J::Bool(*b.value()),
        Value::Datetime(d) => J::String(d.value().to_string()),
        Value::Array(a) => J::Array(a.iter().map(value_to_json).collect()),
        Value::InlineTable(t) => table_to_json(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::shape::{Key, STRING, Table};
    use pretty_assertions::assert_eq;

    static ABC: Table = Table::of(&[
        Key::new("a", Kind::Str(STRING), "a"),
        Key::new("b", Kind::PositiveInt, "b"),
        Key::new("c", Kind::Strings(STRING), "c"),
    ]);

    fn read(text: &str, f: impl FnOnce(&mut TableReader<'_>)) -> Vec<(String, Option<usize>)> {
        read_as(&shape::agent::AGENT, text, f)
    }

    fn read_as(
        shape: &'static Table,
        text: &str,
        f: impl FnOnce(&mut TableReader<'_>),
    ) -> Vec<(String, Option<usize>)> {
        let file = TomlFile::parse(SourceFile::new("a.toml", text)).unwrap();
        let mut root = file.root(shape);
        f(&mut root);
        root.finish();
        file.into_diagnostics()
            .into_iter()
            .map(|d| (d.message, d.line))
            .collect()
    }

    #[test]
    fn reports_every_unknown_key_with_its_line() {
        let diags = read("nmae = 1\nmodel = \"x\"\n[limits]\nmax_step = 2\n", |t| {
            t.string("name");
            t.string("model");
            if let Some(mut limits) = t.table("limits") {
                limits.positive_int("max_steps");
                limits.finish();
            }
        });
        assert_eq!(
            diags,
            vec![
                ("unknown key `limits.max_step`".into(), Some(4)),
                ("unknown key `nmae`".into(), Some(1)),
            ]
        );
    }

    #[test]
    fn reports_wrong_types_and_ranges() {
        let diags = read_as(&ABC, "a = 1\nb = 0\nc = [1, \"x\"]\n", |t| {
            t.string("a");
            t.positive_int("b");
            t.string_array("c");
        });
        assert_eq!(
            diags,
            vec![
                ("`a` must be a string, found an integer".into(), Some(1)),
                ("`b` must be at least 1, found 0".into(), Some(2)),
                (
                    "`c` must be an array of strings, found an integer in it".into(),
                    Some(3)
                ),
            ]
        );
    }

    #[test]
    fn known_keys_and_suggestions_come_from_the_shape() {
        // `model` is known although this reader does not ask for it: the shape says so.
        let diags = read("model = \"x\"\ndescriptoin = \"d\"\n", |t| {
            t.string("name");
        });
        assert_eq!(diags, vec![("unknown key `descriptoin`".into(), Some(2))]);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "which its shape (src/compiler/shape/) does not declare")]
    fn reading_a_key_the_shape_does_not_declare_is_a_bug() {
        read_as(&ABC, "d = 1\n", |t| {
            t.string("d");
        });
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "as another type than its shape declares")]
    fn reading_a_key_as_another_type_is_a_bug() {
        read_as(&ABC, "a = 1\n", |t| {
            t.bool("a");
        });
    }

    #[test]
    fn syntax_errors_carry_a_position() {
        let err = TomlFile::parse(SourceFile::new("a.toml", "a = 1\nb = \n"))
            .err()
            .unwrap();
        assert_eq!((err.code, err.line), (code::TOML_SYNTAX, Some(2)));
    }

    #[test]
    fn converts_tables_to_json() {
        let file = TomlFile::parse(SourceFile::new(
            "a.toml",
            "[s]\ntype = \"object\"\nproperties.x = { type = \"integer\", minimum = 1.5 }\n",
        ))
        .unwrap();
        let json = to_json(file.doc.as_table().get("s").unwrap());
        assert_eq!(
            json,
            serde_json::json!({"type": "object", "properties": {"x": {"type": "integer", "minimum": 1.5}}})
        );
    }
}
