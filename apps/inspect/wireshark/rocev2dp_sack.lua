-- tshark/Wireshark decoding of rocev2-dp's selective acknowledgement, RC_SACK (BTH opcode 0xE0,
-- manufacturer-specific; protocol/sack.hpp, docs/loss.md part 2). Wireshark's InfiniBand
-- dissector shows the BTH and leaves the rest as "Unknown/Vendor Specific Data"; this
-- post-dissector reads that: the AETH, the cumulative PSN, and which PSNs after the first
-- missing one the responder holds.
--   tshark -X lua_script:apps/inspect/wireshark/rocev2dp_sack.lua -r capture.pcap -Y rocev2dp_sack
local opcode_f = Field.new("infiniband.bth.opcode")
local psn_f = Field.new("infiniband.bth.psn")
local vendor_f = Field.new("infiniband.vendor")

local sack = Proto("rocev2dp_sack", "rocev2-dp RC_SACK")
local f_syndrome = ProtoField.uint8("rocev2dp_sack.syndrome", "AETH syndrome", base.HEX)
local f_msn = ProtoField.uint24("rocev2dp_sack.msn", "MSN")
local f_missing = ProtoField.uint24("rocev2dp_sack.missing_psn", "First missing PSN")
local f_held_count = ProtoField.uint16("rocev2dp_sack.held_count", "PSNs held after it")
local f_held = ProtoField.string("rocev2dp_sack.held", "PSNs held")
local f_word = ProtoField.uint64("rocev2dp_sack.bitmap", "Bitmap word", base.HEX)
sack.fields = { f_syndrome, f_msn, f_missing, f_held_count, f_held, f_word }

local kWords = 2

function sack.dissector(tvb, pinfo, tree)
  local op = opcode_f()
  if op == nil or op.value ~= 0xE0 then return end
  -- The InfiniBand dissector adds the field twice: once for the 4 bytes it took for a header,
  -- once for everything after the BTH. The longest is ours.
  local v = nil
  for _, f in ipairs({ vendor_f() }) do
    if v == nil or f.len > v.len then v = f end
  end
  if v == nil then return end
  local r = v.range
  if r:len() < 4 + 8 * kWords then return end
  local psn = psn_f().value
  local missing = (psn + 1) % 0x1000000
  local t = tree:add(sack, r(0, 4 + 8 * kWords))
  t:add(f_syndrome, r(0, 1))
  t:add(f_msn, r(1, 3))
  t:add(f_missing, r(0, 0), missing)
  -- Bit i of word w (least significant first): PSN missing + 1 + 64 w + i arrived.
  local ranges, count, first, last = {}, 0, nil, nil
  for w = 0, kWords - 1 do
    local word = r(4 + 8 * w, 8)
    t:add(f_word, word)
    local value = word:uint64()
    for i = 0, 63 do
      local held = value:rshift(i):band(1):tonumber() == 1
      local p = (missing + 1 + 64 * w + i) % 0x1000000
      if held then
        count = count + 1
        if first ~= nil and last == (p + 0xFFFFFF) % 0x1000000 then
          last = p
        else
          if first ~= nil then ranges[#ranges + 1] = first == last and tostring(first) or (first .. "-" .. last) end
          first, last = p, p
        end
      end
    end
  end
  if first ~= nil then ranges[#ranges + 1] = first == last and tostring(first) or (first .. "-" .. last) end
  t:add(f_held_count, r(4, 8 * kWords), count)
  t:add(f_held, r(4, 8 * kWords), table.concat(ranges, ", "))
  pinfo.cols.protocol:set("RoCE SACK")
  pinfo.cols.info:set(string.format("RC_SACK ack %d, missing %d, held %s", psn, missing, table.concat(ranges, ", ")))
end

register_postdissector(sack, true)  -- true: the InfiniBand fields are filled in for us
