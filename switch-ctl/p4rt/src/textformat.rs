//! A small reader of protobuf text format, for the P4Info subset this crate models.
//!
//! p4c writes P4Info as text (`.txtpb`) by default. Reading it with a general text-format
//! library would need the full P4Info schema at run time (and would reject the fields this
//! crate's subset leaves out), so this module parses the text into a generic tree of fields and
//! then picks out the P4Info fields it knows, skipping the others as a binary decoder would.

use crate::proto::p4::config::v1 as cfg;

/// Why a text-format P4Info could not be read.
#[derive(Debug)]
pub(crate) enum TextError {
    /// Malformed text, or a value of the wrong kind, at a place in the file.
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// Top-level objects the crate does not model.
    Unmodelled(Vec<&'static str>),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Number(String),
    Str(Vec<u8>),
    Punct(char),
}

#[derive(Debug, Clone, Copy)]
struct Pos {
    line: usize,
    column: usize,
}

fn err<T>(pos: Pos, message: impl Into<String>) -> Result<T, TextError> {
    Err(TextError::Syntax {
        line: pos.line,
        column: pos.column,
        message: message.into(),
    })
}

fn tokenize(text: &str) -> Result<Vec<(Tok, Pos)>, TextError> {
    let bytes = text.as_bytes();
    let mut toks = Vec::new();
    let (mut i, mut line, mut line_start) = (0, 1, 0);
    while i < bytes.len() {
        let pos = Pos {
            line,
            column: i - line_start + 1,
        };
        let c = bytes[i];
        match c {
            b'\n' => {
                i += 1;
                line += 1;
                line_start = i;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'{' | b'}' | b'<' | b'>' | b':' | b',' | b';' | b'[' | b']' | b'/' | b'.' => {
                // '.' and '/' only appear inside extension names `[a.b/c]`.
                toks.push((Tok::Punct(c as char), pos));
                i += 1;
            }
            b'"' | b'\'' => {
                let (s, next, newlines) = string(bytes, i, pos)?;
                line += newlines;
                toks.push((Tok::Str(s), pos));
                i = next;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < bytes.len()
                    && (bytes[i].is_ascii_alphanumeric() || b"._+-".contains(&bytes[i]))
                {
                    i += 1;
                }
                toks.push((Tok::Number(text[start..i].to_string()), pos));
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                toks.push((Tok::Ident(text[start..i].to_string()), pos));
            }
            _ => return err(pos, format!("unexpected character `{}`", c as char)),
        }
    }
    Ok(toks)
}

/// Reads a quoted string starting at `start`; returns its bytes, the index after the closing
/// quote, and how many newlines it spanned (none: text format strings are one line).
fn string(bytes: &[u8], start: usize, pos: Pos) -> Result<(Vec<u8>, usize, usize), TextError> {
    let quote = bytes[start];
    let mut out = Vec::new();
    let mut i = start + 1;
    loop {
        let Some(&c) = bytes.get(i) else {
            return err(pos, "unterminated string");
        };
        i += 1;
        match c {
            c if c == quote => return Ok((out, i, 0)),
            b'\n' => return err(pos, "unterminated string"),
            b'\\' => {
                let Some(&e) = bytes.get(i) else {
                    return err(pos, "unterminated string");
                };
                i += 1;
                match e {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'v' => out.push(11),
                    b'\\' | b'\'' | b'"' | b'?' => out.push(e),
                    b'x' => {
                        let mut v = 0u32;
                        let mut n = 0;
                        while n < 2 && i < bytes.len() && bytes[i].is_ascii_hexdigit() {
                            v = v * 16 + (bytes[i] as char).to_digit(16).unwrap_or(0);
                            i += 1;
                            n += 1;
                        }
                        if n == 0 {
                            return err(pos, "`\\x` without hex digits in string");
                        }
                        out.push(v as u8);
                    }
                    b'0'..=b'7' => {
                        let mut v = (e - b'0') as u32;
                        let mut n = 1;
                        while n < 3 && i < bytes.len() && (b'0'..=b'7').contains(&bytes[i]) {
                            v = v * 8 + (bytes[i] - b'0') as u32;
                            i += 1;
                            n += 1;
                        }
                        out.push(v as u8);
                    }
                    _ => return err(pos, format!("unknown escape `\\{}` in string", e as char)),
                }
            }
            c => out.push(c),
        }
    }
}

#[derive(Debug)]
enum Value {
    Scalar(Tok),
    Message(Vec<Field>),
}

#[derive(Debug)]
struct Field {
    name: String,
    value: Value,
    pos: Pos,
}

struct Parser {
    toks: Vec<(Tok, Pos)>,
    i: usize,
    end: Pos,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|(t, _)| t)
    }

    fn pos(&self) -> Pos {
        self.toks.get(self.i).map(|(_, p)| *p).unwrap_or(self.end)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.i).map(|(t, _)| t.clone());
        self.i += 1;
        t
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Punct(c)) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// Fields until `close` (or the end of input when `close` is `None`).
    fn fields(&mut self, close: Option<char>) -> Result<Vec<Field>, TextError> {
        let mut out = Vec::new();
        loop {
            match (self.peek(), close) {
                (None, None) => return Ok(out),
                (None, Some(c)) => {
                    return err(
                        self.pos(),
                        format!("expected `{c}`, found the end of the file"),
                    )
                }
                (Some(Tok::Punct(p)), Some(c)) if *p == c => {
                    self.i += 1;
                    return Ok(out);
                }
                _ => {}
            }
            let pos = self.pos();
            let name = match self.next() {
                Some(Tok::Ident(n)) => n,
                Some(Tok::Punct('[')) => {
                    // An extension or Any type URL: `[type.googleapis.com/x.y]`.
                    let mut n = String::from("[");
                    loop {
                        match self.next() {
                            Some(Tok::Punct(']')) => break,
                            Some(Tok::Ident(s)) | Some(Tok::Number(s)) => n.push_str(&s),
                            Some(Tok::Punct(p)) => n.push(p),
                            _ => return err(pos, "unterminated `[` in field name"),
                        }
                    }
                    n.push(']');
                    n
                }
                _ => return err(pos, "expected a field name"),
            };
            let colon = self.eat(':');
            if colon && self.eat('[') {
                // A list: `name: [v, v, ...]` of scalars or messages.
                if !self.eat(']') {
                    loop {
                        let value = self.value(true)?;
                        out.push(Field {
                            name: name.clone(),
                            value,
                            pos,
                        });
                        if self.eat(']') {
                            break;
                        }
                        if !self.eat(',') {
                            return err(self.pos(), "expected `,` or `]` in list");
                        }
                    }
                }
            } else {
                let value = self.value(colon)?;
                out.push(Field { name, value, pos });
            }
            // Optional separators.
            if !self.eat(',') {
                self.eat(';');
            }
        }
    }

    fn value(&mut self, scalar_allowed: bool) -> Result<Value, TextError> {
        let pos = self.pos();
        if self.eat('{') {
            return Ok(Value::Message(self.fields(Some('}'))?));
        }
        if self.eat('<') {
            return Ok(Value::Message(self.fields(Some('>'))?));
        }
        if !scalar_allowed {
            return err(pos, "expected `:` or `{` after a field name");
        }
        match self.next() {
            Some(Tok::Str(mut s)) => {
                // Adjacent strings are concatenated.
                while let Some(Tok::Str(more)) = self.peek() {
                    s.extend_from_slice(more);
                    self.i += 1;
                }
                Ok(Value::Scalar(Tok::Str(s)))
            }
            Some(t @ (Tok::Ident(_) | Tok::Number(_))) => Ok(Value::Scalar(t)),
            _ => err(pos, "expected a value"),
        }
    }
}

fn parse_tree(text: &str) -> Result<Vec<Field>, TextError> {
    let toks = tokenize(text)?;
    let end = Pos {
        line: text.lines().count().max(1),
        column: 1,
    };
    let mut p = Parser { toks, i: 0, end };
    p.fields(None)
}

// Typed accessors: each checks the value is of the kind the field needs.

fn msg(f: &Field) -> Result<&[Field], TextError> {
    match &f.value {
        Value::Message(m) => Ok(m),
        Value::Scalar(_) => err(
            f.pos,
            format!("`{}` must be a message (`{{ ... }}`)", f.name),
        ),
    }
}

fn integer(f: &Field) -> Result<i128, TextError> {
    let Value::Scalar(Tok::Number(s)) = &f.value else {
        return err(f.pos, format!("`{}` must be an integer", f.name));
    };
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.as_str()),
    };
    let parsed = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i128::from_str_radix(h, 16)
    } else if digits.len() > 1 && digits.starts_with('0') {
        i128::from_str_radix(&digits[1..], 8)
    } else {
        digits.parse()
    };
    match parsed {
        Ok(v) => Ok(if neg { -v } else { v }),
        Err(_) => err(f.pos, format!("`{}`: `{s}` is not an integer", f.name)),
    }
}

fn int_in<T: TryFrom<i128>>(f: &Field) -> Result<T, TextError> {
    let v = integer(f)?;
    T::try_from(v).or_else(|_| err(f.pos, format!("`{}`: {v} is out of range", f.name)))
}

fn string_of(f: &Field) -> Result<String, TextError> {
    match &f.value {
        Value::Scalar(Tok::Str(s)) => String::from_utf8(s.clone())
            .or_else(|_| err(f.pos, format!("`{}` is not valid UTF-8", f.name))),
        _ => err(f.pos, format!("`{}` must be a string", f.name)),
    }
}

fn boolean(f: &Field) -> Result<bool, TextError> {
    match &f.value {
        Value::Scalar(Tok::Ident(s)) if s == "true" || s == "True" || s == "t" => Ok(true),
        Value::Scalar(Tok::Ident(s)) if s == "false" || s == "False" || s == "f" => Ok(false),
        Value::Scalar(Tok::Number(s)) if s == "1" => Ok(true),
        Value::Scalar(Tok::Number(s)) if s == "0" => Ok(false),
        _ => err(f.pos, format!("`{}` must be true or false", f.name)),
    }
}

fn enumeration(f: &Field, by_name: fn(&str) -> Option<i32>) -> Result<i32, TextError> {
    match &f.value {
        Value::Scalar(Tok::Ident(s)) => by_name(s).map_or_else(
            || err(f.pos, format!("`{}`: unknown value `{s}`", f.name)),
            Ok,
        ),
        Value::Scalar(Tok::Number(_)) => int_in(f),
        _ => err(f.pos, format!("`{}` must be an enum value", f.name)),
    }
}

fn documentation(fields: &[Field]) -> Result<cfg::Documentation, TextError> {
    let mut d = cfg::Documentation::default();
    for f in fields {
        match f.name.as_str() {
            "brief" => d.brief = string_of(f)?,
            "description" => d.description = string_of(f)?,
            _ => {}
        }
    }
    Ok(d)
}

fn pkg_info(fields: &[Field]) -> Result<cfg::PkgInfo, TextError> {
    let mut p = cfg::PkgInfo::default();
    for f in fields {
        match f.name.as_str() {
            "name" => p.name = string_of(f)?,
            "version" => p.version = string_of(f)?,
            "doc" => p.doc = Some(documentation(msg(f)?)?),
            "annotations" => p.annotations.push(string_of(f)?),
            "arch" => p.arch = string_of(f)?,
            "organization" => p.organization = string_of(f)?,
            "contact" => p.contact = string_of(f)?,
            "url" => p.url = string_of(f)?,
            _ => {}
        }
    }
    Ok(p)
}

fn preamble(fields: &[Field]) -> Result<cfg::Preamble, TextError> {
    let mut p = cfg::Preamble::default();
    for f in fields {
        match f.name.as_str() {
            "id" => p.id = int_in(f)?,
            "name" => p.name = string_of(f)?,
            "alias" => p.alias = string_of(f)?,
            "annotations" => p.annotations.push(string_of(f)?),
            "doc" => p.doc = Some(documentation(msg(f)?)?),
            _ => {}
        }
    }
    Ok(p)
}

fn match_field(fields: &[Field]) -> Result<cfg::MatchField, TextError> {
    use cfg::match_field::{Match, MatchType};
    let mut m = cfg::MatchField::default();
    for f in fields {
        match f.name.as_str() {
            "id" => m.id = int_in(f)?,
            "name" => m.name = string_of(f)?,
            "annotations" => m.annotations.push(string_of(f)?),
            "bitwidth" => m.bitwidth = int_in(f)?,
            "match_type" => {
                m.r#match = Some(Match::MatchType(enumeration(f, |s| {
                    MatchType::from_str_name(s).map(|t| t as i32)
                })?))
            }
            "other_match_type" => m.r#match = Some(Match::OtherMatchType(string_of(f)?)),
            "doc" => m.doc = Some(documentation(msg(f)?)?),
            _ => {}
        }
    }
    Ok(m)
}

fn action_ref(fields: &[Field]) -> Result<cfg::ActionRef, TextError> {
    let mut r = cfg::ActionRef::default();
    for f in fields {
        match f.name.as_str() {
            "id" => r.id = int_in(f)?,
            "scope" => {
                r.scope = enumeration(f, |s| {
                    cfg::action_ref::Scope::from_str_name(s).map(|t| t as i32)
                })?
            }
            "annotations" => r.annotations.push(string_of(f)?),
            _ => {}
        }
    }
    Ok(r)
}

fn table(fields: &[Field]) -> Result<cfg::Table, TextError> {
    let mut t = cfg::Table::default();
    for f in fields {
        match f.name.as_str() {
            "preamble" => t.preamble = Some(preamble(msg(f)?)?),
            "match_fields" => t.match_fields.push(match_field(msg(f)?)?),
            "action_refs" => t.action_refs.push(action_ref(msg(f)?)?),
            "const_default_action_id" => t.const_default_action_id = int_in(f)?,
            "implementation_id" => t.implementation_id = int_in(f)?,
            "direct_resource_ids" => t.direct_resource_ids.push(int_in(f)?),
            "size" => t.size = int_in(f)?,
            "idle_timeout_behavior" => {
                t.idle_timeout_behavior = enumeration(f, |s| {
                    cfg::table::IdleTimeoutBehavior::from_str_name(s).map(|t| t as i32)
                })?
            }
            "is_const_table" => t.is_const_table = boolean(f)?,
            "has_initial_entries" => t.has_initial_entries = boolean(f)?,
            _ => {}
        }
    }
    Ok(t)
}

fn action(fields: &[Field]) -> Result<cfg::Action, TextError> {
    let mut a = cfg::Action::default();
    for f in fields {
        match f.name.as_str() {
            "preamble" => a.preamble = Some(preamble(msg(f)?)?),
            "params" => {
                let mut p = cfg::action::Param::default();
                for g in msg(f)? {
                    match g.name.as_str() {
                        "id" => p.id = int_in(g)?,
                        "name" => p.name = string_of(g)?,
                        "annotations" => p.annotations.push(string_of(g)?),
                        "bitwidth" => p.bitwidth = int_in(g)?,
                        "doc" => p.doc = Some(documentation(msg(g)?)?),
                        _ => {}
                    }
                }
                a.params.push(p);
            }
            _ => {}
        }
    }
    Ok(a)
}

fn counter(fields: &[Field]) -> Result<cfg::Counter, TextError> {
    let mut c = cfg::Counter::default();
    for f in fields {
        match f.name.as_str() {
            "preamble" => c.preamble = Some(preamble(msg(f)?)?),
            "spec" => {
                let mut spec = cfg::CounterSpec::default();
                for g in msg(f)? {
                    if g.name == "unit" {
                        spec.unit = enumeration(g, |s| {
                            cfg::counter_spec::Unit::from_str_name(s).map(|t| t as i32)
                        })?;
                    }
                }
                c.spec = Some(spec);
            }
            "size" => c.size = int_in(f)?,
            _ => {}
        }
    }
    Ok(c)
}

fn width_of(fields: &[Field], name: &str) -> Result<i32, TextError> {
    let mut w = 0;
    for f in fields {
        if f.name == name {
            w = int_in(f)?;
        }
    }
    Ok(w)
}

fn bitstring_spec(fields: &[Field]) -> Result<cfg::P4BitstringLikeTypeSpec, TextError> {
    use cfg::p4_bitstring_like_type_spec::TypeSpec;
    let mut b = cfg::P4BitstringLikeTypeSpec::default();
    for f in fields {
        match f.name.as_str() {
            "bit" => {
                b.type_spec = Some(TypeSpec::Bit(cfg::P4BitTypeSpec {
                    bitwidth: width_of(msg(f)?, "bitwidth")?,
                }))
            }
            "int" => {
                b.type_spec = Some(TypeSpec::Int(cfg::P4IntTypeSpec {
                    bitwidth: width_of(msg(f)?, "bitwidth")?,
                }))
            }
            "varbit" => {
                b.type_spec = Some(TypeSpec::Varbit(cfg::P4VarbitTypeSpec {
                    max_bitwidth: width_of(msg(f)?, "max_bitwidth")?,
                }))
            }
            "annotations" => b.annotations.push(string_of(f)?),
            _ => {}
        }
    }
    Ok(b)
}

fn register(fields: &[Field]) -> Result<cfg::Register, TextError> {
    use cfg::p4_data_type_spec::TypeSpec;
    let mut r = cfg::Register::default();
    for f in fields {
        match f.name.as_str() {
            "preamble" => r.preamble = Some(preamble(msg(f)?)?),
            "type_spec" => {
                let mut spec = cfg::P4DataTypeSpec::default();
                for g in msg(f)? {
                    match g.name.as_str() {
                        "bitstring" => {
                            spec.type_spec = Some(TypeSpec::Bitstring(bitstring_spec(msg(g)?)?))
                        }
                        "bool" => spec.type_spec = Some(TypeSpec::Bool(cfg::P4BoolType {})),
                        "struct" => {
                            let mut n = cfg::P4NamedType::default();
                            for h in msg(g)? {
                                if h.name == "name" {
                                    n.name = string_of(h)?;
                                }
                            }
                            spec.type_spec = Some(TypeSpec::Struct(n));
                        }
                        _ => {}
                    }
                }
                r.type_spec = Some(spec);
            }
            "size" => r.size = int_in(f)?,
            _ => {}
        }
    }
    Ok(r)
}

/// Top-level P4Info fields this crate does not model, as in `p4info::UNMODELLED`.
const UNMODELLED: &[&str] = &[
    "action_profiles",
    "direct_counters",
    "meters",
    "direct_meters",
    "controller_packet_metadata",
    "value_sets",
    "digests",
    "externs",
];

/// Whether an `externs` entry is one bf-p4c writes for every TNA program and the control
/// plane never programs: `PortMetadata` (the parser's per-port metadata, unused here). See
/// `p4info::HARMLESS_EXTERNS`.
fn harmless_extern(fields: &[Field]) -> Result<bool, TextError> {
    for f in fields {
        if f.name == "extern_type_name" {
            return Ok(crate::p4info::HARMLESS_EXTERNS.contains(&string_of(f)?.as_str()));
        }
    }
    Ok(false)
}

/// Parses a text-format P4Info.
pub(crate) fn parse_p4info(text: &str) -> Result<cfg::P4Info, TextError> {
    let tree = parse_tree(text)?;
    let mut p = cfg::P4Info::default();
    let mut unmodelled = Vec::new();
    for f in &tree {
        match f.name.as_str() {
            "pkg_info" => p.pkg_info = Some(pkg_info(msg(f)?)?),
            "tables" => p.tables.push(table(msg(f)?)?),
            "actions" => p.actions.push(action(msg(f)?)?),
            "counters" => p.counters.push(counter(msg(f)?)?),
            "registers" => p.registers.push(register(msg(f)?)?),
            "externs" if harmless_extern(msg(f)?)? => {}
            name => {
                if let Some(u) = UNMODELLED.iter().find(|u| **u == name) {
                    if !unmodelled.contains(u) {
                        unmodelled.push(*u);
                    }
                }
            }
        }
    }
    if !unmodelled.is_empty() {
        return Err(TextError::Unmodelled(unmodelled));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_p4c_shape() {
        let text = r#"
# proto-file: p4/config/v1/p4info.proto
# proto-message: p4.config.v1.P4Info

pkg_info {
  arch: "v1model"
}
tables {
  preamble {
    id: 0x02000001
    name: "agg_table"
    alias: "agg_table"
  }
  match_fields {
    id: 1
    name: "block_id"
    bitwidth: 16
    match_type: EXACT
  }
  action_refs { id: 16777217 }
  action_refs < id: 21257015 annotations: "@defaultonly" scope: DEFAULT_ONLY >
  size: 1024
  is_const_table: false
  structured_annotations { name: "x" kv_pair_list { } }
}
actions {
  preamble { id: 16777217 name: "aggregate" alias: "aggregate" annotations: "@name(\"x\\n\")" }
  params { id: 1 name: "agg_base" bitwidth: 32 },
  params { id: 5; name: 'more'; bitwidth: 1 }
}
counters { preamble { id: 301989889 name: "events" } spec { unit: PACKETS } size: 32 }
registers {
  preamble { id: 369098753 name: "agg_value_0" }
  type_spec { bitstring { int { bitwidth: 32 } } }
  size: 65536
}
type_info { }
"#;
        let p = parse_p4info(text).unwrap();
        assert_eq!(p.pkg_info.as_ref().unwrap().arch, "v1model");
        let t = &p.tables[0];
        assert_eq!(t.preamble.as_ref().unwrap().id, 0x0200_0001);
        assert_eq!(t.match_fields[0].bitwidth, 16);
        assert_eq!(
            t.match_fields[0].r#match,
            Some(cfg::match_field::Match::MatchType(
                cfg::match_field::MatchType::Exact as i32
            ))
        );
        assert_eq!(t.action_refs.len(), 2);
        assert_eq!(
            t.action_refs[1].scope,
            cfg::action_ref::Scope::DefaultOnly as i32
        );
        assert_eq!(t.size, 1024);
        let a = &p.actions[0];
        assert_eq!(
            a.preamble.as_ref().unwrap().annotations[0],
            "@name(\"x\\n\")"
        );
        assert_eq!(a.params[1].name, "more");
        assert_eq!(a.params[1].bitwidth, 1);
        assert_eq!(p.counters[0].size, 32);
        assert_eq!(
            p.counters[0].spec.unwrap().unit,
            cfg::counter_spec::Unit::Packets as i32
        );
        assert_eq!(
            crate::p4info::register_cell(&p.registers[0]),
            crate::p4info::CellType::Int(32)
        );
    }

    #[test]
    fn errors_say_where() {
        match parse_p4info("tables {\n  size: \"big\"\n}\n") {
            Err(TextError::Syntax {
                line,
                column,
                message,
            }) => {
                assert_eq!((line, column), (2, 3));
                assert!(message.contains("size"), "{message}");
            }
            other => panic!("expected a syntax error, got {other:?}"),
        }
        assert!(matches!(
            parse_p4info("tables {\n"),
            Err(TextError::Syntax { .. })
        ));
        match parse_p4info("meters { }\ndigests { }\nmeters { }") {
            Err(TextError::Unmodelled(u)) => assert_eq!(u, ["meters", "digests"]),
            other => panic!("expected unmodelled objects, got {other:?}"),
        }
    }
}
