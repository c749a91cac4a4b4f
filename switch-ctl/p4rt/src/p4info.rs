//! P4Info helpers: the index from names to ids and widths ([`P4InfoIndex`]), the canonical
//! binary strings P4Runtime uses for values ([`encode_bits`], [`decode_bits`]), P4Info ids, and
//! loading a P4Info file ([`load_p4info`]).
//!
//! Everything that turns a name into an id, or a number into bytes, goes through this module, so
//! an unknown name or a value too wide for its field is caught (and named) before anything is
//! sent to a switch.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use prost::Message;

use crate::proto::p4::config::v1 as cfg;

pub use cfg::p4_ids::Prefix;

/// The P4Info id of the `n`-th object of a kind: `prefix << 24 | n`, as p4c assigns it for
/// `@id(n)`.
pub fn p4_id(prefix: Prefix, n: u32) -> u32 {
    debug_assert!(n < 1 << 24, "P4Info id suffix {n} does not fit in 24 bits");
    ((prefix as u32) << 24) | (n & 0x00ff_ffff)
}

/// The id p4c gives an object without `@id`: `prefix << 24 | hash(name) & 0xffffff`, the hash
/// being Jenkins' one-at-a-time over the fully qualified name (p4c's
/// `P4RuntimeSymbolTable::computeIdsForSymbols`; a collision would move an id to the next
/// free one, which the compile test would catch). bf-p4c honours `@id` on tables and actions
/// but not on Tofino registers and counters, which it names `pipe.NAME`: see
/// `schema::switchgnn_p4info_for(Arch::Tna)`.
pub fn hashed_id(prefix: Prefix, qualified_name: &str) -> u32 {
    let mut h: u32 = 0;
    for b in qualified_name.bytes() {
        h = h.wrapping_add(u32::from(b));
        h = h.wrapping_add(h << 10);
        h ^= h >> 6;
    }
    h = h.wrapping_add(h << 3);
    h ^= h >> 11;
    h = h.wrapping_add(h << 15);
    p4_id(prefix, h & 0x00ff_ffff)
}

/// The prefix (kind) byte of a P4Info id.
pub fn id_prefix(id: u32) -> u8 {
    (id >> 24) as u8
}

/// A value that cannot be turned into (or read from) a P4Runtime binary string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BitsError {
    /// The value needs more bits than the field has.
    #[error("value {value:#x} does not fit in {width} bits")]
    TooWide {
        /// The value.
        value: u128,
        /// The field's width.
        width: u32,
    },
    /// The signed value is outside `-2^(W-1) .. 2^(W-1)`.
    #[error("value {value} does not fit in int<{width}>")]
    TooWideSigned {
        /// The value.
        value: i128,
        /// The field's width.
        width: u32,
    },
    /// Widths are 1 to 128 bits here.
    #[error("width {0} is not supported (1 to 128 bits)")]
    BadWidth(u32),
    /// P4Runtime never allows an empty binary string.
    #[error("empty binary string")]
    Empty,
    /// A received string holds a value that does not fit in the field.
    #[error("binary string 0x{hex} does not fit in {width} bits")]
    StringTooWide {
        /// The string, in hex.
        hex: String,
        /// The field's width.
        width: u32,
    },
}

fn check_width(width: u32) -> Result<(), BitsError> {
    if (1..=128).contains(&width) {
        Ok(())
    } else {
        Err(BitsError::BadWidth(width))
    }
}

/// Encodes an unsigned `bit<width>` value as P4Runtime's canonical binary string: big-endian,
/// the fewest bytes that hold the value, and at least one byte (zero is `[0x00]`).
///
/// Fails if the value needs more than `width` bits, so no field is ever sent truncated.
pub fn encode_bits(value: u128, width: u32) -> Result<Vec<u8>, BitsError> {
    check_width(width)?;
    if width < 128 && value >> width != 0 {
        return Err(BitsError::TooWide { value, width });
    }
    let bits = 128 - value.leading_zeros();
    let len = (bits.max(1) as usize).div_ceil(8);
    Ok(value.to_be_bytes()[16 - len..].to_vec())
}

/// Decodes an unsigned `bit<width>` value from a P4Runtime binary string.
///
/// Accepts the canonical form and zero-padded longer forms (the specification lets a sender
/// pad); rejects an empty string and a value that needs more than `width` bits.
pub fn decode_bits(bytes: &[u8], width: u32) -> Result<u128, BitsError> {
    check_width(width)?;
    if bytes.is_empty() {
        return Err(BitsError::Empty);
    }
    let first = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
    let digits = &bytes[first..];
    let too_wide = || BitsError::StringTooWide {
        hex: hex(bytes),
        width,
    };
    if digits.len() > 16 {
        return Err(too_wide());
    }
    let value = digits.iter().fold(0u128, |v, &b| (v << 8) | b as u128);
    if width < 128 && value >> width != 0 {
        return Err(too_wide());
    }
    Ok(value)
}

/// Encodes a signed `int<width>` value as P4Runtime's canonical binary string: two's complement,
/// big-endian, the fewest bytes that keep the sign, at least one byte.
pub fn encode_int(value: i128, width: u32) -> Result<Vec<u8>, BitsError> {
    check_width(width)?;
    if width < 128 {
        let half = 1i128 << (width - 1);
        if value < -half || value >= half {
            return Err(BitsError::TooWideSigned { value, width });
        }
    }
    // Bits needed in two's complement, sign bit included.
    let bits = if value >= 0 {
        129 - value.leading_zeros()
    } else {
        129 - value.leading_ones()
    };
    let len = (bits.max(1) as usize).div_ceil(8);
    Ok(value.to_be_bytes()[16 - len..].to_vec())
}

/// Decodes a signed `int<width>` value from a P4Runtime binary string (canonical or
/// sign-extended).
pub fn decode_int(bytes: &[u8], width: u32) -> Result<i128, BitsError> {
    check_width(width)?;
    if bytes.is_empty() {
        return Err(BitsError::Empty);
    }
    let too_wide = || BitsError::StringTooWide {
        hex: hex(bytes),
        width,
    };
    let negative = bytes[0] & 0x80 != 0;
    let pad = if negative { 0xff } else { 0x00 };
    // Drop sign-extension bytes, keeping one whose top bit still carries the sign.
    let mut start = 0;
    while start + 1 < bytes.len()
        && bytes[start] == pad
        && (bytes[start + 1] & 0x80 != 0) == negative
    {
        start += 1;
    }
    let digits = &bytes[start..];
    if digits.len() > 16 {
        return Err(too_wide());
    }
    let mut buf = [pad; 16];
    buf[16 - digits.len()..].copy_from_slice(digits);
    let value = i128::from_be_bytes(buf);
    if width < 128 {
        let half = 1i128 << (width - 1);
        if value < -half || value >= half {
            return Err(too_wide());
        }
    }
    Ok(value)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A name or id that the P4Info does not have, or a P4Info that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum P4InfoError {
    /// No object of this kind has this name.
    #[error("no {kind} named `{name}` in the P4Info (it has: {known})")]
    NotFound {
        /// What was looked up ("table", "action", "match field of table `t`", ...).
        kind: String,
        /// The name asked for.
        name: String,
        /// The names that exist, for the message.
        known: String,
    },
    /// No object of this kind has this id.
    #[error("no {kind} with id {id:#x} ({id}) in the P4Info")]
    UnknownId {
        /// What was looked up.
        kind: String,
        /// The id asked for.
        id: u32,
    },
    /// Two objects of one kind share a name or an id.
    #[error("the P4Info has two {kind}s with the {what} `{value}`")]
    Duplicate {
        /// The kind of object.
        kind: &'static str,
        /// "name" or "id".
        what: &'static str,
        /// The shared name or id.
        value: String,
    },
    /// The file could not be read.
    #[error("cannot read P4Info file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a binary P4Info.
    #[error("{path} is not a binary P4Info ({source}); p4c writes one with --p4runtime-files x.p4info.bin")]
    Decode {
        /// The file.
        path: PathBuf,
        /// What the protobuf decoder said.
        source: prost::DecodeError,
    },
    /// The file is not a text-format P4Info this crate can read.
    #[error("{path}:{line}:{column}: {message}")]
    Text {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong there.
        message: String,
    },
    /// The file name does not say which format it is in.
    #[error("{path}: cannot tell the P4Info format from the file name; use a binary `.bin` (p4c --p4runtime-files x.p4info.bin) or text `.txt`/`.txtpb`")]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
    /// The P4Info has objects this crate's protos do not carry; using it would silently drop them
    /// (for example from a pipeline pushed to a switch).
    #[error("{path} describes {objects} which sgnn-p4rt does not model (only tables, actions, counters and registers); a pipeline built from it would lose them{hint}")]
    Unmodelled {
        /// The file.
        path: PathBuf,
        /// The kinds of objects, e.g. "meters".
        objects: String,
        /// What to do about it, when something can be done (empty otherwise).
        hint: &'static str,
    },
}

/// How a match field is matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchKind {
    /// `exact`.
    Exact,
    /// `lpm`.
    Lpm,
    /// `ternary`.
    Ternary,
    /// `range`.
    Range,
    /// `optional`.
    Optional,
    /// An architecture-specific kind, by name.
    Other(String),
    /// Not set in the P4Info.
    Unspecified,
}

impl MatchKind {
    /// The match kind of a P4Info match field.
    pub fn of(m: &cfg::MatchField) -> MatchKind {
        use cfg::match_field::{Match, MatchType};
        match &m.r#match {
            Some(Match::MatchType(t)) => match MatchType::try_from(*t) {
                Ok(MatchType::Exact) => MatchKind::Exact,
                Ok(MatchType::Lpm) => MatchKind::Lpm,
                Ok(MatchType::Ternary) => MatchKind::Ternary,
                Ok(MatchType::Range) => MatchKind::Range,
                Ok(MatchType::Optional) => MatchKind::Optional,
                Ok(MatchType::Unspecified) => MatchKind::Unspecified,
                Err(_) => MatchKind::Other(format!("match_type {t}")),
            },
            Some(Match::OtherMatchType(s)) => MatchKind::Other(s.clone()),
            None => MatchKind::Unspecified,
        }
    }
}

impl fmt::Display for MatchKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchKind::Exact => f.write_str("exact"),
            MatchKind::Lpm => f.write_str("lpm"),
            MatchKind::Ternary => f.write_str("ternary"),
            MatchKind::Range => f.write_str("range"),
            MatchKind::Optional => f.write_str("optional"),
            MatchKind::Other(s) => f.write_str(s),
            MatchKind::Unspecified => f.write_str("unspecified"),
        }
    }
}

/// One key field of a table.
#[derive(Debug, Clone)]
pub struct MatchFieldInfo {
    /// Id within the table.
    pub id: u32,
    /// Name.
    pub name: String,
    /// Width in bits.
    pub bitwidth: u32,
    /// Match kind.
    pub kind: MatchKind,
}

/// Where a table may use an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionScope {
    /// In entries and as the default action.
    TableAndDefault,
    /// Only in entries.
    TableOnly,
    /// Only as the default action.
    DefaultOnly,
}

/// A match-action table.
#[derive(Debug, Clone)]
pub struct TableInfo {
    /// P4Info id.
    pub id: u32,
    /// Name.
    pub name: String,
    /// Maximum number of entries.
    pub size: u64,
    /// Key fields in key order.
    pub fields: Vec<MatchFieldInfo>,
    /// Actions the table may call (ids), with where.
    pub actions: Vec<(u32, ActionScope)>,
    /// The default action fixed by the program, if any.
    pub const_default_action: Option<u32>,
    /// True if the program fixes all entries.
    pub is_const: bool,
}

impl TableInfo {
    /// The key field with this name.
    pub fn field(&self, name: &str) -> Result<&MatchFieldInfo, P4InfoError> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| P4InfoError::NotFound {
                kind: format!("match field of table `{}`", self.name),
                name: name.to_string(),
                known: known(self.fields.iter().map(|f| f.name.as_str())),
            })
    }

    /// The key field with this id.
    pub fn field_by_id(&self, id: u32) -> Result<&MatchFieldInfo, P4InfoError> {
        self.fields
            .iter()
            .find(|f| f.id == id)
            .ok_or_else(|| P4InfoError::UnknownId {
                kind: format!("match field of table `{}`", self.name),
                id,
            })
    }

    /// Where this table may use the action, or `None` if it may not use it at all.
    pub fn action_scope(&self, action_id: u32) -> Option<ActionScope> {
        self.actions
            .iter()
            .find(|(id, _)| *id == action_id)
            .map(|(_, s)| *s)
    }
}

/// One parameter of an action.
#[derive(Debug, Clone)]
pub struct ParamInfo {
    /// Id within the action.
    pub id: u32,
    /// Name.
    pub name: String,
    /// Width in bits.
    pub bitwidth: u32,
}

/// An action.
#[derive(Debug, Clone)]
pub struct ActionInfo {
    /// P4Info id.
    pub id: u32,
    /// Name.
    pub name: String,
    /// Parameters in declaration order.
    pub params: Vec<ParamInfo>,
}

impl ActionInfo {
    /// The parameter with this name.
    pub fn param(&self, name: &str) -> Result<&ParamInfo, P4InfoError> {
        self.params
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| P4InfoError::NotFound {
                kind: format!("parameter of action `{}`", self.name),
                name: name.to_string(),
                known: known(self.params.iter().map(|p| p.name.as_str())),
            })
    }

    /// The parameter with this id.
    pub fn param_by_id(&self, id: u32) -> Result<&ParamInfo, P4InfoError> {
        self.params
            .iter()
            .find(|p| p.id == id)
            .ok_or_else(|| P4InfoError::UnknownId {
                kind: format!("parameter of action `{}`", self.name),
                id,
            })
    }
}

/// The type of a register's cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellType {
    /// `bit<W>`.
    Bit(u32),
    /// `int<W>`.
    Int(u32),
    /// Anything else (bool, struct, varbit, ...): not readable or writable through this crate.
    Other,
}

/// A register.
#[derive(Debug, Clone)]
pub struct RegisterInfo {
    /// P4Info id.
    pub id: u32,
    /// Name.
    pub name: String,
    /// Type of a cell.
    pub cell: CellType,
    /// Number of cells.
    pub size: u64,
}

impl RegisterInfo {
    /// Width of a cell in bits (0 for cells that are not `bit<W>`/`int<W>`).
    pub fn bitwidth(&self) -> u32 {
        match self.cell {
            CellType::Bit(w) | CellType::Int(w) => w,
            CellType::Other => 0,
        }
    }
}

/// What a counter counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterUnit {
    /// Bytes.
    Bytes,
    /// Packets.
    Packets,
    /// Packets and bytes.
    Both,
    /// Not set.
    Unspecified,
}

impl CounterUnit {
    fn from_proto(unit: i32) -> CounterUnit {
        use cfg::counter_spec::Unit;
        match Unit::try_from(unit) {
            Ok(Unit::Bytes) => CounterUnit::Bytes,
            Ok(Unit::Packets) => CounterUnit::Packets,
            Ok(Unit::Both) => CounterUnit::Both,
            _ => CounterUnit::Unspecified,
        }
    }
}

/// An indirect counter.
#[derive(Debug, Clone)]
pub struct CounterInfo {
    /// P4Info id.
    pub id: u32,
    /// Name.
    pub name: String,
    /// What it counts.
    pub unit: CounterUnit,
    /// Number of cells.
    pub size: u64,
}

/// One kind of P4 object, looked up by name (the P4Info name, or failing that its alias) or id.
#[derive(Debug, Clone)]
struct Objects<T> {
    kind: &'static str,
    items: Vec<T>,
    by_name: HashMap<String, usize>,
    by_alias: HashMap<String, usize>,
    by_id: HashMap<u32, usize>,
}

impl<T> Objects<T> {
    fn new(kind: &'static str) -> Self {
        Objects {
            kind,
            items: Vec::new(),
            by_name: HashMap::new(),
            by_alias: HashMap::new(),
            by_id: HashMap::new(),
        }
    }

    fn add(&mut self, preamble: &cfg::Preamble, item: T) -> Result<(), P4InfoError> {
        let i = self.items.len();
        if self.by_name.insert(preamble.name.clone(), i).is_some() {
            return Err(P4InfoError::Duplicate {
                kind: self.kind,
                what: "name",
                value: preamble.name.clone(),
            });
        }
        if self.by_id.insert(preamble.id, i).is_some() {
            return Err(P4InfoError::Duplicate {
                kind: self.kind,
                what: "id",
                value: format!("{:#x}", preamble.id),
            });
        }
        if !preamble.alias.is_empty() && preamble.alias != preamble.name {
            self.by_alias.insert(preamble.alias.clone(), i);
        }
        self.items.push(item);
        Ok(())
    }

    fn get(&self, name: &str, names: impl Fn(&T) -> &str) -> Result<&T, P4InfoError> {
        self.by_name
            .get(name)
            .or_else(|| self.by_alias.get(name))
            .map(|&i| &self.items[i])
            .ok_or_else(|| P4InfoError::NotFound {
                kind: self.kind.to_string(),
                name: name.to_string(),
                known: known(self.items.iter().map(names)),
            })
    }

    fn get_id(&self, id: u32) -> Result<&T, P4InfoError> {
        self.by_id
            .get(&id)
            .map(|&i| &self.items[i])
            .ok_or_else(|| P4InfoError::UnknownId {
                kind: self.kind.to_string(),
                id,
            })
    }
}

fn known<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut names: Vec<&str> = names.collect();
    if names.is_empty() {
        return "none".to_string();
    }
    names.sort_unstable();
    let more = names.len().saturating_sub(12);
    names.truncate(12);
    let mut s = names.join(", ");
    if more > 0 {
        s.push_str(&format!(" and {more} more"));
    }
    s
}

fn width(w: i32) -> u32 {
    w.max(0) as u32
}

/// Names to ids, widths, kinds and sizes for one P4Info.
///
/// Built once from a P4Info; the control plane then speaks names (`agg_table`, `block_id`) and
/// this index gives what P4Runtime needs (ids, widths) or an error naming what is missing.
#[derive(Debug, Clone)]
pub struct P4InfoIndex {
    p4info: cfg::P4Info,
    tables: Objects<TableInfo>,
    actions: Objects<ActionInfo>,
    registers: Objects<RegisterInfo>,
    counters: Objects<CounterInfo>,
}

impl P4InfoIndex {
    /// Indexes a P4Info. Fails on duplicate names or ids, and on a table that refers to an
    /// action the P4Info does not define.
    pub fn new(p4info: &cfg::P4Info) -> Result<Self, P4InfoError> {
        let mut index = P4InfoIndex {
            p4info: p4info.clone(),
            tables: Objects::new("table"),
            actions: Objects::new("action"),
            registers: Objects::new("register"),
            counters: Objects::new("counter"),
        };
        for a in &p4info.actions {
            let pre = a.preamble.clone().unwrap_or_default();
            let info = ActionInfo {
                id: pre.id,
                name: pre.name.clone(),
                params: a
                    .params
                    .iter()
                    .map(|p| ParamInfo {
                        id: p.id,
                        name: p.name.clone(),
                        bitwidth: width(p.bitwidth),
                    })
                    .collect(),
            };
            index.actions.add(&pre, info)?;
        }
        for t in &p4info.tables {
            let pre = t.preamble.clone().unwrap_or_default();
            let mut actions = Vec::new();
            for r in &t.action_refs {
                index
                    .actions
                    .get_id(r.id)
                    .map_err(|_| P4InfoError::UnknownId {
                        kind: format!("action referred to by table `{}`", pre.name),
                        id: r.id,
                    })?;
                let scope = match cfg::action_ref::Scope::try_from(r.scope) {
                    Ok(cfg::action_ref::Scope::TableOnly) => ActionScope::TableOnly,
                    Ok(cfg::action_ref::Scope::DefaultOnly) => ActionScope::DefaultOnly,
                    _ => ActionScope::TableAndDefault,
                };
                actions.push((r.id, scope));
            }
            let info = TableInfo {
                id: pre.id,
                name: pre.name.clone(),
                size: t.size.max(0) as u64,
                fields: t
                    .match_fields
                    .iter()
                    .map(|m| MatchFieldInfo {
                        id: m.id,
                        name: m.name.clone(),
                        bitwidth: width(m.bitwidth),
                        kind: MatchKind::of(m),
                    })
                    .collect(),
                actions,
                const_default_action: (t.const_default_action_id != 0)
                    .then_some(t.const_default_action_id),
                is_const: t.is_const_table,
            };
            index.tables.add(&pre, info)?;
        }
        for r in &p4info.registers {
            let pre = r.preamble.clone().unwrap_or_default();
            let info = RegisterInfo {
                id: pre.id,
                name: pre.name.clone(),
                cell: register_cell(r),
                size: r.size.max(0) as u64,
            };
            index.registers.add(&pre, info)?;
        }
        for c in &p4info.counters {
            let pre = c.preamble.clone().unwrap_or_default();
            let info = CounterInfo {
                id: pre.id,
                name: pre.name.clone(),
                unit: CounterUnit::from_proto(c.spec.map(|s| s.unit).unwrap_or(0)),
                size: c.size.max(0) as u64,
            };
            index.counters.add(&pre, info)?;
        }
        Ok(index)
    }

    /// The P4Info this index was built from.
    pub fn p4info(&self) -> &cfg::P4Info {
        &self.p4info
    }

    /// The table with this name (or alias).
    pub fn table(&self, name: &str) -> Result<&TableInfo, P4InfoError> {
        self.tables.get(name, |t| &t.name)
    }

    /// The table with this id.
    pub fn table_by_id(&self, id: u32) -> Result<&TableInfo, P4InfoError> {
        self.tables.get_id(id)
    }

    /// All tables, in P4Info order.
    pub fn tables(&self) -> &[TableInfo] {
        &self.tables.items
    }

    /// The action with this name (or alias).
    pub fn action(&self, name: &str) -> Result<&ActionInfo, P4InfoError> {
        self.actions.get(name, |a| &a.name)
    }

    /// The action with this id.
    pub fn action_by_id(&self, id: u32) -> Result<&ActionInfo, P4InfoError> {
        self.actions.get_id(id)
    }

    /// All actions, in P4Info order.
    pub fn actions(&self) -> &[ActionInfo] {
        &self.actions.items
    }

    /// The register with this name (or alias).
    pub fn register(&self, name: &str) -> Result<&RegisterInfo, P4InfoError> {
        self.registers.get(name, |r| &r.name)
    }

    /// The register with this id.
    pub fn register_by_id(&self, id: u32) -> Result<&RegisterInfo, P4InfoError> {
        self.registers.get_id(id)
    }

    /// All registers, in P4Info order.
    pub fn registers(&self) -> &[RegisterInfo] {
        &self.registers.items
    }

    /// The counter with this name (or alias).
    pub fn counter(&self, name: &str) -> Result<&CounterInfo, P4InfoError> {
        self.counters.get(name, |c| &c.name)
    }

    /// The counter with this id.
    pub fn counter_by_id(&self, id: u32) -> Result<&CounterInfo, P4InfoError> {
        self.counters.get_id(id)
    }

    /// All counters, in P4Info order.
    pub fn counters(&self) -> &[CounterInfo] {
        &self.counters.items
    }
}

/// The cell type of a register as the P4Info describes it.
pub fn register_cell(r: &cfg::Register) -> CellType {
    use cfg::p4_bitstring_like_type_spec::TypeSpec as B;
    use cfg::p4_data_type_spec::TypeSpec as D;
    match r.type_spec.as_ref().and_then(|t| t.type_spec.as_ref()) {
        Some(D::Bitstring(b)) => match b.type_spec {
            Some(B::Bit(w)) => CellType::Bit(width(w.bitwidth)),
            Some(B::Int(w)) => CellType::Int(width(w.bitwidth)),
            _ => CellType::Other,
        },
        _ => CellType::Other,
    }
}

/// Top-level P4Info fields (number, plural name) this crate's protos do not carry. `type_info`
/// (200) is not listed: it only names types, and dropping it changes nothing a switch does.
const UNMODELLED: &[(u32, &str)] = &[
    (4, "action_profiles"),
    (6, "direct_counters"),
    (7, "meters"),
    (8, "direct_meters"),
    (9, "controller_packet_metadata"),
    (10, "value_sets"),
    (12, "digests"),
    (100, "externs"),
];

/// Extern types a P4Info may describe that lose nothing when dropped: bf-p4c writes a
/// `PortMetadata` extern for every TNA program (the ingress parser's per-port metadata), which
/// SwitchGNN's control plane never programs.
pub const HARMLESS_EXTERNS: &[&str] = &["PortMetadata"];

/// The one field of `p4.config.v1.Extern` this crate reads (its protos do not carry externs;
/// prost skips the rest).
#[derive(Clone, PartialEq, prost::Message)]
struct ExternTypeName {
    #[prost(string, tag = "2")]
    extern_type_name: String,
}

/// The `extern_type_name` of a serialized `p4.config.v1.Extern`.
fn extern_type_name(bytes: &[u8]) -> Option<String> {
    ExternTypeName::decode(bytes)
        .ok()
        .map(|e| e.extern_type_name)
}

/// Lists the kinds of P4 objects in a binary P4Info that this crate's protos do not carry (by
/// walking the top-level protobuf fields; malformed input lists nothing, the decoder reports it).
/// Externs of [`HARMLESS_EXTERNS`] types are not listed.
pub fn unmodelled_objects(bytes: &[u8]) -> Vec<&'static str> {
    let mut found = Vec::new();
    let mut buf = bytes;
    while !buf.is_empty() {
        let Ok(key) = prost::encoding::decode_varint(&mut buf) else {
            break;
        };
        let field = (key >> 3) as u32;
        let skip = match key & 7 {
            0 => prost::encoding::decode_varint(&mut buf).map(|_| 0).ok(),
            1 => Some(8),
            2 => prost::encoding::decode_varint(&mut buf)
                .ok()
                .map(|n| n as usize),
            5 => Some(4),
            _ => None,
        };
        let Some(skip) = skip.filter(|&n| n <= buf.len()) else {
            break;
        };
        let value = &buf[..skip];
        buf = &buf[skip..];
        if field == 100
            && extern_type_name(value).is_some_and(|n| HARMLESS_EXTERNS.contains(&n.as_str()))
        {
            continue;
        }
        if let Some((_, name)) = UNMODELLED.iter().find(|(n, _)| *n == field) {
            if !found.contains(name) {
                found.push(*name);
            }
        }
    }
    found
}

/// The error for a P4Info with objects this crate does not carry. bf-p4c describes a TNA
/// program's registers and counters as Tofino `externs` unless told to use the standard
/// messages; say so, since that is the one case a user can fix with a flag.
fn unmodelled_error(path: &Path, objects: &[&str]) -> P4InfoError {
    P4InfoError::Unmodelled {
        path: path.to_path_buf(),
        objects: objects.join(", "),
        hint: if objects.contains(&"externs") {
            " (bf-p4c writes Tofino registers and counters as externs: compile with --p4runtime-force-std-externs, docs/tofino.md)"
        } else {
            ""
        },
    }
}

/// Decodes a binary P4Info, refusing one that has objects this crate cannot carry.
pub fn decode_p4info(bytes: &[u8], path: &Path) -> Result<cfg::P4Info, P4InfoError> {
    let unmodelled = unmodelled_objects(bytes);
    let p4info = cfg::P4Info::decode(bytes).map_err(|source| P4InfoError::Decode {
        path: path.to_path_buf(),
        source,
    })?;
    if !unmodelled.is_empty() {
        return Err(unmodelled_error(path, &unmodelled));
    }
    Ok(p4info)
}

/// Parses a text-format P4Info (what p4c writes for `.txtpb`/`.txt`), refusing one that has
/// objects this crate cannot carry. Fields this crate does not model inside the objects it
/// does model (source locations, structured annotations, ...) are skipped.
pub fn parse_p4info_text(text: &str, path: &Path) -> Result<cfg::P4Info, P4InfoError> {
    crate::textformat::parse_p4info(text).map_err(|e| match e {
        crate::textformat::TextError::Syntax {
            line,
            column,
            message,
        } => P4InfoError::Text {
            path: path.to_path_buf(),
            line,
            column,
            message,
        },
        crate::textformat::TextError::Unmodelled(objects) => unmodelled_error(path, &objects),
    })
}

/// Loads a P4Info file: binary protobuf for `.bin` (p4c: `--p4runtime-files x.p4info.bin`),
/// text format for `.txt`/`.txtpb`. JSON is not read.
pub fn load_p4info(path: impl AsRef<Path>) -> Result<cfg::P4Info, P4InfoError> {
    let path = path.as_ref();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let io = |source| P4InfoError::Io {
        path: path.to_path_buf(),
        source,
    };
    if name.ends_with(".bin") || name.ends_with(".pb") {
        let bytes = std::fs::read(path).map_err(io)?;
        decode_p4info(&bytes, path)
    } else if name.ends_with(".txt") || name.ends_with(".txtpb") || name.ends_with(".textproto") {
        let text = std::fs::read_to_string(path).map_err(io)?;
        parse_p4info_text(&text, path)
    } else {
        Err(P4InfoError::UnknownFormat {
            path: path.to_path_buf(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples() {
        // The specification's table of valid encodings (the read-write symmetric ones).
        assert_eq!(encode_bits(99, 8).unwrap(), [0x63]);
        assert_eq!(encode_bits(99, 16).unwrap(), [0x63]);
        assert_eq!(encode_bits(0x3064, 16).unwrap(), [0x30, 0x64]);
        assert_eq!(encode_bits(99, 12).unwrap(), [0x63]);
        assert_eq!(encode_int(99, 8).unwrap(), [0x63]);
        assert_eq!(encode_int(-99, 8).unwrap(), [0x9d]);
        assert_eq!(encode_int(-739, 12).unwrap(), [0xfd, 0x1d]);
        assert_eq!(encode_int(0, 16).unwrap(), [0x00]);
        assert_eq!(encode_bits(0, 1).unwrap(), [0x00]);
        // And the padded ones decode to the same values.
        assert_eq!(decode_bits(&[0x00, 0x63], 16).unwrap(), 99);
        assert_eq!(decode_bits(&[0x00, 0x30, 0x64], 16).unwrap(), 0x3064);
        assert_eq!(decode_bits(&[0x00, 0x00, 0x63], 12).unwrap(), 99);
        assert_eq!(decode_int(&[0xff, 0x9d], 8).unwrap(), -99);
        assert_eq!(decode_int(&[0x00, 0x00], 16).unwrap(), 0);
    }

    #[test]
    fn rejects() {
        assert_eq!(
            encode_bits(512, 9),
            Err(BitsError::TooWide {
                value: 512,
                width: 9
            })
        );
        assert!(encode_bits(1, 0).is_err());
        assert!(encode_int(128, 8).is_err());
        assert!(encode_int(-129, 8).is_err());
        assert_eq!(decode_bits(&[], 8), Err(BitsError::Empty));
        assert!(decode_bits(&[0x02, 0x00], 9).is_err());
        assert!(decode_bits(&[0x01, 0xff], 9).is_ok());
        // 0x80 is -128 as int<8> but does not fit int<7>.
        assert!(decode_int(&[0x80], 7).is_err());
        // 0x00 0x80 is +128: too wide for int<8>.
        assert!(decode_int(&[0x00, 0x80], 8).is_err());
    }

    #[test]
    fn ids() {
        assert_eq!(p4_id(Prefix::Table, 1), 0x0200_0001);
        assert_eq!(p4_id(Prefix::Register, 48), 0x1600_0030);
        // What bf-p4c assigned `events` and `agg_count` of p4/tna (tests/data).
        assert_eq!(hashed_id(Prefix::Counter, "pipe.events"), 0x12dc_f7d5);
        assert_eq!(hashed_id(Prefix::Register, "pipe.agg_count"), 0x1676_eb9a);
        assert_eq!(id_prefix(0x1200_0002), 0x12);
    }
}
