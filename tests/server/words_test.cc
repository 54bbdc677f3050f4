// proto/words.h: the words every door and client uses for an event record.
// client/python/client_test.py's EventTextTest holds the Python client to
// the same text for the same record.
#include "proto/words.h"

#include <gtest/gtest.h>

namespace ptoserve {
namespace {

TEST(WordsTest, AnEventReadsTheSameEverywhere) {
  v1::EventRecord e;
  e.set_id("e0");
  e.set_opcode(v1::OPCODE_TXOR);
  e.set_target(v1::TARGET_A2A3);
  e.set_pipe(v1::PIPE_V);
  e.set_batch_id(7);
  e.set_batch_size(2);
  e.mutable_enqueue_time()->set_nanos(1000);
  e.mutable_start_time()->set_nanos(13474);
  e.mutable_end_time()->set_nanos(13474 + 941);
  e.add_waited_on("e9");
  v1::MicroOp* vor = e.add_trace();
  vor->set_op("vor");
  vor->set_dst("tmp");
  vor->add_srcs("src0");
  vor->add_srcs("src1");
  vor->set_repeats(1);
  vor->set_elements(16);
  v1::MicroOp* vand = e.add_trace();
  vand->set_op("vand");
  vand->set_dst("dst");
  vand->add_srcs("dst");
  vand->add_srcs("tmp");
  vand->set_repeats(2);
  vand->set_elements(1);
  e.add_notes("a note");
  EXPECT_EQ(EventText(e),
            "  e0   instruction 0 TXOR on a2a3, PIPE_V, batch 7 (size 2), "
            "queued 12.474us, ran 941ns, waited on e9\n"
            "       vor   tmp <- src0, src1  (1 repeat, 16 elements)\n"
            "       vand  dst <- dst, tmp  (2 repeats, 1 element)\n"
            "       note: a note\n");
  // Names past their columns' widths, counters at their largest.
  e.set_id("step12");
  e.set_instruction_index(~0u);
  e.set_batch_id(~uint64_t{0});
  e.clear_waited_on();
  e.clear_notes();
  e.mutable_trace()->DeleteSubrange(1, 1);
  vor->set_op("vshift");
  EXPECT_EQ(EventText(e),
            "  step12 instruction 4294967295 TXOR on a2a3, PIPE_V, batch "
            "18446744073709551615 (size 2), queued 12.474us, ran 941ns\n"
            "       vshift tmp <- src0, src1  (1 repeat, 16 elements)\n");
  EXPECT_EQ(DTypeText(v1::DTYPE_INT16), "int16");
  EXPECT_EQ(TargetText(v1::TARGET_A2A3), "a2a3");
  EXPECT_EQ(OpcodeText(v1::OPCODE_TAND), "TAND");
}

}  // namespace
}  // namespace ptoserve
