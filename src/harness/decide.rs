//! The decision after a step (and before the first one): go on, park, or end the turn
//! with a reason. A pure function of what the step did and where the turn stands.

use crate::protocol::{EndReason, InputRequest};

/// How a step ended, as far as the decision cares.
#[derive(Debug, Clone, PartialEq)]
pub enum StepEnd {
    /// The model replied and its tool calls (if any) ran. `wants_more`: it made tool
    /// calls, or the provider paused the reply and wants it back to go on.
    Replied { wants_more: bool },
    /// A call needs a person nobody here can ask: the turn waits for them.
    Parked(InputRequest),
    /// The person interrupted the step (Ctrl-C, a cancel request).
    Aborted,
    /// The model call failed for good, or the session log could not be written.
    Failed(String),
}

/// What the turn does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Another step.
    Continue,
    /// Park the turn until the request is answered.
    Park(InputRequest),
    /// End the turn for this reason.
    End(EndReason),
    /// End the turn with this error.
    Fail(String),
}

/// Where the turn stands when the decision is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Standing {
    /// Model calls made in this turn.
    pub steps: u64,
    /// Whether a step of this turn hit the output token limit (sticky).
    pub hit_max_tokens: bool,
    /// Input tokens used by the whole session so far.
    pub session_input_tokens: u64,
    /// Whether the turn was asked to stop.
    pub cancelled: bool,
}

/// The limits the decision enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Model calls allowed per turn.
    pub max_steps: u64,
    /// Input tokens allowed per session.
    pub max_input_tokens_per_session: Option<u64>,
}

/// Decides what follows `step` (`None`: before the turn's first step, or before a
/// resumed turn goes on).
///
/// A parked request wins over everything (its calls have not run); then a cancel; a
/// reply that asks for nothing more ends the turn, as `max_tokens` when any step of
/// the turn hit the output limit; only then do the limits on the next step apply.
pub fn decide(step: Option<&StepEnd>, standing: &Standing, limits: &Limits) -> Next {
    match step {
        Some(StepEnd::Parked(request)) => return Next::Park(request.clone()),
        Some(StepEnd::Failed(error)) => return Next::Fail(error.clone()),
        Some(StepEnd::Aborted) => return Next::End(EndReason::Aborted),
        Some(StepEnd::Replied { .. }) | None => {}
    }
    if standing.cancelled {
        return Next::End(EndReason::Aborted);
    }
    if let Some(StepEnd::Replied { wants_more: false }) = step {
        return Next::End(if standing.hit_max_tokens {
            EndReason::MaxTokens
        } else {
            EndReason::Completed
        });
    }
    if standing.steps >= limits.max_steps {
        return Next::End(EndReason::MaxSteps);
    }
    if let Some(limit) = limits.max_input_tokens_per_session
        && standing.session_input_tokens >= limit
    {
        return Next::End(EndReason::MaxInputTokens);
    }
    Next::Continue
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::InputKind;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn request(kind: InputKind) -> InputRequest {
        InputRequest {
            request_id: "req_1".into(),
            call_id: "call_1".into(),
            tool: "deploy".into(),
            input: json!({}),
            kind,
        }
    }

    #[test]
    fn every_end_reason_comes_from_the_table() {
        let limits = Limits {
            max_steps: 3,
            max_input_tokens_per_session: Some(1000),
        };
        let at = |steps: u64| Standing {
            steps,
            ..Standing::default()
        };
        let question = request(InputKind::Question {
            question: "Which?".into(),
            options: vec![],
        });
        let approval = request(InputKind::Approval);
        let more = StepEnd::Replied { wants_more: true };
        let done = StepEnd::Replied { wants_more: false };
        let cases: Vec<(&str, Option<StepEnd>, Standing, Next)> = vec![
            ("a fresh turn starts", None, at(0), Next::Continue),
            (
                "tool results go on",
                Some(more.clone()),
                at(1),
                Next::Continue,
            ),
            (
                "text only completes",
                Some(done.clone()),
                at(1),
                Next::End(EndReason::Completed),
            ),
            (
                "a pause goes on like tool calls",
                Some(more.clone()),
                at(2),
                Next::Continue,
            ),
            (
                "max_tokens is sticky after a later normal step",
                Some(done.clone()),
                Standing {
                    steps: 2,
                    hit_max_tokens: true,
                    ..Standing::default()
                },
                Next::End(EndReason::MaxTokens),
            ),
            (
                "max_steps stops a turn that wants more",
                Some(more.clone()),
                at(3),
                Next::End(EndReason::MaxSteps),
            ),
            (
                "the last allowed step may still complete",
                Some(done.clone()),
                at(3),
                Next::End(EndReason::Completed),
            ),
            (
                "a resumed turn at its limit stops",
                None,
                at(3),
                Next::End(EndReason::MaxSteps),
            ),
            (
                "the session's input budget stops the next step",
                Some(more.clone()),
                Standing {
                    steps: 1,
                    session_input_tokens: 1000,
                    ..Standing::default()
                },
                Next::End(EndReason::MaxInputTokens),
            ),
            (
                "a session over budget does not start a turn",
                None,
                Standing {
                    session_input_tokens: 5000,
                    ..Standing::default()
                },
                Next::End(EndReason::MaxInputTokens),
            ),
            (
                "a parked approval parks",
                Some(StepEnd::Parked(approval.clone())),
                at(1),
                Next::Park(approval.clone()),
            ),
            (
                "a parked question parks, even when cancelled",
                Some(StepEnd::Parked(question.clone())),
                Standing {
                    steps: 1,
                    cancelled: true,
                    ..Standing::default()
                },
                Next::Park(question.clone()),
            ),
            (
                "an aborted step aborts",
                Some(StepEnd::Aborted),
                at(1),
                Next::End(EndReason::Aborted),
            ),
            (
                "a cancel after a step aborts the turn",
                Some(more.clone()),
                Standing {
                    steps: 1,
                    cancelled: true,
                    ..Standing::default()
                },
                Next::End(EndReason::Aborted),
            ),
            (
                "a cancel beats completion",
                Some(done),
                Standing {
                    steps: 1,
                    cancelled: true,
                    ..Standing::default()
                },
                Next::End(EndReason::Aborted),
            ),
            (
                "a failed step fails the turn",
                Some(StepEnd::Failed("boom".into())),
                at(1),
                Next::Fail("boom".into()),
            ),
        ];
        for (name, step, standing, expected) in cases {
            assert_eq!(
                decide(step.as_ref(), &standing, &limits),
                expected,
                "{name}"
            );
        }
    }

    #[test]
    fn without_a_session_budget_only_steps_count() {
        let limits = Limits {
            max_steps: 50,
            max_input_tokens_per_session: None,
        };
        let standing = Standing {
            steps: 4,
            session_input_tokens: u64::MAX,
            ..Standing::default()
        };
        assert_eq!(
            decide(
                Some(&StepEnd::Replied { wants_more: true }),
                &standing,
                &limits
            ),
            Next::Continue
        );
    }
}
