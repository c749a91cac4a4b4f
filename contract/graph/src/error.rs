//! Errors of graph input, each naming the file and the line or array index at fault.

use std::path::PathBuf;

/// Everything that can go wrong while reading or generating a graph.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A line of an edge list is not `u v`.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// File.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What was wrong.
        message: String,
    },
    /// A `.npy` file is malformed or of an unsupported kind.
    #[error("{path}: {message}")]
    Npy {
        /// File.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// A `.npy` header claims more data than the file holds: refused before anything is
    /// allocated for it.
    #[error("{path}: truncated data or a wrong header: header field '{field}' {shape} of dtype {dtype} claims {claimed} of data, but the file holds only {limit} bytes after its header (the limit)")]
    NpyShape {
        /// File.
        path: PathBuf,
        /// The header field at fault (`shape`).
        field: &'static str,
        /// The shape as written in the header.
        shape: String,
        /// The dtype the header's `descr` names (NumPy's name).
        dtype: &'static str,
        /// The bytes the shape and dtype claim.
        claimed: String,
        /// The bytes the file holds after its header.
        limit: u64,
    },
    /// A feature value is NaN or infinite (after conversion to float32).
    #[error("{path}: feature [{row}, {col}] (flat index {index}) is {value}; features must be finite numbers (the first bad value is named)")]
    NonFinite {
        /// File.
        path: PathBuf,
        /// Row (vertex) of the first bad value.
        row: usize,
        /// Column of the first bad value.
        col: usize,
        /// Flat (row-major) index of the first bad value.
        index: usize,
        /// The value (NaN, inf or -inf).
        value: f32,
    },
    /// A vertex id is outside the allowed range.
    #[error("{path}:{location}: vertex id {id} is out of range (must be below {limit})")]
    OutOfRange {
        /// File.
        path: PathBuf,
        /// `line N` or `row N` of an array.
        location: String,
        /// The id.
        id: i128,
        /// Exclusive upper bound.
        limit: u64,
    },
    /// A vertex id that is not an integer from 0 to 2^64 - 1 (negative, or too large).
    #[error("{path}:{location}: vertex id {id} is out of range (ids are integers from 0 to 18446744073709551615)")]
    IdOutOfRange {
        /// File.
        path: PathBuf,
        /// The line number of a text file, or `row N` of an array.
        location: String,
        /// The id as written.
        id: String,
    },
    /// The ids number more vertices than 32-bit vertex ids can (at most 2^32 - 1).
    #[error("{path}: {vertices} vertices (largest id {max_id}) are more than the 4294967295 that 32-bit vertex ids can number")]
    TooManyVertices {
        /// File.
        path: PathBuf,
        /// Vertices the ids imply (after compaction, if any).
        vertices: u128,
        /// The largest id in the file.
        max_id: u64,
    },
    /// Nothing is left after cleaning.
    #[error("{source_name}: the graph has no edges ({detail}); SwitchGNN needs at least one edge")]
    Empty {
        /// File or spec.
        source_name: String,
        /// What was read and dropped.
        detail: String,
    },
    /// A generator spec or source string is malformed.
    #[error("{0}")]
    Spec(String),
}

impl GraphError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        GraphError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn npy(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        GraphError::Npy {
            path: path.into(),
            message: message.into(),
        }
    }
}
