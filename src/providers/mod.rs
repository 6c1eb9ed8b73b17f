//! Model providers: decoding their streamed replies into provider-neutral events.

pub mod anthropic;
pub mod event;
pub mod openai;
