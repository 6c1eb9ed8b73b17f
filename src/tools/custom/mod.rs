//! The tools an author declares in `tools/<slug>.toml`: a command to run or an HTTP request.

pub mod arguments;
pub mod command;
pub mod http;
