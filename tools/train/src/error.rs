//! [`TrainError`]: every way training can fail to start or go on, one variant per kind of
//! failure in its groups ([`InputError`], [`ShapeMismatch`], [`ExchangeError`]). Each variant's
//! text ([`Display`](std::fmt::Display)) is the message for the user and says what to fix.
//! Errors that wrap another (a file's [`GraphError`], a socket's [`io::Error`]) include its text
//! in their own and are not chained as a [`source`](std::error::Error::source), so the message
//! is printed once.

use std::io;
use std::path::PathBuf;

use sgnn_graph::GraphError;
use sgnn_ipc::Reply;

use crate::data::MAX_CLASSES;

/// Why training could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A missing or malformed input (file, flag); boxed, so a `Result` of training stays small.
    #[error(transparent)]
    Input(Box<InputError>),
    /// Arrays of the wrong shape reached an operation.
    #[error("shape mismatch: {0}")]
    Shape(ShapeMismatch),
    /// A label is outside the classes training can allocate ([`crate::data::MAX_CLASSES`]).
    #[error("{path}: label {label} at row {row} is out of range: labels are -1 (unlabelled) or classes 0..{limit} (the limit: below the number of vertices and below 2^20)")]
    Label {
        /// The labels file.
        path: PathBuf,
        /// Row of the first bad label.
        row: usize,
        /// The label as written.
        label: i128,
        /// Exclusive upper bound on labels.
        limit: u64,
    },
    /// The exchange failed (a daemon, a worker).
    #[error("exchange: {0}")]
    Exchange(ExchangeError),
}

impl From<InputError> for TrainError {
    fn from(e: InputError) -> Self {
        TrainError::Input(Box::new(e))
    }
}

impl From<ShapeMismatch> for TrainError {
    fn from(e: ShapeMismatch) -> Self {
        TrainError::Shape(e)
    }
}

impl From<ExchangeError> for TrainError {
    fn from(e: ExchangeError) -> Self {
        TrainError::Exchange(e)
    }
}

/// A missing or malformed input: a flag, a dataset directory, a shard.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// `--model` is not a model training knows.
    #[error("--model {given}: use gcn or sage")]
    UnknownModel {
        /// The name given.
        given: String,
    },
    /// `--graph` is neither `sbm:...`, a directory nor a dataset's name.
    #[error("--graph {spec}: not `sbm:...`, not a directory, and no dataset of that name in {} (a labelled graph is a directory with edges.txt.gz, features.npy and labels.npy; docs/formats.md)", .datasets.display())]
    UnknownGraph {
        /// The spec given.
        spec: String,
        /// The datasets directory searched.
        datasets: PathBuf,
    },
    /// A dataset directory without one of the files a labelled graph needs.
    #[error("{}: missing {name} (a labelled graph needs edges.txt.gz, features.npy and labels.npy; docs/formats.md)", .dir.display())]
    MissingFile {
        /// The directory.
        dir: PathBuf,
        /// The missing file.
        name: &'static str,
    },
    /// A graph, features or array file that could not be read (its own message names it).
    #[error("{0}")]
    Graph(GraphError),
    /// A shard's file that could not be read.
    #[error("{}: {reason}", .path.display())]
    ShardFile {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: GraphError,
    },
    /// A shard's array that should hold integers.
    #[error("{}: not integers", .path.display())]
    NotIntegers {
        /// The file.
        path: PathBuf,
    },
    /// A shard's `classes.txt` that is missing or not a number.
    #[error("{}: missing or not a number", .path.display())]
    ClassCount {
        /// The file.
        path: PathBuf,
    },
    /// A shard with more classes than training allocates.
    #[error("{}: {classes} classes, more than the limit {MAX_CLASSES} (2^20; docs/formats.md)", .path.display())]
    TooManyClasses {
        /// `classes.txt`.
        path: PathBuf,
        /// The classes it says.
        classes: usize,
    },
    /// A shard whose files disagree on the number of rows.
    #[error("{}: the files disagree on the number of rows ({vertices} vertices)", .dir.display())]
    ShardRows {
        /// The shard directory.
        dir: PathBuf,
        /// Vertices of `vertices.npy`.
        vertices: usize,
    },
    /// A shard that could not be written.
    #[error("writing {}: {reason}", .dir.display())]
    WriteShard {
        /// The shard directory.
        dir: PathBuf,
        /// Why.
        reason: io::Error,
    },
    /// Labels that are not integers.
    #[error("{}: labels must be integers, found {dtype}", .path.display())]
    LabelType {
        /// `labels.npy`.
        path: PathBuf,
        /// The array's element type.
        dtype: &'static str,
    },
    /// Features and labels of different lengths.
    #[error("{} has {rows} rows but {} has {labels} labels: one row and one label per vertex", .features.display(), .labels_path.display())]
    LabelCount {
        /// `features.npy`.
        features: PathBuf,
        /// Its rows.
        rows: usize,
        /// `labels.npy`.
        labels_path: PathBuf,
        /// Its labels.
        labels: usize,
    },
    /// Edges naming vertices that have no label.
    #[error("{} has vertex ids up to {max_vertex}, but {} has only {labels} labels", .edges.display(), .labels_path.display())]
    EdgesBeyondLabels {
        /// `edges.txt.gz`.
        edges: PathBuf,
        /// The largest vertex id of the edges.
        max_vertex: usize,
        /// `labels.npy`.
        labels_path: PathBuf,
        /// Its labels.
        labels: usize,
    },
    /// Labels of fewer than two classes.
    #[error("{}: fewer than two classes", .path.display())]
    FewClasses {
        /// `labels.npy`.
        path: PathBuf,
    },
    /// A mask of another length than the graph's vertices.
    #[error("{}: {entries} entries, but the graph has {vertices} vertices", .path.display())]
    MaskLength {
        /// The mask file.
        path: PathBuf,
        /// Its entries.
        entries: usize,
        /// Vertices of the graph.
        vertices: usize,
    },
    /// A mask that selects no vertex.
    #[error("{}: the mask selects no vertex", .path.display())]
    EmptyMask {
        /// The mask file.
        path: PathBuf,
    },
    /// A mask that selects unlabelled vertices.
    #[error("{}: the {mask} mask selects unlabelled vertices", .dir.display())]
    MaskSelectsUnlabelled {
        /// The dataset directory.
        dir: PathBuf,
        /// `train`, `val` or `test`.
        mask: &'static str,
    },
    /// A malformed `sbm:` graph spec.
    #[error("sbm:{spec}: {problem}")]
    Sbm {
        /// The spec after `sbm:`.
        spec: String,
        /// What is wrong with it.
        problem: SbmProblem,
    },
    /// A recipe with zero layers, hidden units or epochs.
    #[error("--layers, --hidden and --epochs must be at least 1")]
    ZeroSize,
    /// A dropout that is not a probability in `[0, 1)`.
    #[error("--dropout is a probability in [0, 1), got {dropout}")]
    Dropout {
        /// The dropout given.
        dropout: f32,
    },
    /// A training mask that selects none of this worker's vertices.
    #[error("the training mask selects no vertex")]
    NoTrainingVertex,
}

/// What is wrong with an `sbm:` spec ([`InputError::Sbm`]).
#[derive(Debug, thiserror::Error)]
pub enum SbmProblem {
    /// `dim` or `signal` is not a number >= 0.
    #[error("{key}={value} is not a number >= 0")]
    NotANumber {
        /// The key.
        key: &'static str,
        /// Its value.
        value: String,
    },
    /// The graph's keys are wrong (`sgnn_graph::sbm::SbmSpec::parse`).
    #[error("{0} (and dim, signal)")]
    Graph(GraphError),
    /// `dim=0`.
    #[error("needs dim >= 1")]
    ZeroDim,
}

/// Arrays of the wrong shape.
#[derive(Debug, thiserror::Error)]
pub enum ShapeMismatch {
    /// A neighbour sum of another number of rows than the graph's vertices.
    #[error("neighbour sum of {rows} rows on a graph of {vertices} vertices")]
    NeighbourSum {
        /// Rows given.
        rows: usize,
        /// Vertices of the graph.
        vertices: usize,
    },
    /// Sums that do not make the expected matrix.
    #[error("{0}")]
    Sums(ndarray::ShapeError),
}

/// Why the exchange failed: the coordinator, a worker, or the daemon.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// Connecting to the coordinator failed.
    #[error("connecting to the coordinator {addr}: {reason}")]
    Connect {
        /// The coordinator's address.
        addr: String,
        /// Why.
        reason: io::Error,
    },
    /// A socket operation failed.
    #[error("{what}: {reason}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// Why.
        reason: io::Error,
    },
    /// A coordinator message whose length is not a multiple of 8.
    #[error("a coordinator message of {bytes} bytes is not a list of float64")]
    NotFloat64s {
        /// Its length.
        bytes: usize,
    },
    /// The coordinator link closed.
    #[error("the coordinator link closed")]
    CoordinatorClosed,
    /// The coordinator answered a reduction with another number of values.
    #[error("the coordinator answered {got} values to {sent}")]
    ReductionLength {
        /// Values answered.
        got: usize,
        /// Values sent.
        sent: usize,
    },
    /// The coordinator was stopped before every worker joined.
    #[error("stopped before every worker joined")]
    StoppedBeforeJoin,
    /// Workers that did not join in time.
    #[error("workers {} did not join the coordinator within {secs:.0} s", list(.missing))]
    JoinTimeout {
        /// The workers missing.
        missing: Vec<usize>,
        /// The join timeout, seconds.
        secs: f64,
    },
    /// The coordinator was stopped.
    #[error("stopped")]
    Stopped,
    /// Every worker link closed.
    #[error("every worker link closed")]
    LinksClosed,
    /// A worker's link closed before it said it was done.
    #[error("worker {worker} died ({why}) before the end of training")]
    WorkerDied {
        /// The worker.
        worker: usize,
        /// How its link closed.
        why: String,
    },
    /// A worker's link could not be written.
    #[error("worker {worker} died (writing to it: {reason})")]
    WorkerUnwritable {
        /// The worker.
        worker: usize,
        /// Why.
        reason: io::Error,
    },
    /// A worker started a reduction while its previous one was pending.
    #[error("worker {worker} sent a second reduction before the first ended")]
    SecondReduction {
        /// The worker.
        worker: usize,
    },
    /// A worker reduced another kind or length than worker 0.
    #[error(
        "worker {worker} reduced something else than worker 0 (the workers run different recipes)"
    )]
    ReductionMismatch {
        /// The worker.
        worker: usize,
    },
    /// A worker sent a message kind the coordinator does not know.
    #[error("worker {worker} sent an unknown message kind {kind}")]
    UnknownKind {
        /// The worker.
        worker: usize,
        /// The kind.
        kind: u8,
    },
    /// A value to exchange that is not finite.
    #[error("layer {layer} {}: a value is not finite (training diverged: lower --lr)", if *.backward { "backward" } else { "forward" })]
    NotFinite {
        /// The layer.
        layer: u32,
        /// Whether in the backward pass.
        backward: bool,
    },
    /// No daemon listens on the socket.
    #[error("no daemon on {} after {secs:.0} s ({reason}); is `sgnn-hostd --serve {}` running?", .path.display(), .path.display())]
    NoDaemon {
        /// The socket.
        path: PathBuf,
        /// Seconds waited.
        secs: f64,
        /// The last connection error.
        reason: io::Error,
    },
    /// The daemon answered with an error.
    #[error("the daemon: {0}")]
    Daemon(String),
    /// The daemon closed the socket.
    #[error("the daemon closed the socket (it exited: see its log)")]
    DaemonClosed,
    /// The daemon answered a request with something else than its answer.
    #[error("the daemon answered {request} with {}", reply_text(.reply))]
    UnexpectedReply {
        /// The request (`HELLO`, `CLOSE`, `PROPAGATE`).
        request: &'static str,
        /// What the daemon answered (`None`: nothing, the socket closed).
        reply: Option<Reply>,
    },
}

fn list(workers: &[usize]) -> String {
    workers
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A reply as the user should see it: sums by their shape, not their values.
fn reply_text(reply: &Option<Reply>) -> String {
    match reply {
        Some(Reply::Sums { rows, dim, .. }) => format!("Some(\"SUMS of {rows}x{dim}\")"),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph_error() -> GraphError {
        sgnn_graph::npy::read_npy(std::path::Path::new("/nonexistent/x.npy")).unwrap_err()
    }

    /// The texts are those of the `String` errors these variants replaced, word for word.
    #[test]
    fn messages_are_the_old_strings() {
        let ge = graph_error().to_string();
        let io = || io::Error::other("boom");
        let cases: Vec<(TrainError, String)> = vec![
            (
                InputError::UnknownModel { given: "gat".into() }.into(),
                "--model gat: use gcn or sage".into(),
            ),
            (
                InputError::UnknownGraph { spec: "cora".into(), datasets: "data".into() }.into(),
                "--graph cora: not `sbm:...`, not a directory, and no dataset of that name in data (a labelled graph is a directory with edges.txt.gz, features.npy and labels.npy; docs/formats.md)".into(),
            ),
            (
                InputError::MissingFile { dir: "d".into(), name: "labels.npy" }.into(),
                "d: missing labels.npy (a labelled graph needs edges.txt.gz, features.npy and labels.npy; docs/formats.md)".into(),
            ),
            (InputError::Graph(graph_error()).into(), ge.clone()),
            (
                InputError::ShardFile { path: "s/a.npy".into(), reason: graph_error() }.into(),
                format!("s/a.npy: {ge}"),
            ),
            (InputError::NotIntegers { path: "s/a.npy".into() }.into(), "s/a.npy: not integers".into()),
            (
                InputError::ClassCount { path: "s/classes.txt".into() }.into(),
                "s/classes.txt: missing or not a number".into(),
            ),
            (
                InputError::TooManyClasses { path: "s/classes.txt".into(), classes: 2_000_000 }.into(),
                "s/classes.txt: 2000000 classes, more than the limit 1048576 (2^20; docs/formats.md)".into(),
            ),
            (
                InputError::ShardRows { dir: "s".into(), vertices: 4 }.into(),
                "s: the files disagree on the number of rows (4 vertices)".into(),
            ),
            (
                InputError::WriteShard { dir: "s".into(), reason: io() }.into(),
                "writing s: boom".into(),
            ),
            (
                InputError::LabelType { path: "d/labels.npy".into(), dtype: "float32" }.into(),
                "d/labels.npy: labels must be integers, found float32".into(),
            ),
            (
                InputError::LabelCount {
                    features: "d/features.npy".into(),
                    rows: 3,
                    labels_path: "d/labels.npy".into(),
                    labels: 4,
                }
                .into(),
                "d/features.npy has 3 rows but d/labels.npy has 4 labels: one row and one label per vertex".into(),
            ),
            (
                InputError::EdgesBeyondLabels {
                    edges: "d/edges.txt.gz".into(),
                    max_vertex: 9,
                    labels_path: "d/labels.npy".into(),
                    labels: 4,
                }
                .into(),
                "d/edges.txt.gz has vertex ids up to 9, but d/labels.npy has only 4 labels".into(),
            ),
            (
                InputError::FewClasses { path: "d/labels.npy".into() }.into(),
                "d/labels.npy: fewer than two classes".into(),
            ),
            (
                InputError::MaskLength { path: "d/train_mask.npy".into(), entries: 3, vertices: 4 }.into(),
                "d/train_mask.npy: 3 entries, but the graph has 4 vertices".into(),
            ),
            (
                InputError::EmptyMask { path: "d/train_mask.npy".into() }.into(),
                "d/train_mask.npy: the mask selects no vertex".into(),
            ),
            (
                InputError::MaskSelectsUnlabelled { dir: "d".into(), mask: "val" }.into(),
                "d: the val mask selects unlabelled vertices".into(),
            ),
            (
                InputError::Sbm {
                    spec: "n=10,dim=x".into(),
                    problem: SbmProblem::NotANumber { key: "dim", value: "x".into() },
                }
                .into(),
                "sbm:n=10,dim=x: dim=x is not a number >= 0".into(),
            ),
            (
                InputError::Sbm { spec: "q=1".into(), problem: SbmProblem::Graph(graph_error()) }.into(),
                format!("sbm:q=1: {ge} (and dim, signal)"),
            ),
            (
                InputError::Sbm { spec: "dim=0".into(), problem: SbmProblem::ZeroDim }.into(),
                "sbm:dim=0: needs dim >= 1".into(),
            ),
            (InputError::ZeroSize.into(), "--layers, --hidden and --epochs must be at least 1".into()),
            (
                InputError::Dropout { dropout: 1.5 }.into(),
                "--dropout is a probability in [0, 1), got 1.5".into(),
            ),
            (InputError::NoTrainingVertex.into(), "the training mask selects no vertex".into()),
            (
                TrainError::Label { path: "d/labels.npy".into(), row: 1, label: 7, limit: 3 },
                "d/labels.npy: label 7 at row 1 is out of range: labels are -1 (unlabelled) or classes 0..3 (the limit: below the number of vertices and below 2^20)".into(),
            ),
            (
                ShapeMismatch::NeighbourSum { rows: 3, vertices: 4 }.into(),
                "shape mismatch: neighbour sum of 3 rows on a graph of 4 vertices".into(),
            ),
            (
                ShapeMismatch::Sums(
                    ndarray::Array2::<f32>::from_shape_vec((2, 2), vec![0.0]).unwrap_err(),
                )
                .into(),
                format!(
                    "shape mismatch: {}",
                    ndarray::Array2::<f32>::from_shape_vec((2, 2), vec![0.0]).unwrap_err()
                ),
            ),
            (
                ExchangeError::Connect { addr: "127.0.0.1:9".into(), reason: io() }.into(),
                "exchange: connecting to the coordinator 127.0.0.1:9: boom".into(),
            ),
            (
                ExchangeError::Io { what: "joining the coordinator", reason: io() }.into(),
                "exchange: joining the coordinator: boom".into(),
            ),
            (
                ExchangeError::NotFloat64s { bytes: 5 }.into(),
                "exchange: a coordinator message of 5 bytes is not a list of float64".into(),
            ),
            (ExchangeError::CoordinatorClosed.into(), "exchange: the coordinator link closed".into()),
            (
                ExchangeError::ReductionLength { got: 2, sent: 3 }.into(),
                "exchange: the coordinator answered 2 values to 3".into(),
            ),
            (
                ExchangeError::StoppedBeforeJoin.into(),
                "exchange: stopped before every worker joined".into(),
            ),
            (
                ExchangeError::JoinTimeout { missing: vec![1, 3], secs: 30.0 }.into(),
                "exchange: workers 1, 3 did not join the coordinator within 30 s".into(),
            ),
            (ExchangeError::Stopped.into(), "exchange: stopped".into()),
            (ExchangeError::LinksClosed.into(), "exchange: every worker link closed".into()),
            (
                ExchangeError::WorkerDied { worker: 1, why: "EOF".into() }.into(),
                "exchange: worker 1 died (EOF) before the end of training".into(),
            ),
            (
                ExchangeError::WorkerUnwritable { worker: 2, reason: io() }.into(),
                "exchange: worker 2 died (writing to it: boom)".into(),
            ),
            (
                ExchangeError::SecondReduction { worker: 1 }.into(),
                "exchange: worker 1 sent a second reduction before the first ended".into(),
            ),
            (
                ExchangeError::ReductionMismatch { worker: 2 }.into(),
                "exchange: worker 2 reduced something else than worker 0 (the workers run different recipes)".into(),
            ),
            (
                ExchangeError::UnknownKind { worker: 0, kind: 9 }.into(),
                "exchange: worker 0 sent an unknown message kind 9".into(),
            ),
            (
                ExchangeError::NotFinite { layer: 1, backward: true }.into(),
                "exchange: layer 1 backward: a value is not finite (training diverged: lower --lr)".into(),
            ),
            (
                ExchangeError::NotFinite { layer: 0, backward: false }.into(),
                "exchange: layer 0 forward: a value is not finite (training diverged: lower --lr)".into(),
            ),
            (
                ExchangeError::NoDaemon { path: "/tmp/w0.sock".into(), secs: 10.0, reason: io() }.into(),
                "exchange: no daemon on /tmp/w0.sock after 10 s (boom); is `sgnn-hostd --serve /tmp/w0.sock` running?".into(),
            ),
            (
                ExchangeError::Daemon("bad input".into()).into(),
                "exchange: the daemon: bad input".into(),
            ),
            (
                ExchangeError::DaemonClosed.into(),
                "exchange: the daemon closed the socket (it exited: see its log)".into(),
            ),
            (
                ExchangeError::UnexpectedReply { request: "CLOSE", reply: Some(Reply::Bye) }.into(),
                "exchange: the daemon answered CLOSE with Some(Bye)".into(),
            ),
            (
                ExchangeError::UnexpectedReply { request: "HELLO", reply: None }.into(),
                "exchange: the daemon answered HELLO with None".into(),
            ),
            (
                ExchangeError::UnexpectedReply {
                    request: "PROPAGATE",
                    reply: Some(Reply::Sums { round: 0, rows: 2, dim: 3, values: vec![0.0; 5] }),
                }
                .into(),
                "exchange: the daemon answered PROPAGATE with Some(\"SUMS of 2x3\")".into(),
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text, "{e:?}");
            assert!(std::error::Error::source(&e).is_none(), "{e:?}");
        }
    }
}
