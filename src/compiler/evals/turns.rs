//! `[[turn]]`: what each turn sends (a message, an answer, an approval or a denial),
//! and what it expects.

use toml_edit::Item;

use super::expect::read_expect;
use super::scope::Scope;
use crate::compiler::diagnostic::{Diagnostic, code};
use crate::compiler::toml_reader::TableReader;
use crate::manifest::eval::{Turn, TurnInput};

pub(super) fn read_turns(
    root: &TableReader<'_>,
    tables: Vec<TableReader<'_>>,
    scope: &Scope<'_, '_>,
) -> Option<Vec<Turn>> {
    let toml = root.file();
    let mut turns = Vec::new();
    let mut ok = true;
    if tables.is_empty() {
        toml.report(
            Diagnostic::error(code::EVAL_TURNS, "`turn` is empty")
                .at(&toml.src, root.key_span("turn"))
                .help("give each `[[turn]]` a `send = \"…\"`"),
        );
        return None;
    }
    for (n, mut table) in tables.into_iter().enumerate() {
        let present: Vec<&str> = ["send", "answer", "approve", "deny"]
            .into_iter()
            .filter(|k| table.contains(k))
            .collect();
        let send = table.string("send");
        let answer = table.string("answer");
        let approve = table.bool("approve");
        let deny = read_deny(&mut table);
        let expect = table
            .table("expect")
            .map(|t| read_expect(t, scope))
            .unwrap_or_default();
        let input = match present.as_slice() {
            [_] => match (send, answer, approve, deny) {
                (Some(send), ..) => Some(TurnInput::Send(send.value)),
                (_, Some(answer), ..) => Some(TurnInput::Answer(answer.value)),
                (_, _, Some(approve), _) if approve.value => Some(TurnInput::Approve),
                (_, _, Some(approve), _) => {
                    toml.report(
                        Diagnostic::error(code::EVAL_TURNS, "`approve` can only be `true`")
                            .at(&toml.src, approve.span)
                            .help("to refuse the call, write `deny = true` (or `deny = \"why\"`)"),
                    );
                    None
                }
                (_, _, _, Some(deny)) => deny,
                _ => None,
            },
            [] => {
                toml.report(
                    Diagnostic::error(
                        code::EVAL_TURNS,
                        format!("`{}` says nothing to send", table.path()),
                    )
                    .at(&toml.src, table.span())
                    .note("a turn has one of `send` (a message), `answer` (to a question), `approve = true` or `deny` (a call that waits for approval)"),
                );
                None
            }
            many => {
                toml.report(
                    Diagnostic::error(
                        code::EVAL_TURNS,
                        format!(
                            "`{}` has {}: a turn does one thing",
                            table.path(),
                            many.iter()
                                .map(|k| format!("`{k}`"))
                                .collect::<Vec<_>>()
                                .join(" and ")
                        ),
                    )
                    .at(&toml.src, table.key_span(many[1]))
                    .help("split it into one `[[turn]]` each"),
                );
                None
            }
        };
        if n == 0
            && input
                .as_ref()
                .is_some_and(|i| !matches!(i, TurnInput::Send(_)))
        {
            toml.report(
                Diagnostic::error(code::EVAL_TURNS, "the first turn must `send` a message")
                    .at(&toml.src, table.span())
                    .note("`answer`, `approve` and `deny` resume a turn that waits for a person, so something must start it first"),
            );
            ok = false;
        }
        table.finish();
        match input {
            Some(input) => turns.push(Turn { input, expect }),
            None => ok = false,
        }
    }
    ok.then_some(turns)
}

/// `deny = true` or `deny = "why"`.
fn read_deny(table: &mut TableReader<'_>) -> Option<Option<TurnInput>> {
    let item = table.item("deny")?;
    match item {
        Item::Value(toml_edit::Value::Boolean(b)) if *b.value() => {
            Some(Some(TurnInput::Deny(None)))
        }
        Item::Value(toml_edit::Value::String(s)) => {
            Some(Some(TurnInput::Deny(Some(s.value().clone()))))
        }
        _ => {
            table.wrong_type("deny", item, "`true` or the reason for denying");
            Some(None)
        }
    }
}
