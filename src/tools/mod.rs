//! Tools the model can call: the built-in catalog, the registry a run offers, and the executors.

pub mod arguments;
pub mod beneath;
pub mod builtin;
pub mod custom;
pub mod egress;
mod exec;
pub mod files;
pub mod html;
pub mod output;
pub mod process;
pub mod registry;
pub mod replace;
pub mod state;
pub mod stub;
pub mod walk;
pub mod workspace;

pub use exec::{Catalog, Spawner, ToolContext, ToolExec, ToolOutput, parse_input};
pub use registry::Registry;
