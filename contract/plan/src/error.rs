//! Errors raised while reading, writing or checking a plan.

use std::path::PathBuf;

/// Everything that can go wrong with a plan directory.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file at fault.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file exists but its content is not what the format says.
    #[error("{path}: {message}")]
    Format {
        /// The file at fault.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// The plan was written by an incompatible version of the toolkit.
    #[error("{path}: plan format {found} is not supported (this build reads {expected}); re-run `switch-ctl plan`")]
    Version {
        /// The manifest.
        path: PathBuf,
        /// Version found in the manifest.
        found: String,
        /// Version this build reads.
        expected: String,
    },
    /// A plan's arrays or manifest are structurally inconsistent (a planner bug, or a hand
    /// edit with the digests recomputed): found by [`crate::Plan::check_structure`], which
    /// every reader runs at load, before a value is used as an index or put on the wire.
    #[error("{path}: {field}: {message}; the plan is inconsistent (a planner bug or an edit after planning), re-plan with `switch-ctl plan`")]
    Structure {
        /// The file at fault (relative to the plan directory for a plan not read from disk).
        path: PathBuf,
        /// The field or column at fault (`shape`, `frac_bits`, `fanout_ptr[3]`, ...).
        field: String,
        /// What is wrong, naming the block, vertex or row.
        message: String,
    },
    /// An invariant of the plan does not hold (see [`crate::verify`]).
    #[error("plan invariant violated: {0}")]
    Invariant(String),
    /// The requested configuration cannot be planned.
    #[error("{0}")]
    Config(String),
}

impl PlanError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        PlanError::Io {
            path: path.into(),
            source,
        }
    }

    /// A [`PlanError::Structure`] of a plan read from `dir`: its path made the file's full
    /// path (other errors as they are).
    pub(crate) fn under(self, dir: &std::path::Path) -> Self {
        match self {
            PlanError::Structure {
                path,
                field,
                message,
            } => PlanError::Structure {
                path: dir.join(path),
                field,
                message,
            },
            other => other,
        }
    }

    pub(crate) fn format(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        PlanError::Format {
            path: path.into(),
            message: message.into(),
        }
    }
}
