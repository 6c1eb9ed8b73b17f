//! The types that cross module boundaries: events, session records, the conversation.
//!
//! This module depends on nothing else in eve; the compiler's manifest aside, every
//! other module that exchanges data points at it.

pub mod event;
pub mod journal;
pub mod message;
pub mod record;
pub mod turn;

pub use event::{
    Action, EndReason, Event, EventKind, InputKind, InputRequest, Meta, Resolution, Unavailable,
};
pub use journal::{Journal, Observer};
pub use message::{Image, Message, ToolCall, ToolKind, ToolResult, ToolSpec, Usage};
pub use record::{Record, Stamp, StampRecord, Todo, TodoStatus};
pub use turn::{Parked, Snapshot, TurnOutcome};
