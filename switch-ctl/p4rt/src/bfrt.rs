//! BfRt: the schema of a Tofino program's control-plane objects (`bf-rt.json`, written by
//! `bf-p4c --bf-rt-schema`, and the SDE's fixed tables such as `$pre.mgid` and `$mirror.cfg`),
//! and the encoding of values in BfRuntime messages.
//!
//! BfRt names every object by a dotted path (`pipe.SgnnIngress.aggregation.agg_table`,
//! `SgnnIngress.aggregation.aggregate`); the SwitchGNN contract names them as the P4Info does
//! (`agg_table`, `aggregate`). [`BfrtInfo::table`] and friends accept either: the full name, or
//! a name equal to the last component of exactly one object. Numeric ids are the schema's.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::proto::p4::config::v1::P4Info;

/// A schema that cannot be read or does not have what the control plane needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BfrtError {
    /// The JSON is not a BfRt schema.
    #[error("BfRt schema: {0}")]
    Schema(String),
    /// An object the control plane names is not in the schema (or is ambiguous).
    #[error("BfRt schema has no {kind} `{name}`{context}")]
    Missing {
        /// "table", "key field", "action", "data field".
        kind: &'static str,
        /// The name asked for.
        name: String,
        /// Where it was looked for (" in table `x`"), or why it is ambiguous.
        context: String,
    },
}

/// How a field's value travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// A big-endian byte string of this many bits (`"type": "bytes", "width": W`).
    Bytes(u32),
    /// `uint8` .. `uint64`: a big-endian byte string of this many bits.
    Uint(u32),
    /// `bool`.
    Bool,
    /// `string` (with choices, as `$direction`).
    Str,
}

impl FieldType {
    /// Bits of the value (0 for bool and string).
    pub fn width(self) -> u32 {
        match self {
            FieldType::Bytes(w) | FieldType::Uint(w) => w,
            FieldType::Bool | FieldType::Str => 0,
        }
    }
}

/// A key or data field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Id within its table (keys) or action (data).
    pub id: u32,
    /// Name.
    pub name: String,
    /// Type.
    pub ty: FieldType,
    /// A list of values (`int_arr_val`, `bool_arr_val`) rather than one.
    pub repeated: bool,
    /// Match type of a key field (`Exact`, `Ternary`, `LPM`, `Range`, `Optional`).
    pub match_type: Option<String>,
}

/// An action of a table, with its data fields (the action's parameters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    /// Id.
    pub id: u32,
    /// Name.
    pub name: String,
    /// Parameters.
    pub data: Vec<Field>,
}

/// A table: a P4 table, a register or counter (`table_type` `Register`, `Counter`), or a
/// fixed table of the SDE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Id.
    pub id: u32,
    /// Full name.
    pub name: String,
    /// `MatchAction_Direct`, `Register`, `Counter`, `PreMgid`, ...
    pub table_type: String,
    /// Entries (cells of a register or counter).
    pub size: u64,
    /// Key fields.
    pub keys: Vec<Field>,
    /// Actions (P4 tables).
    pub actions: Vec<Action>,
    /// Data fields not tied to an action (registers, counters, fixed tables).
    pub data: Vec<Field>,
}

/// The last component of a dotted name.
pub fn short(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// Finds `name` among `items`: the item of that full name, else the one item whose last
/// component is `name`.
fn find<'a, T>(
    items: &'a [T],
    name: &str,
    name_of: impl Fn(&T) -> &str,
    kind: &'static str,
    context: &str,
) -> Result<&'a T, BfrtError> {
    if let Some(t) = items.iter().find(|t| name_of(t) == name) {
        return Ok(t);
    }
    let mut it = items.iter().filter(|t| short(name_of(t)) == short(name));
    match (it.next(), it.next()) {
        (Some(t), None) => Ok(t),
        (None, _) => Err(BfrtError::Missing {
            kind,
            name: name.to_string(),
            context: context.to_string(),
        }),
        (Some(a), Some(b)) => Err(BfrtError::Missing {
            kind,
            name: name.to_string(),
            context: format!(
                "{context} that is unique: `{}` and `{}` both end in it",
                name_of(a),
                name_of(b)
            ),
        }),
    }
}

impl Table {
    /// A key field by name.
    pub fn key(&self, name: &str) -> Result<&Field, BfrtError> {
        find(
            &self.keys,
            name,
            |f| &f.name,
            "key field",
            &format!(" in table `{}`", self.name),
        )
    }

    /// An action by name.
    pub fn action(&self, name: &str) -> Result<&Action, BfrtError> {
        find(
            &self.actions,
            name,
            |a| &a.name,
            "action",
            &format!(" in table `{}`", self.name),
        )
    }

    /// A data field (not of an action) by name.
    pub fn data_field(&self, name: &str) -> Result<&Field, BfrtError> {
        find(
            &self.data,
            name,
            |f| &f.name,
            "data field",
            &format!(" in table `{}`", self.name),
        )
    }

    /// The action of id `id`.
    pub fn action_by_id(&self, id: u32) -> Option<&Action> {
        self.actions.iter().find(|a| a.id == id)
    }
}

impl Action {
    /// A parameter by name.
    pub fn param(&self, name: &str) -> Result<&Field, BfrtError> {
        find(
            &self.data,
            name,
            |f| &f.name,
            "data field",
            &format!(" of action `{}`", self.name),
        )
    }
}

/// A BfRt schema: the program's tables and, merged in, the SDE's fixed ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BfrtInfo {
    /// Every table.
    pub tables: Vec<Table>,
}

fn u32_of(v: &Value, what: &str) -> Result<u32, BfrtError> {
    v.as_u64()
        .and_then(|x| u32::try_from(x).ok())
        .ok_or_else(|| BfrtError::Schema(format!("{what} is not a 32-bit number: {v}")))
}

fn str_of<'a>(v: &'a Value, key: &str, what: &str) -> Result<&'a str, BfrtError> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| BfrtError::Schema(format!("{what} has no string `{key}`")))
}

fn field_of(v: &Value, what: &str) -> Result<Field, BfrtError> {
    // Register, counter and fixed-table data fields are wrapped: {"singleton": {...}}.
    let v = v.get("singleton").unwrap_or(v);
    let name = str_of(v, "name", what)?.to_string();
    let what = format!("{what} `{name}`");
    let id = u32_of(v.get("id").unwrap_or(&Value::Null), &format!("{what} id"))?;
    if v.get("container").is_some() {
        // A field of nested fields (the snapshot tables' `table_info`, for example).
        return Err(BfrtError::Schema(format!(
            "{what} is a container, which this control plane does not use"
        )));
    }
    let t = v
        .get("type")
        .ok_or_else(|| BfrtError::Schema(format!("{what} has no type")))?;
    let ty = match str_of(t, "type", &what)? {
        "bytes" => FieldType::Bytes(u32_of(
            t.get("width").unwrap_or(&Value::Null),
            &format!("{what} width"),
        )?),
        "uint8" => FieldType::Uint(8),
        "uint16" => FieldType::Uint(16),
        "uint32" => FieldType::Uint(32),
        "uint64" => FieldType::Uint(64),
        "bool" => FieldType::Bool,
        "string" => FieldType::Str,
        other => {
            return Err(BfrtError::Schema(format!(
                "{what} has type `{other}`, which this control plane does not use"
            )))
        }
    };
    Ok(Field {
        id,
        name,
        ty,
        repeated: v.get("repeated").and_then(Value::as_bool).unwrap_or(false),
        match_type: v
            .get("match_type")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// Fields of a list, skipping those of types the control plane never uses (`oneof` data of
/// some fixed tables, containers): they cannot be named, so they cannot be misused.
fn fields_of(list: Option<&Value>, what: &str) -> Result<Vec<Field>, BfrtError> {
    let mut out = Vec::new();
    for v in list.and_then(Value::as_array).into_iter().flatten() {
        match field_of(v, what) {
            Ok(f) => out.push(f),
            Err(BfrtError::Schema(m)) if m.contains("does not use") || m.contains("no string") => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

impl BfrtInfo {
    /// Parses a `bf-rt.json` (the program's, or the SDE's non-P4 one).
    pub fn parse(json: &[u8]) -> Result<BfrtInfo, BfrtError> {
        let v: Value = serde_json::from_slice(json).map_err(|e| {
            BfrtError::Schema(format!(
                "not JSON (line {} column {}): {e}",
                e.line(),
                e.column()
            ))
        })?;
        let tables = v
            .get("tables")
            .and_then(Value::as_array)
            .ok_or_else(|| BfrtError::Schema("no `tables` list".into()))?;
        let mut out = BfrtInfo::default();
        for t in tables {
            let name = str_of(t, "name", "a table")?.to_string();
            let what = format!("table `{name}`");
            let mut actions = Vec::new();
            for a in t
                .get("action_specs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let an = str_of(a, "name", &format!("an action of {what}"))?.to_string();
                actions.push(Action {
                    id: u32_of(
                        a.get("id").unwrap_or(&Value::Null),
                        &format!("action `{an}`"),
                    )?,
                    data: fields_of(a.get("data"), &format!("a parameter of action `{an}`"))?,
                    name: an,
                });
            }
            out.tables.push(Table {
                id: u32_of(t.get("id").unwrap_or(&Value::Null), &format!("{what} id"))?,
                table_type: str_of(t, "table_type", &what)?.to_string(),
                size: t.get("size").and_then(Value::as_u64).unwrap_or(0),
                keys: fields_of(t.get("key"), &format!("a key field of {what}"))?,
                data: fields_of(t.get("data"), &format!("a data field of {what}"))?,
                actions,
                name,
            });
        }
        Ok(out)
    }

    /// This schema with `other`'s tables added (the program's and the SDE's fixed ones).
    pub fn merged(mut self, other: BfrtInfo) -> BfrtInfo {
        self.tables.extend(other.tables);
        self
    }

    /// A table by name.
    pub fn table(&self, name: &str) -> Result<&Table, BfrtError> {
        find(&self.tables, name, |t| &t.name, "table", "")
    }

    /// The table of id `id`.
    pub fn table_by_id(&self, id: u32) -> Option<&Table> {
        self.tables.iter().find(|t| t.id == id)
    }

    /// Tables by id.
    pub fn by_id(&self) -> BTreeMap<u32, &Table> {
        self.tables.iter().map(|t| (t.id, t)).collect()
    }
}

/// Every object of the contract `expected` (a P4Info: tables with their key fields, actions
/// with their parameters, registers, counters) that `info` lacks or has with another width or
/// kind, one sentence each. Sizes do not count (a Tofino's are the compiled program's).
pub fn compare_schema(expected: &P4Info, info: &BfrtInfo) -> Vec<String> {
    let mut out = Vec::new();
    let actions: std::collections::BTreeMap<u32, &crate::proto::p4::config::v1::Action> = expected
        .actions
        .iter()
        .map(|a| (a.preamble.as_ref().map_or(0, |p| p.id), a))
        .collect();
    for t in &expected.tables {
        let name = t.preamble.as_ref().map_or("", |p| p.name.as_str());
        let bt = match info.table(name) {
            Ok(bt) => bt,
            Err(e) => {
                out.push(e.to_string());
                continue;
            }
        };
        for m in &t.match_fields {
            match bt.key(&m.name) {
                Ok(k) if k.ty.width() != m.bitwidth as u32 => out.push(format!(
                    "table `{name}` key `{}`: {} bits on the switch, expected {}",
                    m.name,
                    k.ty.width(),
                    m.bitwidth
                )),
                Ok(_) => {}
                Err(e) => out.push(e.to_string()),
            }
        }
        for r in &t.action_refs {
            let Some(a) = actions.get(&r.id) else {
                continue;
            };
            let an = a.preamble.as_ref().map_or("", |p| p.name.as_str());
            if an == crate::schema::NO_ACTION {
                continue;
            }
            match bt.action(an) {
                Ok(ba) => {
                    for p in &a.params {
                        match ba.param(&p.name) {
                            Ok(f) if f.ty.width() != p.bitwidth as u32 => out.push(format!(
                                "action `{an}` param `{}`: {} bits on the switch, expected {}",
                                p.name,
                                f.ty.width(),
                                p.bitwidth
                            )),
                            Ok(_) => {}
                            Err(e) => out.push(e.to_string()),
                        }
                    }
                }
                Err(e) => out.push(e.to_string()),
            }
        }
    }
    for r in &expected.registers {
        let name = r.preamble.as_ref().map_or("", |p| p.name.as_str());
        let want = match crate::p4info::register_cell(r) {
            crate::p4info::CellType::Bit(w) | crate::p4info::CellType::Int(w) => w,
            crate::p4info::CellType::Other => 0,
        };
        let pair = matches!(
            r.type_spec.as_ref().and_then(|t| t.type_spec.as_ref()),
            Some(crate::proto::p4::config::v1::p4_data_type_spec::TypeSpec::Struct(n))
                if n.name == sgnn_switch::tna::LANE_PAIR_TYPE
        );
        match info.table(name) {
            Ok(bt) if bt.table_type != "Register" => out.push(format!(
                "register `{name}` is a {} on the switch",
                bt.table_type
            )),
            // A lane pair: one data field per lane, `NAME.first` and `NAME.second`.
            Ok(bt) if pair => {
                let want: Vec<(String, u32)> = sgnn_switch::tna::LANE_PAIR_MEMBERS
                    .iter()
                    .map(|m| (format!("{name}.{m}"), sgnn_switch::tna::LANE_PAIR_BITS / 2))
                    .collect();
                let have: Vec<(String, u32)> = bt
                    .data
                    .iter()
                    .map(|f| (f.name.clone(), f.ty.width()))
                    .collect();
                if have != want {
                    out.push(format!(
                        "register `{name}`: data fields {have:?} on the switch, expected {want:?}"
                    ));
                }
            }
            Ok(bt) => match bt.data.first() {
                Some(f) if f.ty.width() == want => {}
                Some(f) => out.push(format!(
                    "register `{name}`: {} bits on the switch, expected {want}",
                    f.ty.width()
                )),
                None => out.push(format!("register `{name}` has no data field on the switch")),
            },
            Err(e) => out.push(e.to_string()),
        }
    }
    for c in &expected.counters {
        let name = c.preamble.as_ref().map_or("", |p| p.name.as_str());
        match info.table(name) {
            Ok(bt) if bt.table_type != "Counter" => out.push(format!(
                "counter `{name}` is a {} on the switch",
                bt.table_type
            )),
            Ok(_) => {}
            Err(e) => out.push(e.to_string()),
        }
    }
    out
}

/// `value` as the big-endian byte string of a `width`-bit field (`ceil(width / 8)` bytes), or
/// `None` if it does not fit.
pub fn encode(value: u128, width: u32) -> Option<Vec<u8>> {
    if width < 128 && value >> width != 0 {
        return None;
    }
    let n = width.div_ceil(8) as usize;
    let bytes = value.to_be_bytes();
    Some(bytes[16 - n.min(16)..].to_vec())
}

/// A big-endian byte string as a number, or `None` if longer than 16 bytes (after leading
/// zeros).
pub fn decode(bytes: &[u8]) -> Option<u128> {
    let s = bytes
        .iter()
        .position(|&b| b != 0)
        .map_or(&[][..], |i| &bytes[i..]);
    if s.len() > 16 {
        return None;
    }
    Some(s.iter().fold(0u128, |a, &b| a << 8 | b as u128))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = r#"{"schema_version": "1.0.0", "tables": [
      {"name": "pipe.SgnnIngress.aggregation.agg_table", "id": 100, "table_type": "MatchAction_Direct",
       "size": 4096,
       "key": [{"id": 1, "name": "block_id", "match_type": "Exact", "type": {"type": "bytes", "width": 16}}],
       "action_specs": [{"id": 7, "name": "SgnnIngress.aggregation.aggregate",
                         "data": [{"id": 1, "name": "agg_base", "type": {"type": "bytes", "width": 32}}]}],
       "data": []},
      {"name": "pipe.SgnnIngress.aggregation.agg_count", "id": 101, "table_type": "Register", "size": 16,
       "key": [{"id": 65556, "name": "$REGISTER_INDEX", "match_type": "Exact", "type": {"type": "uint32"}}],
       "data": [{"mandatory": false, "singleton": {"id": 1, "name": "SgnnIngress.aggregation.agg_count.f1",
                 "repeated": true, "type": {"type": "bytes", "width": 16}}}]},
      {"name": "pipe.SgnnEgress.x.agg_count", "id": 102, "table_type": "Register", "size": 16, "key": [], "data": []}
    ]}"#;

    #[test]
    fn names_resolve_in_full_or_by_their_last_component() {
        let b = BfrtInfo::parse(SCHEMA.as_bytes()).unwrap();
        let t = b.table("agg_table").unwrap();
        assert_eq!(t.id, 100);
        assert_eq!(
            b.table("pipe.SgnnIngress.aggregation.agg_table")
                .unwrap()
                .id,
            100
        );
        assert_eq!(t.key("block_id").unwrap().ty, FieldType::Bytes(16));
        let a = t.action("aggregate").unwrap();
        assert_eq!(a.param("agg_base").unwrap().id, 1);
        // Two tables end in agg_count: the short name is ambiguous, the full one is not.
        let e = b.table("agg_count").unwrap_err().to_string();
        assert!(e.contains("both end in it"), "{e}");
        let r = b.table("pipe.SgnnIngress.aggregation.agg_count").unwrap();
        assert_eq!(r.data_field("f1").unwrap().ty, FieldType::Bytes(16));
        assert!(r.data[0].repeated);
        assert_eq!(r.key("$REGISTER_INDEX").unwrap().ty, FieldType::Uint(32));
        let e = b.table("nope").unwrap_err().to_string();
        assert_eq!(e, "BfRt schema has no table `nope`");
        let e = BfrtInfo::parse(b"{\"tables\": [{\"id\": 1}]}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no string `name`"), "{e}");
        let e = BfrtInfo::parse(b"{\n\"tables\": [,]}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn values_are_big_endian_strings_of_the_field_width() {
        assert_eq!(encode(0x1234, 16).unwrap(), vec![0x12, 0x34]);
        assert_eq!(encode(1, 9).unwrap(), vec![0, 1]);
        assert_eq!(encode(0x200, 9), None);
        assert_eq!(encode(u128::MAX, 128).unwrap(), vec![0xff; 16]);
        assert_eq!(decode(&[0, 0, 0x12, 0x34]), Some(0x1234));
        assert_eq!(decode(&[]), Some(0));
        assert_eq!(decode(&[1; 17]), None);
    }
}
