#!/usr/bin/env python3
"""Checks a P4Info (text format) against docs/switch-interface.md.

Every table, action, counter and register of the contract must be in the P4Info with its
name, id (prefix << 24 | N), match fields, parameters, widths and sizes; the P4Info must
hold nothing else (except core.p4's NoAction, whose id p4c chooses and which is printed).

Default actions: a table whose actions cell reads "...; default `NoAction`" has NoAction as
its const default action (default-only action ref). A table whose cell reads "default action
`x`, ...; initially `x(v1, v2, ...)`" (the keyless switch_config) has x as its only action,
default-only, NOT const (the control plane modifies it), and x(v1, ...) as its initial
default action; values are decimal, MAC (aa:bb:..) or dotted IPv4.

    python3 p4/tools/check_p4info.py /tmp/p4work/switchgnn.p4info.txtpb [docs/switch-interface.md]

Needs the p4runtime Python protobufs (/opt/p4/venv/bin/python has them). Exit status 0 when
everything matches.
"""
import re
import sys
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

PREFIX = {"table": 0x02, "action": 0x01, "counter": 0x12, "register": 0x16}
UNITS = {"packets": "PACKETS", "bytes": "BYTES", "packets_and_bytes": "BOTH"}


def md_tables(text, heading):
    """Rows (lists of cells) of the first Markdown table after `heading`."""
    at = text.index(heading)
    rows = []
    for line in text[at:].splitlines()[1:]:
        line = line.strip()
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip().replace("\0", "|")
                 for c in line.replace("\\|", "\0").strip("|").split("|")]
        if set(cells[0]) <= set("-: "):
            continue
        rows.append(cells)
    return rows[1:]  # without the header row


def plain(s):
    return s.replace("`", "").strip()


def value_of(v):
    """A contract value as an integer: decimal, MAC aa:bb:cc:dd:ee:ff or IPv4 a.b.c.d."""
    v = v.strip()
    if ":" in v:
        return int(v.replace(":", ""), 16)
    if "." in v:
        return int.from_bytes(bytes(int(x) for x in v.split(".")), "big")
    return int(v, 0)


def main():
    p4info_path = sys.argv[1]
    doc = Path(sys.argv[2] if len(sys.argv) > 2 else
               Path(__file__).resolve().parents[2] / "docs/switch-interface.md").read_text()
    info = p4info_pb2.P4Info()
    text_format.Parse(Path(p4info_path).read_text(), info)

    sizes = {k: int(v) for k, v in re.findall(r"`(\w+) = (\d+)`", doc)}
    size_of = lambda s: int(plain(s)) if plain(s).isdigit() else sizes[plain(s)]
    errors = []

    def check(cond, msg):
        if not cond:
            errors.append(msg)

    def full_id(kind, n):
        return PREFIX[kind] << 24 | n

    noaction = [a for a in info.actions if a.preamble.name == "NoAction"]
    check(len(noaction) == 1, "NoAction missing")
    noaction_id = noaction[0].preamble.id if noaction else None

    # actions
    want_actions = {}
    for cells in md_tables(doc, "### Actions"):
        if not cells[0].isdigit():  # the NoAction row: id chosen by p4c
            continue
        name = plain(cells[1])
        params = re.findall(r"(\d+): `(\w+)` (\d+)", cells[2])
        want_actions[name] = (int(cells[0]), [(int(i), n, int(b)) for i, n, b in params])
    got_actions = {a.preamble.name: a for a in info.actions if a.preamble.name != "NoAction"}
    check(set(got_actions) == set(want_actions),
          "actions: P4Info has %s, contract %s" % (sorted(got_actions), sorted(want_actions)))
    for name, (n, params) in want_actions.items():
        a = got_actions.get(name)
        if a is None:
            continue
        check(a.preamble.id == full_id("action", n), "action %s id %#x" % (name, a.preamble.id))
        got = [(p.id, p.name, p.bitwidth) for p in a.params]
        check(got == params, "action %s params %s, contract %s" % (name, got, params))

    # tables
    want_tables = {}
    for cells in md_tables(doc, "### Tables"):
        name = plain(cells[1]).split()[0]  # "`worker_addr` (egress)"
        fields = [(int(i), n, int(b), k.upper()) for i, n, b, k in
                  re.findall(r"(\d+): `(\w+)` (\d+) (\w+)", cells[2])]
        if not fields and not cells[2].startswith("none"):
            errors.append("contract: cannot read the match fields of %s: %r" % (name, cells[2]))
        m = re.match(r"default action `(\w+)`", cells[3])
        if m:  # keyless, modifiable default action: "initially `x(v1, v2, ...)`"
            init = re.search(r"initially `%s\(([^)]*)\)`" % m.group(1), cells[3])
            if not init:
                errors.append("contract: no initial %s(...) for %s" % (m.group(1), name))
            default = (m.group(1), [value_of(v) for v in init.group(1).split(",")] if init else [])
            actions = [m.group(1)]
        else:  # "x, y; default `NoAction` (...)": const NoAction
            default = None
            actions = re.findall(r"`(\w+)`", cells[3].split("default")[0])
        want_tables[name] = (int(cells[0]), fields, actions, default, size_of(cells[4]))
    got_tables = {t.preamble.name: t for t in info.tables}
    check(set(got_tables) == set(want_tables),
          "tables: P4Info has %s, contract %s" % (sorted(got_tables), sorted(want_tables)))
    action_ids = {a.preamble.id: a.preamble.name for a in info.actions}
    for name, (n, fields, actions, default, size) in want_tables.items():
        t = got_tables.get(name)
        if t is None:
            continue
        check(t.preamble.id == full_id("table", n), "table %s id %#x" % (name, t.preamble.id))
        got = [(f.id, f.name, f.bitwidth, p4info_pb2.MatchField.MatchType.Name(f.match_type))
               for f in t.match_fields]
        check(got == fields, "table %s match fields %s, contract %s" % (name, got, fields))
        refs = {action_ids[r.id]: r for r in t.action_refs}
        init = t.initial_default_action
        if default is None:
            check(set(refs) == set(actions) | {"NoAction"},
                  "table %s actions %s, contract %s + NoAction" % (name, sorted(refs), actions))
            if "NoAction" in refs:
                check(refs["NoAction"].scope == p4info_pb2.ActionRef.DEFAULT_ONLY,
                      "table %s: NoAction not default-only" % name)
            check(t.const_default_action_id == noaction_id,
                  "table %s default action %d, not NoAction" % (name, t.const_default_action_id))
            check(init.action_id == noaction_id and not init.arguments,
                  "table %s initial default action is not NoAction()" % name)
        else:
            dname, values = default
            check(set(refs) == {dname},
                  "table %s actions %s, contract only %s" % (name, sorted(refs), dname))
            if dname in refs:
                check(refs[dname].scope == p4info_pb2.ActionRef.DEFAULT_ONLY,
                      "table %s: %s not default-only" % (name, dname))
            check(t.const_default_action_id == 0,
                  "table %s: default action is const (id %d); the control plane must be able "
                  "to modify it" % (name, t.const_default_action_id))
            check(action_ids.get(init.action_id) == dname,
                  "table %s initial default action %s, contract %s" % (
                      name, action_ids.get(init.action_id), dname))
            params = want_actions.get(dname, (0, []))[1]
            want_args = [(pid, v) for (pid, _, _), v in zip(params, values)]
            got_args = [(a.param_id, int.from_bytes(a.value, "big")) for a in init.arguments]
            check(len(values) == len(params) and got_args == want_args,
                  "table %s initial %s arguments %s, contract %s" % (
                      name, dname, got_args, want_args))
        check(t.size == size, "table %s size %d, contract %d" % (name, t.size, size))

    # counters
    got_counters = {c.preamble.name: c for c in info.counters}
    want_counters = {}
    for cells in md_tables(doc, "### Counters"):
        size = int(re.match(r"\d+", cells[3]).group())
        want_counters[plain(cells[1])] = (int(cells[0]), UNITS[cells[2].strip()], size)
    check(set(got_counters) == set(want_counters),
          "counters: P4Info has %s, contract %s" % (sorted(got_counters), sorted(want_counters)))
    for name, (n, unit, size) in want_counters.items():
        c = got_counters.get(name)
        if c is None:
            continue
        check(c.preamble.id == full_id("counter", n), "counter %s id %#x" % (name, c.preamble.id))
        check(p4info_pb2.CounterSpec.Unit.Name(c.spec.unit) == unit, "counter %s unit" % name)
        check(c.size == size, "counter %s size %d, contract %d" % (name, c.size, size))
    check(not info.direct_counters and not info.meters and not info.direct_meters,
          "P4Info has direct counters or meters the contract does not list")

    # registers
    want_regs = {}
    for cells in md_tables(doc, "### Registers"):
        width = int(re.match(r"\d+", cells[2]).group())
        size = size_of(cells[3])
        m = re.match(r"(\d+)\.\.(\d+)", cells[0])
        if m:  # agg_value_0 .. agg_value_31
            base = re.match(r"`(\w+?)0`", cells[1]).group(1)
            for k, n in enumerate(range(int(m.group(1)), int(m.group(2)) + 1)):
                want_regs["%s%d" % (base, k)] = (n, width, size)
        else:
            want_regs[plain(cells[1])] = (int(cells[0]), width, size)
    got_regs = {r.preamble.name: r for r in info.registers}
    check(set(got_regs) == set(want_regs),
          "registers: extra %s, missing %s" % (sorted(set(got_regs) - set(want_regs)),
                                               sorted(set(want_regs) - set(got_regs))))
    for name, (n, width, size) in want_regs.items():
        r = got_regs.get(name)
        if r is None:
            continue
        check(r.preamble.id == full_id("register", n), "register %s id %#x" % (name, r.preamble.id))
        check(r.type_spec.bitstring.bit.bitwidth == width,
              "register %s width %d, contract %d" % (name, r.type_spec.bitstring.bit.bitwidth, width))
        check(r.size == size, "register %s size %d, contract %d" % (name, r.size, size))

    for e in errors:
        print("MISMATCH:", e)
    for t in info.tables:
        if t.const_default_action_id == 0:
            print("table %s (id %d = %#x): default action %s (id %d = %#x), modifiable" % (
                t.preamble.name, t.preamble.id, t.preamble.id,
                action_ids.get(t.initial_default_action.action_id),
                t.initial_default_action.action_id, t.initial_default_action.action_id))
    print("%d tables, %d actions + NoAction (id %d = %#x), %d counters, %d registers: %s" % (
        len(want_tables), len(want_actions), noaction_id or 0, noaction_id or 0,
        len(want_counters), len(want_regs), "all match" if not errors else "%d mismatches" % len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
