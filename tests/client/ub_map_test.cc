// UnifiedBufferMap on hand-made results: the exact text.
#include "client/ub_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace ptoserve {
namespace {

v1::EventRecord* AddEvent(v1::JobResult* result, const std::string& id,
                          v1::Opcode opcode) {
  v1::EventRecord* e = result->add_events();
  e->set_id(id);
  e->set_instruction_index(result->events_size() - 1);
  e->set_opcode(opcode);
  return e;
}

void AddOperand(v1::EventRecord* e, const std::string& role,
                const std::string& tile, uint64_t begin, uint64_t end) {
  v1::OperandRange* o = e->add_operands();
  o->set_role(role);
  o->set_tile(tile);
  o->set_begin(begin);
  o->set_end(end);
}

TEST(UnifiedBufferMapTest, EachInstructionsOperandsThenTheTilesByAddress) {
  v1::JobResult result;
  result.set_target(v1::TARGET_A2A3);
  v1::EventRecord* e0 = AddEvent(&result, "e0", v1::OPCODE_TAND);
  AddOperand(e0, "dst", "c", 0x1000, 0x1400);
  AddOperand(e0, "src0", "a", 0x0000, 0x0400);
  AddOperand(e0, "src1", "b", 0x0400, 0x0800);
  v1::EventRecord* e1 = AddEvent(&result, "e1", v1::OPCODE_TXOR);
  AddOperand(e1, "dst", "d", 0x1400, 0x1800);
  AddOperand(e1, "src0", "c", 0x1000, 0x1400);
  AddOperand(e1, "src1", "a", 0x0000, 0x0400);
  AddOperand(e1, "tmp", "t", 0x1800, 0x1c00);
  EXPECT_EQ(UnifiedBufferMap(result),
            "unified buffer:\n"
            "  e0   instruction 0 TAND\n"
            "       dst   c  [0x1000, 0x1400)\n"
            "       src0  a  [0x0000, 0x0400)\n"
            "       src1  b  [0x0400, 0x0800)\n"
            "  e1   instruction 1 TXOR\n"
            "       dst   d  [0x1400, 0x1800)\n"
            "       src0  c  [0x1000, 0x1400)\n"
            "       src1  a  [0x0000, 0x0400)\n"
            "       tmp   t  [0x1800, 0x1c00)\n"
            "tiles by address:\n"
            "  tile  address  bytes\n"
            "  a     0x0000    1024\n"
            "  b     0x0400    1024\n"
            "  c     0x1000    1024\n"
            "  d     0x1400    1024\n"
            "  t     0x1800    1024\n");
}

// The result's Tile.address wins over the operands'; a result tile that no
// operand names is sized from its shape; a tile without an address is not
// in the table; an event without operands says so.
TEST(UnifiedBufferMapTest, ResultAddressesAndEventsWithoutOperands) {
  v1::JobResult result;
  result.set_target(v1::TARGET_A5);
  v1::EventRecord* e0 = AddEvent(&result, "not_done", v1::OPCODE_TNOT);
  AddOperand(e0, "dst", "d", 0x0800, 0x0810);
  AddOperand(e0, "src0", "accumulator", 0x0000, 0x0010);
  AddEvent(&result, "e1", v1::OPCODE_TAND);
  (*result.mutable_tiles())["d"].set_address(0x20800);
  v1::Tile& z = (*result.mutable_tiles())["z"];
  z.set_dtype(v1::DTYPE_INT16);
  z.set_rows(2);
  z.set_cols(8);
  z.set_address(0x4000);
  (*result.mutable_tiles())["w"].set_rows(1);
  EXPECT_EQ(UnifiedBufferMap(result),
            "unified buffer:\n"
            "  not_done instruction 0 TNOT\n"
            "       dst   d            [0x0800, 0x0810)\n"
            "       src0  accumulator  [0x0000, 0x0010)\n"
            "  e1   instruction 1 TAND\n"
            "       (no operands)\n"
            "tiles by address:\n"
            "  tile         address  bytes\n"
            "  accumulator  0x0000      16\n"
            "  z            0x4000      32\n"
            "  d            0x20800     16\n");
}

TEST(UnifiedBufferMapTest, NoOperandsIsOneLine) {
  v1::JobResult result;
  result.set_target(v1::TARGET_HOST);
  AddEvent(&result, "e0", v1::OPCODE_TAND);
  AddEvent(&result, "e1", v1::OPCODE_TXOR);
  const std::string line =
      "unified buffer: no operand ranges in the events (a host job in auto "
      "mode has no on-chip buffer model)\n";
  EXPECT_EQ(UnifiedBufferMap(result), line);
  EXPECT_EQ(UnifiedBufferMap(v1::JobResult()), line);
}

}  // namespace
}  // namespace ptoserve
