//! Tools the model can call: the built-in catalog.

pub mod catalog;
