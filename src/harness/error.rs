//! What the harness's public calls fail with.

/// Why a harness call failed. Its text (`Display`) is what a person is shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HarnessError {
    /// The session could not be set up: its instructions do not render for it, or a
    /// connection's server could not be started.
    #[error("{0}")]
    Setup(String),
    /// An answer or a cancellation came for a session that waits for none.
    #[error("this session is not waiting for an answer")]
    NotWaiting,
    /// The answer is not of the kind the parked request waits for.
    #[error("the session waits for {wanted}")]
    WrongAnswer {
        /// What it waits for, as the person gives it (`an answer (--answer "…")`).
        wanted: &'static str,
    },
    /// Compacting the history failed (the summariser's call, or its reply).
    #[error("{0}")]
    Compaction(String),
}

impl From<HarnessError> for String {
    fn from(error: HarnessError) -> String {
        error.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::HarnessError;

    #[test]
    fn each_error_reads_as_the_person_is_told_it() {
        assert_eq!(
            HarnessError::NotWaiting.to_string(),
            "this session is not waiting for an answer"
        );
        assert_eq!(
            HarnessError::WrongAnswer {
                wanted: "an approval (--approve, or --deny)"
            }
            .to_string(),
            "the session waits for an approval (--approve, or --deny)"
        );
        let setup = HarnessError::Setup("cannot render the instructions: x".into());
        assert_eq!(String::from(setup), "cannot render the instructions: x");
    }
}
