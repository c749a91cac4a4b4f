//! The one place where names become P4Runtime ids and numbers become canonical binary strings
//! (and back). Every backend validates through here, so a bad name or a value too wide for its
//! field fails the same way, with [`TargetError::InvalidArgument`], whatever the switch.

use std::ops::Range;

use super::{Match, Op, Replica, TableEntry, TargetError};
use sgnn_p4rt::p4info::{
    decode_bits, decode_int, encode_bits, encode_int, ActionScope, CellType, MatchKind,
    P4InfoIndex, RegisterInfo,
};
use sgnn_p4rt::proto::p4::v1 as p4;

fn invalid(msg: String) -> TargetError {
    TargetError::InvalidArgument(msg)
}

fn bits(value: u128, width: u32, what: impl FnOnce() -> String) -> Result<Vec<u8>, TargetError> {
    encode_bits(value, width).map_err(|e| invalid(format!("{}: {e}", what())))
}

/// A table entry by name to P4Runtime's form. With `delete`, only the key is checked and sent.
pub fn table_entry_to_p4(
    ix: &P4InfoIndex,
    e: &TableEntry,
    delete: bool,
) -> Result<p4::TableEntry, TargetError> {
    use p4::field_match::FieldMatchType as F;
    let table = ix.table(&e.table)?;
    if table.is_const {
        return Err(invalid(format!(
            "table `{}` is const: its entries are fixed by the P4 program",
            table.name
        )));
    }
    let mut fields = Vec::with_capacity(e.matches.len());
    for (i, (name, m)) in e.matches.iter().enumerate() {
        let f = table.field(name)?;
        if e.matches[..i].iter().any(|(n, _)| n == name) {
            return Err(invalid(format!(
                "key field `{name}` of table `{}` is given twice",
                table.name
            )));
        }
        let what = || format!("key field `{name}` of table `{}`", table.name);
        let w = f.bitwidth;
        let kind_error =
            |given: &str| invalid(format!("{} is matched {}, not {given}", what(), f.kind));
        let fm = match (m, &f.kind) {
            (Match::Exact(v), MatchKind::Exact) => Some(F::Exact(p4::field_match::Exact {
                value: bits(*v, w, what)?,
            })),
            (Match::Optional(v), MatchKind::Optional) => {
                Some(F::Optional(p4::field_match::Optional {
                    value: bits(*v, w, what)?,
                }))
            }
            (&Match::Lpm { value, prefix_len }, MatchKind::Lpm) => {
                if prefix_len > w {
                    return Err(invalid(format!(
                        "{}: prefix length {prefix_len} is longer than the field's {w} bits",
                        what()
                    )));
                }
                let host_bits = value & low_mask(w - prefix_len);
                if host_bits != 0 {
                    return Err(invalid(format!(
                        "{}: value {value:#x} has bits set after the /{prefix_len} prefix",
                        what()
                    )));
                }
                // A zero-length prefix is a wildcard, which P4Runtime says to leave out.
                (prefix_len > 0).then_some(F::Lpm(p4::field_match::Lpm {
                    value: bits(value, w, what)?,
                    prefix_len: prefix_len as i32,
                }))
            }
            (&Match::Ternary { value, mask }, MatchKind::Ternary) => {
                if value & !mask != 0 {
                    return Err(invalid(format!(
                        "{}: value {value:#x} has bits set outside the mask {mask:#x}",
                        what()
                    )));
                }
                let mask_bytes = bits(mask, w, what)?;
                (mask != 0).then_some(F::Ternary(p4::field_match::Ternary {
                    value: bits(value, w, what)?,
                    mask: mask_bytes,
                }))
            }
            (&Match::Range { low, high }, MatchKind::Range) => {
                if low > high {
                    return Err(invalid(format!("{}: empty range {low}..={high}", what())));
                }
                let high_bytes = bits(high, w, what)?;
                let full = low == 0 && high == low_mask(w);
                (!full).then_some(F::Range(p4::field_match::Range {
                    low: bits(low, w, what)?,
                    high: high_bytes,
                }))
            }
            (Match::Exact(_), _) => return Err(kind_error("exact")),
            (Match::Optional(_), _) => return Err(kind_error("optional")),
            (Match::Lpm { .. }, _) => return Err(kind_error("lpm")),
            (Match::Ternary { .. }, _) => return Err(kind_error("ternary")),
            (Match::Range { .. }, _) => return Err(kind_error("range")),
        };
        if let Some(fm) = fm {
            fields.push(p4::FieldMatch {
                field_id: f.id,
                field_match_type: Some(fm),
            });
        }
    }
    for f in &table.fields {
        if f.kind == MatchKind::Exact && !e.matches.iter().any(|(n, _)| *n == f.name) {
            return Err(invalid(format!(
                "key field `{}` of table `{}` is missing (exact fields cannot be wildcards)",
                f.name, table.name
            )));
        }
    }
    let needs_priority = table.fields.iter().any(|f| {
        matches!(
            f.kind,
            MatchKind::Ternary | MatchKind::Range | MatchKind::Optional
        )
    });
    if needs_priority && e.priority <= 0 {
        return Err(invalid(format!(
            "table `{}` has ternary, range or optional fields: entries need a priority above 0",
            table.name
        )));
    }
    if !needs_priority && e.priority != 0 {
        return Err(invalid(format!(
            "table `{}` has only exact and lpm fields: priority must be 0, not {}",
            table.name, e.priority
        )));
    }
    // A delete names the entry by its key; P4Runtime ignores (and we do not send) the action.
    let action = if delete {
        None
    } else {
        Some(action_to_p4(ix, table, e, false)?)
    };
    Ok(p4::TableEntry {
        table_id: table.id,
        r#match: fields,
        action: action.map(|a| p4::TableAction {
            r#type: Some(p4::table_action::Type::Action(a)),
        }),
        priority: e.priority,
        ..Default::default()
    })
}

fn low_mask(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

fn action_to_p4(
    ix: &P4InfoIndex,
    table: &sgnn_p4rt::p4info::TableInfo,
    e: &TableEntry,
    default: bool,
) -> Result<p4::Action, TargetError> {
    let action = ix.action(&e.action)?;
    match table.action_scope(action.id) {
        None => {
            return Err(invalid(format!(
                "table `{}` cannot call action `{}`",
                table.name, action.name
            )))
        }
        Some(ActionScope::TableOnly) if default => {
            return Err(invalid(format!(
                "action `{}` is only for entries of table `{}`, not its default",
                action.name, table.name
            )))
        }
        Some(ActionScope::DefaultOnly) if !default => {
            return Err(invalid(format!(
                "action `{}` is only the default action of table `{}`, not for entries",
                action.name, table.name
            )))
        }
        Some(_) => {}
    }
    let mut params = Vec::with_capacity(action.params.len());
    for (i, (name, value)) in e.params.iter().enumerate() {
        let p = action.param(name)?;
        if e.params[..i].iter().any(|(n, _)| n == name) {
            return Err(invalid(format!(
                "parameter `{name}` of action `{}` is given twice",
                action.name
            )));
        }
        params.push(p4::action::Param {
            param_id: p.id,
            value: bits(*value, p.bitwidth, || {
                format!("parameter `{name}` of action `{}`", action.name)
            })?,
        });
    }
    for p in &action.params {
        if !e.params.iter().any(|(n, _)| *n == p.name) {
            return Err(invalid(format!(
                "parameter `{}` of action `{}` is missing",
                p.name, action.name
            )));
        }
    }
    Ok(p4::Action {
        action_id: action.id,
        params,
    })
}

/// The switch answered with something this P4Info cannot describe.
fn foreign(msg: String) -> TargetError {
    TargetError::Mismatch {
        differences: vec![msg],
    }
}

fn read_bits(bytes: &[u8], width: u32, what: impl FnOnce() -> String) -> Result<u128, TargetError> {
    decode_bits(bytes, width).map_err(|e| foreign(format!("the switch returned {}: {e}", what())))
}

/// A P4Runtime table entry (as read from a switch) to the neutral form, fields and params in
/// P4Info order. Ids the P4Info does not know mean the switch runs another program:
/// [`TargetError::Mismatch`].
pub fn table_entry_from_p4(
    ix: &P4InfoIndex,
    e: &p4::TableEntry,
) -> Result<TableEntry, TargetError> {
    use p4::field_match::FieldMatchType as F;
    let mismatch = |e: sgnn_p4rt::p4info::P4InfoError| foreign(format!("the switch returned {e}"));
    let table = ix.table_by_id(e.table_id).map_err(mismatch)?;
    let mut matches = Vec::with_capacity(e.r#match.len());
    for f in &table.fields {
        let Some(fm) = e.r#match.iter().find(|m| m.field_id == f.id) else {
            continue;
        };
        let w = f.bitwidth;
        let what = || format!("key field `{}` of table `{}`", f.name, table.name);
        let m = match &fm.field_match_type {
            Some(F::Exact(x)) => Match::Exact(read_bits(&x.value, w, what)?),
            Some(F::Optional(x)) => Match::Optional(read_bits(&x.value, w, what)?),
            Some(F::Lpm(x)) => Match::Lpm {
                value: read_bits(&x.value, w, what)?,
                prefix_len: x.prefix_len.max(0) as u32,
            },
            Some(F::Ternary(x)) => Match::Ternary {
                value: read_bits(&x.value, w, what)?,
                mask: read_bits(&x.mask, w, what)?,
            },
            Some(F::Range(x)) => Match::Range {
                low: read_bits(&x.low, w, what)?,
                high: read_bits(&x.high, w, what)?,
            },
            None => {
                return Err(foreign(format!(
                    "the switch returned {} without a match",
                    what()
                )))
            }
        };
        matches.push((f.name.clone(), m));
    }
    if let Some(m) = e
        .r#match
        .iter()
        .find(|m| table.field_by_id(m.field_id).is_err())
    {
        return Err(foreign(format!(
            "the switch returned an entry of table `{}` with unknown key field id {}",
            table.name, m.field_id
        )));
    }
    let (action, params) = match e.action.as_ref().and_then(|a| a.r#type.as_ref()) {
        Some(p4::table_action::Type::Action(a)) => {
            let info = ix.action_by_id(a.action_id).map_err(mismatch)?;
            let mut params = Vec::with_capacity(a.params.len());
            for p in &info.params {
                if let Some(v) = a.params.iter().find(|x| x.param_id == p.id) {
                    let value = read_bits(&v.value, p.bitwidth, || {
                        format!("parameter `{}` of action `{}`", p.name, info.name)
                    })?;
                    params.push((p.name.clone(), value));
                }
            }
            (info.name.clone(), params)
        }
        None => (String::new(), Vec::new()),
    };
    Ok(TableEntry {
        table: table.name.clone(),
        matches,
        action,
        params,
        priority: e.priority,
    })
}

/// Checks `range` lies within an object's `size` cells.
pub fn check_range(
    kind: &str,
    name: &str,
    range: &Range<u64>,
    size: u64,
) -> Result<(), TargetError> {
    if range.start > range.end || range.end > size {
        return Err(invalid(format!(
            "cells {}..{} are out of range for {kind} `{name}` ({size} cells)",
            range.start, range.end
        )));
    }
    Ok(())
}

/// Refuses a register whose cells are not one `bit<W>` or `int<W>` value (the TNA program's
/// lane pairs, `lane_pair_t`): the control plane reads and writes numbers, over every backend.
pub fn check_plain_cells(r: &RegisterInfo) -> Result<(), TargetError> {
    match r.cell {
        CellType::Bit(_) | CellType::Int(_) => Ok(()),
        CellType::Other => Err(not_plain(r)),
    }
}

fn not_plain(r: &RegisterInfo) -> TargetError {
    invalid(format!(
        "register `{}` does not hold bit<W> or int<W> cells",
        r.name
    ))
}

/// A register cell write to P4Runtime's form.
pub fn register_entry_to_p4(
    ix: &P4InfoIndex,
    register: &str,
    index: u64,
    value: u128,
) -> Result<p4::RegisterEntry, TargetError> {
    let r = ix.register(register)?;
    check_range(
        "register",
        &r.name,
        &(index..index.saturating_add(1)),
        r.size,
    )?;
    let what = || format!("register `{}`[{index}]", r.name);
    let bytes = match r.cell {
        CellType::Bit(w) => bits(value, w, what)?,
        CellType::Int(w) => {
            if w < 128 && value >> w != 0 {
                return Err(invalid(format!(
                    "{}: value {value:#x} does not fit in {w} bits",
                    what()
                )));
            }
            let shift = 128 - w;
            let signed = ((value << shift) as i128) >> shift;
            encode_int(signed, w).map_err(|e| invalid(format!("{}: {e}", what())))?
        }
        CellType::Other => return Err(not_plain(r)),
    };
    Ok(p4::RegisterEntry {
        register_id: r.id,
        index: Some(p4::Index {
            index: index as i64,
        }),
        data: Some(p4::P4Data {
            data: Some(p4::p4_data::Data::Bitstring(bytes)),
        }),
    })
}

/// A register cell's value from what a switch returned (for `int<W>`, the W-bit pattern).
pub fn register_value_from_p4(
    r: &RegisterInfo,
    data: Option<&p4::P4Data>,
) -> Result<u128, TargetError> {
    let what = || format!("a value for register `{}`", r.name);
    let Some(p4::p4_data::Data::Bitstring(bytes)) = data.and_then(|d| d.data.as_ref()) else {
        return Err(foreign(format!(
            "the switch returned {} that is not a bit string",
            what()
        )));
    };
    match r.cell {
        CellType::Bit(w) => read_bits(bytes, w, what),
        CellType::Int(w) => decode_int(bytes, w)
            .map(|v| v as u128 & low_mask(w))
            .map_err(|e| foreign(format!("the switch returned {}: {e}", what()))),
        CellType::Other => Err(not_plain(r)),
    }
}

/// Replicas to P4Runtime's form (`egress_port`, which v1.3 and v1.4 servers both accept; bmv2
/// rejects port 0 in the newer `port` bytes). Fails on a repeated (port, instance).
pub fn replicas_to_p4(replicas: &[Replica]) -> Result<Vec<p4::Replica>, TargetError> {
    for (i, r) in replicas.iter().enumerate() {
        if replicas[..i].contains(r) {
            return Err(invalid(format!(
                "replica (port {}, instance {}) is given twice",
                r.port, r.instance
            )));
        }
    }
    Ok(replicas
        .iter()
        .map(|r| p4::Replica {
            instance: r.instance,
            port_kind: Some(p4::replica::PortKind::EgressPort(r.port)),
        })
        .collect())
}

/// Replicas from what a switch returned (either port form), sorted.
pub fn replicas_from_p4(replicas: &[p4::Replica]) -> Result<Vec<Replica>, TargetError> {
    let mut out = replicas
        .iter()
        .map(|r| {
            let port = match &r.port_kind {
                Some(p4::replica::PortKind::EgressPort(p)) => *p,
                Some(p4::replica::PortKind::Port(bytes)) => {
                    read_bits(bytes, 32, || "a replica port".to_string())? as u32
                }
                None => 0,
            };
            Ok(Replica {
                port,
                instance: r.instance,
            })
        })
        .collect::<Result<Vec<_>, TargetError>>()?;
    out.sort();
    Ok(out)
}

/// One operation to a P4Runtime update. `pre_exists` says whether the multicast group or clone
/// session of a `Set*` operation exists already (MODIFY) or not (INSERT); other operations ignore
/// it.
pub fn op_to_update(
    ix: &P4InfoIndex,
    op: &Op,
    pre_exists: bool,
) -> Result<p4::Update, TargetError> {
    use p4::entity::Entity as E;
    use p4::packet_replication_engine_entry::Type as Pre;
    use p4::update::Type as U;
    let set = if pre_exists { U::Modify } else { U::Insert };
    let (kind, entity) = match op {
        Op::Insert(e) => (U::Insert, E::TableEntry(table_entry_to_p4(ix, e, false)?)),
        Op::Modify(e) => (U::Modify, E::TableEntry(table_entry_to_p4(ix, e, false)?)),
        Op::Delete(e) => (U::Delete, E::TableEntry(table_entry_to_p4(ix, e, true)?)),
        Op::SetDefault(e) => {
            if !e.matches.is_empty() {
                return Err(invalid(format!(
                    "the default action of `{}` has no key; leave the matches empty",
                    e.table
                )));
            }
            let table = ix.table(&e.table)?;
            if table.const_default_action.is_some() {
                return Err(invalid(format!(
                    "the default action of `{}` is fixed by the P4 program",
                    e.table
                )));
            }
            let action = action_to_p4(ix, table, e, true)?;
            let t = p4::TableEntry {
                table_id: table.id,
                action: Some(p4::TableAction {
                    r#type: Some(p4::table_action::Type::Action(action)),
                }),
                is_default_action: true,
                ..Default::default()
            };
            (U::Modify, E::TableEntry(t))
        }
        Op::WriteRegister {
            register,
            index,
            value,
        } => (
            U::Modify,
            E::RegisterEntry(register_entry_to_p4(ix, register, *index, *value)?),
        ),
        Op::SetMulticastGroup { group, replicas } => {
            if *group == 0 {
                return Err(invalid(
                    "multicast group 0 means no group; use 1 or above".to_string(),
                ));
            }
            (
                set,
                E::PacketReplicationEngineEntry(p4::PacketReplicationEngineEntry {
                    r#type: Some(Pre::MulticastGroupEntry(p4::MulticastGroupEntry {
                        multicast_group_id: *group,
                        replicas: replicas_to_p4(replicas)?,
                        metadata: Vec::new(),
                    })),
                }),
            )
        }
        Op::SetCloneSession { session, replicas } => {
            if *session == 0 {
                return Err(invalid(
                    "clone session 0 is not a valid session id; use 1 or above".to_string(),
                ));
            }
            (
                set,
                E::PacketReplicationEngineEntry(p4::PacketReplicationEngineEntry {
                    r#type: Some(Pre::CloneSessionEntry(p4::CloneSessionEntry {
                        session_id: *session,
                        replicas: replicas_to_p4(replicas)?,
                        class_of_service: 0,
                        packet_length_bytes: 0,
                    })),
                }),
            )
        }
    };
    Ok(p4::Update {
        r#type: kind as i32,
        entity: Some(p4::Entity {
            entity: Some(entity),
        }),
    })
}
