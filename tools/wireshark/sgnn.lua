-- Wireshark / tshark dissector for the SwitchGNN wire protocol (docs/protocol.md).
--
-- SwitchGNN packets follow an IPv4 header with protocol number 253 (IP_PROTO_SWITCHGNN in
-- contract/wire/src/lib.rs): a 24-byte header, then, for Data / Result / Bypass, 32 big-endian
-- int32 lanes of fixed-point values with Frac_bits fraction bits (value = lane / 2^frac_bits).
--
-- Use it for one run:
--   tshark -r capture.pcapng -X lua_script:tools/wireshark/sgnn.lua -Y sgnn
--   wireshark -X lua_script:tools/wireshark/sgnn.lua capture.pcapng
-- or install it: copy it into ~/.local/lib/wireshark/plugins/ (the "Personal Lua Plugins"
-- folder that `tshark -G folders` names). Captures come from `softswitch --pcap FILE` and
-- `sgnn-hostd --pcap FILE`, or from tcpdump / Wireshark on a veth or NIC.
--
-- Display-filter fields (every header field, by its name in docs/protocol.md):
--   sgnn.version sgnn.type sgnn.flags sgnn.flags.is_ack sgnn.flags.is_fetch sgnn.flags.ecn
--   sgnn.flags.resend sgnn.flags.reserved sgnn.worker_id sgnn.src_id sgnn.dst_id
--   sgnn.block_id sgnn.count sgnn.round sgnn.segment sgnn.pass sgnn.frac_bits sgnn.job
--   sgnn.lanes (the 128 bytes) sgnn.lane (int32, 32 per packet, in order)
--   sgnn.lane_value (the lane decoded: lane / 2^frac_bits, 32 per packet, in order)
-- e.g.  sgnn.type == 1 && sgnn.flags.ecn     (ECN-marked results)
--       sgnn.flags.resend && sgnn.src_id == 42

local IP_PROTO_SWITCHGNN = 253
local VERSION = 1
local HEADER_LEN = 24
local LANES = 32
local PAYLOAD_LEN = LANES * 4
local MAX_FRAC_BITS = 30
local PROBE_DST = 0xffffffff
local ACK_ALL_SEGMENTS = 0xffff

local TYPES = {
    [0] = "Data",
    [1] = "Result",
    [2] = "Ack",
    [3] = "FetchReq",
    [4] = "Bypass",
    [5] = "BlockDone",
    [6] = "BlockAdvance",
}
local TYPE_ACK = 2
local TYPE_FETCH = 3
local HAS_LANES = { [0] = true, [1] = true, [4] = true }

local p = Proto("sgnn", "SwitchGNN")

local f = {
    version = ProtoField.uint8("sgnn.version", "Version", base.DEC, nil, 0xf0),
    type = ProtoField.uint8("sgnn.type", "Type", base.DEC, TYPES, 0x0f),
    flags = ProtoField.uint8("sgnn.flags", "Flags", base.HEX),
    is_ack = ProtoField.bool("sgnn.flags.is_ack", "IS_ACK", 8, nil, 0x80),
    is_fetch = ProtoField.bool("sgnn.flags.is_fetch", "IS_FETCH", 8, nil, 0x40),
    ecn = ProtoField.bool("sgnn.flags.ecn", "ECN", 8, nil, 0x20),
    resend = ProtoField.bool("sgnn.flags.resend", "RESEND", 8, nil, 0x10),
    flags_reserved = ProtoField.uint8("sgnn.flags.reserved", "Reserved flags", base.HEX, nil, 0x0f),
    worker_id = ProtoField.uint16("sgnn.worker_id", "Worker id", base.DEC),
    src_id = ProtoField.uint32("sgnn.src_id", "Source vertex", base.DEC),
    dst_id = ProtoField.uint32("sgnn.dst_id", "Destination vertex", base.DEC),
    block_id = ProtoField.uint16("sgnn.block_id", "Block", base.DEC),
    count = ProtoField.uint16("sgnn.count", "Count", base.DEC),
    round = ProtoField.uint16("sgnn.round", "Round", base.DEC),
    segment = ProtoField.uint16("sgnn.segment", "Segment", base.DEC),
    pass = ProtoField.uint8("sgnn.pass", "Pass", base.DEC),
    frac_bits = ProtoField.uint8("sgnn.frac_bits", "Fraction bits", base.DEC),
    job = ProtoField.uint16("sgnn.job", "Job"),
    lanes = ProtoField.bytes("sgnn.lanes", "Lanes"),
    lane = ProtoField.int32("sgnn.lane", "Lane", base.DEC),
    lane_value = ProtoField.double("sgnn.lane_value", "Lane value"),
}
p.fields = {
    f.version, f.type, f.flags, f.is_ack, f.is_fetch, f.ecn, f.resend, f.flags_reserved,
    f.worker_id, f.src_id, f.dst_id, f.block_id, f.count, f.round, f.segment, f.pass,
    f.frac_bits, f.job, f.lanes, f.lane, f.lane_value,
}

-- The parser's validation rules (docs/protocol.md, "Validation rules"), as expert info.
local e = {
    truncated = ProtoExpert.new("sgnn.truncated", "Truncated SwitchGNN packet",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_version = ProtoExpert.new("sgnn.bad_version", "Unknown SwitchGNN version",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_type = ProtoExpert.new("sgnn.bad_type", "Invalid packet type (7-15)",
        expert.group.MALFORMED, expert.severity.ERROR),
    reserved = ProtoExpert.new("sgnn.reserved_nonzero", "Reserved bits are not zero",
        expert.group.MALFORMED, expert.severity.ERROR),
    flags = ProtoExpert.new("sgnn.inconsistent_flags",
        "IS_ACK / IS_FETCH do not match the packet type", expert.group.MALFORMED,
        expert.severity.ERROR),
    frac_bits = ProtoExpert.new("sgnn.bad_frac_bits", "Fraction bits above 30",
        expert.group.MALFORMED, expert.severity.ERROR),
    length = ProtoExpert.new("sgnn.length_mismatch",
        "IPv4 payload length does not match the packet type", expert.group.MALFORMED,
        expert.severity.ERROR),
    ecn = ProtoExpert.new("sgnn.ecn_marked", "ECN: a switch queue passed its threshold",
        expert.group.SEQUENCE, expert.severity.NOTE),
    resend = ProtoExpert.new("sgnn.resent", "Retransmission (RESEND)",
        expert.group.SEQUENCE, expert.severity.NOTE),
}
p.experts = { e.truncated, e.bad_version, e.bad_type, e.reserved, e.flags, e.frac_bits,
    e.length, e.ecn, e.resend }

-- Bit tests in plain arithmetic: Lua 5.1-5.4 alike, whichever bit library Wireshark ships.
local function has(x, bit)
    return math.floor(x / bit) % 2 == 1
end

local function flag_names(b)
    local names = {}
    if has(b, 0x80) then names[#names + 1] = "IS_ACK" end
    if has(b, 0x40) then names[#names + 1] = "IS_FETCH" end
    if has(b, 0x20) then names[#names + 1] = "ECN" end
    if has(b, 0x10) then names[#names + 1] = "RESEND" end
    return names
end

function p.dissector(buf, pinfo, root)
    local len = buf:len()
    pinfo.cols.protocol = "SwitchGNN"
    local tree = root:add(p, buf(0, math.min(len, HEADER_LEN + PAYLOAD_LEN)))
    if len < HEADER_LEN then
        tree:add_proto_expert_info(e.truncated,
            string.format("Truncated: %d bytes, the header has %d", len, HEADER_LEN))
        pinfo.cols.info = "SwitchGNN (truncated)"
        return len
    end

    local ver_type = buf(0, 1):uint()
    local version = math.floor(ver_type / 16)
    local t = ver_type % 16
    local fl = buf(1, 1):uint()
    local type_name = TYPES[t] or string.format("Invalid(%d)", t)

    local vi = tree:add(f.version, buf(0, 1))
    if version ~= VERSION then
        vi:add_proto_expert_info(e.bad_version, string.format("Version %d (expected %d)", version, VERSION))
    end
    local ti = tree:add(f.type, buf(0, 1))
    if TYPES[t] == nil then
        ti:add_proto_expert_info(e.bad_type)
    end

    local names = flag_names(fl)
    local fi = tree:add(f.flags, buf(1, 1))
    if #names > 0 then
        fi:append_text(" (" .. table.concat(names, ", ") .. ")")
    end
    fi:add(f.is_ack, buf(1, 1))
    fi:add(f.is_fetch, buf(1, 1))
    fi:add(f.ecn, buf(1, 1))
    fi:add(f.resend, buf(1, 1))
    local fri = fi:add(f.flags_reserved, buf(1, 1))
    if fl % 16 ~= 0 then
        fri:add_proto_expert_info(e.reserved)
    end
    local is_ack = has(fl, 0x80)
    local is_fetch = has(fl, 0x40)
    if TYPES[t] ~= nil and (is_ack ~= (t == TYPE_ACK) or is_fetch ~= (t == TYPE_FETCH)) then
        fi:add_proto_expert_info(e.flags)
    end
    if has(fl, 0x20) then
        fi:add_proto_expert_info(e.ecn)
    end
    if has(fl, 0x10) then
        fi:add_proto_expert_info(e.resend)
    end

    local worker = buf(2, 2):uint()
    local src = buf(4, 4):uint()
    local dst = buf(8, 4):uint()
    local block = buf(12, 2):uint()
    local round = buf(16, 2):uint()
    local segment = buf(18, 2):uint()
    local frac = buf(21, 1):uint()

    tree:add(f.worker_id, buf(2, 2))
    tree:add(f.src_id, buf(4, 4))
    local di = tree:add(f.dst_id, buf(8, 4))
    if dst == PROBE_DST then
        di:append_text(" (probe)")
    end
    tree:add(f.block_id, buf(12, 2))
    tree:add(f.count, buf(14, 2))
    tree:add(f.round, buf(16, 2))
    local si = tree:add(f.segment, buf(18, 2))
    if segment == ACK_ALL_SEGMENTS and t == TYPE_ACK then
        si:append_text(" (every segment)")
    end
    tree:add(f.pass, buf(20, 1))
    local fbi = tree:add(f.frac_bits, buf(21, 1))
    if frac > MAX_FRAC_BITS then
        fbi:add_proto_expert_info(e.frac_bits)
    else
        fbi:append_text(string.format(" (values = lane / 2^%d)", frac))
    end
    -- The job value the switch was loaded with (sgnn_switch::admission).
    tree:add(f.job, buf(22, 2))

    -- The IPv4 payload must be exactly the header, or the header and the lanes.
    local want = HEADER_LEN
    if HAS_LANES[t] then
        want = HEADER_LEN + PAYLOAD_LEN
    end
    if TYPES[t] ~= nil and len ~= want then
        local item = tree
        if len < want then
            item:add_proto_expert_info(e.truncated,
                string.format("Truncated: %d bytes, a %s packet has %d", len, type_name, want))
        else
            item:add_proto_expert_info(e.length,
                string.format("%d bytes, a %s packet has %d", len, type_name, want))
        end
    end

    if HAS_LANES[t] and len >= HEADER_LEN + PAYLOAD_LEN then
        local scale = 1.0
        if frac <= MAX_FRAC_BITS then
            scale = 2.0 ^ frac
        end
        local lt = tree:add(f.lanes, buf(HEADER_LEN, PAYLOAD_LEN))
        lt:set_text(string.format("Lanes (%d x int32, fixed point with %d fraction bits)", LANES, frac))
        for i = 0, LANES - 1 do
            local r = buf(HEADER_LEN + 4 * i, 4)
            local raw = r:int()
            local value = raw / scale
            local li = lt:add(f.lane, r)
            li:set_text(string.format("Lane %d: %d (%.9g)", i, raw, value))
            li:add(f.lane_value, r, value)
        end
    end

    local info = string.format("%s worker=%d", type_name, worker)
    if t == 0 or t == 3 or t == 4 then
        info = info .. string.format(" src=%d", src)
    end
    if t == 1 or t == 2 or t == 3 or t == 4 then
        if dst == PROBE_DST then
            info = info .. " dst=probe"
        else
            info = info .. string.format(" dst=%d", dst)
        end
    end
    info = info .. string.format(" block=%d round=%d", block, round)
    if HAS_LANES[t] or t == TYPE_ACK or t == TYPE_FETCH then
        info = info .. string.format(" seg=%d", segment)
    end
    if #names > 0 then
        info = info .. " [" .. table.concat(names, ",") .. "]"
    end
    pinfo.cols.info = info
    tree:append_text(", " .. info)
    return len
end

DissectorTable.get("ip.proto"):add(IP_PROTO_SWITCHGNN, p)
