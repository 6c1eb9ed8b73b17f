//! Shell command lines as `bash`'s allow and deny rules see them: the line parsed into
//! every command it would run, and the pattern language the rules are written in.

pub mod line;
pub mod pattern;
