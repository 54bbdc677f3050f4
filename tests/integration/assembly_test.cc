// PTO assembly end to end: the same program as text and as an instruction
// list, through the raw gRPC API and through ptoctl, must agree.
#include <gmock/gmock.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "client/client.h"
#include "tests/integration/server_process.h"
#include "tests/integration/shared_server.h"
#include "tests/integration/test_files.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

// c = a & b; d = c ^ a, on 16x16 int16 tiles (32-byte rows, as a2a3 needs).
constexpr char kProgram[] =
    "# c = a & b, then d = c ^ a\n"
    "%c = tand %a, %b : !pto.tile<...>\n"
    "%d = pto.txor %c, %a : (!pto.tile<...>, !pto.tile<...>) -> "
    "!pto.tile<...>\n";

class AssemblyTest : public test::SharedServerTest {
 protected:
  static v1::Job WithTiles(v1::Target target) {
    v1::Job job;
    job.set_target(target);
    for (const char* name : {"a", "b"}) {
      v1::Tile& t = (*job.mutable_tiles())[name];
      t.set_dtype(v1::DTYPE_INT16);
      t.set_rows(16);
      t.set_cols(16);
      for (int i = 0; i < 256; ++i) {
        t.add_values(name[0] == 'a' ? i * 7 - 900 : 0x0f0f);
      }
    }
    return job;
  }

  // The instruction list the program means, tmp named as the assembler does.
  static v1::Job AsInstructions(v1::Target target) {
    v1::Job job = WithTiles(target);
    v1::Instruction* i0 = job.add_instructions();
    i0->set_opcode(v1::OPCODE_TAND);
    i0->set_dst("c");
    i0->set_src0("a");
    i0->set_src1("b");
    v1::Instruction* i1 = job.add_instructions();
    i1->set_opcode(v1::OPCODE_TXOR);
    i1->set_dst("d");
    i1->set_src0("c");
    i1->set_src1("a");
    i1->set_tmp("d.tmp");
    return job;
  }
};

TEST_F(AssemblyTest, TextAndInstructionListAgreeOnEveryTarget) {
  for (v1::Target target : {v1::TARGET_HOST, v1::TARGET_A2A3, v1::TARGET_A5}) {
    SCOPED_TRACE(v1::Target_Name(target));
    v1::Job text = WithTiles(target);
    text.set_assembly(kProgram);
    absl::StatusOr<v1::JobResult> from_text = client_->Execute(text);
    ASSERT_TRUE(from_text.ok()) << from_text.status();
    absl::StatusOr<v1::JobResult> from_list =
        client_->Execute(AsInstructions(target));
    ASSERT_TRUE(from_list.ok()) << from_list.status();

    for (const char* name : {"c", "d"}) {
      const v1::Tile& t = from_text->tiles().at(name);
      const v1::Tile& l = from_list->tiles().at(name);
      EXPECT_EQ(t.SerializeAsString(), l.SerializeAsString()) << name;
    }
    // Numbers in, numbers out; and the values are a scalar loop's:
    // c = a & b, d = c ^ a.
    const v1::Tile& c = from_text->tiles().at("c");
    const v1::Tile& d = from_text->tiles().at("d");
    ASSERT_EQ(c.values_size(), 256);
    ASSERT_EQ(d.values_size(), 256);
    for (int i = 0; i < 256; ++i) {
      const int16_t a = static_cast<int16_t>(i * 7 - 900);
      ASSERT_EQ(c.values(i), static_cast<int16_t>(a & 0x0f0f)) << i;
      ASSERT_EQ(d.values(i), static_cast<int16_t>((a & 0x0f0f) ^ a)) << i;
    }
    ASSERT_EQ(from_text->events_size(), 2);
    for (int e = 0; e < 2; ++e) {
      const v1::EventRecord& t = from_text->events(e);
      const v1::EventRecord& l = from_list->events(e);
      EXPECT_EQ(t.id(), l.id());
      EXPECT_EQ(t.opcode(), l.opcode());
      ASSERT_EQ(t.trace_size(), l.trace_size());
      for (int k = 0; k < t.trace_size(); ++k) {
        EXPECT_EQ(t.trace(k).SerializeAsString(),
                  l.trace(k).SerializeAsString());
      }
    }
    // Only a2a3 needs the scratch tmp the SSA form cannot name; the event
    // says the server allocated it.
    const auto& notes = from_text->events(1).notes();
    const bool noted =
        std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
          return n.find("tmp \"d.tmp\" allocated by the server") !=
                 std::string::npos;
        });
    EXPECT_EQ(noted, target == v1::TARGET_A2A3);
  }
}

TEST_F(AssemblyTest, ErrorsNameLineAndColumn) {
  v1::Job job = WithTiles(v1::TARGET_HOST);
  job.set_assembly(
      "%c = tand %a, %b : !pto.tile<...>\n%d = tand %c %a : !pto.tile<...>\n");
  absl::StatusOr<v1::JobResult> r = client_->Execute(job);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("2:14: expected ','"));

  // A semantic error from the engine gets the line of its instruction.
  job = WithTiles(v1::TARGET_HOST);
  (*job.mutable_tiles())["b"].set_dtype(v1::DTYPE_INT32);
  (*job.mutable_tiles())["b"].clear_values();
  job.set_assembly("\n\n%c = tand %a, %b : !pto.tile<...>\n");
  r = client_->Execute(job);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("3:1: instruction 0 (TAND on host): src1 element type "
                        "int32 differs"));

  job = AsInstructions(v1::TARGET_HOST);
  job.set_assembly(kProgram);
  r = client_->Execute(job);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("either assembly or instructions, not both"));
}

TEST_F(AssemblyTest, CapabilitiesListTheForms) {
  absl::StatusOr<v1::Capabilities> caps = client_->GetCapabilities();
  ASSERT_TRUE(caps.ok());
  ASSERT_GE(caps->assembly_forms_size(), 4);
  std::string all;
  for (const std::string& f : caps->assembly_forms()) all += f + "\n";
  EXPECT_THAT(all, HasSubstr("pto.tassign"));
  EXPECT_THAT(all, HasSubstr("ins("));
}

TEST_F(AssemblyTest, PtoctlRunMatchesTheJsonJob) {
  const std::string program = WriteTempFile("prog.pto", kProgram);
  std::string a_values, b_values = "3855";  // 0x0f0f for every element
  for (int i = 0; i < 256; ++i) {
    absl::StrAppend(&a_values, i ? "," : "", i * 7 - 900);
  }
  CommandResult text = RunCommand(
      "client/ptoctl/ptoctl --server=" + server_->address() + " run " +
      program + " --target=a2a3 --tile a=int16:16x16:" + a_values +
      " --tile=b=int16:16x16:" + b_values);
  ASSERT_EQ(text.exit_code, 0) << text.output;

  std::string json;
  (void)google::protobuf::util::MessageToJsonString(
      AsInstructions(v1::TARGET_A2A3), &json);
  const std::string job = WriteTempFile("job.json", json);
  CommandResult list = RunCommand(
      "client/ptoctl/ptoctl --server=" + server_->address() + " run " + job);
  ASSERT_EQ(list.exit_code, 0) << list.output;
  // The grids (everything before the events) are the same.
  auto grids = [](const std::string& out) {
    return out.substr(0, out.find("events:"));
  };
  EXPECT_EQ(grids(text.output), grids(list.output));
  EXPECT_THAT(text.output, HasSubstr("d: 16x16 int16\n"));
  EXPECT_THAT(text.output,
              HasSubstr("note: tmp \"d.tmp\" allocated by the server"));
  // And both are a scalar loop's: read the text's result back as JSON.
  CommandResult json_text = RunCommand(
      "client/ptoctl/ptoctl --json --server=" + server_->address() + " run " +
      program + " --target=a2a3 --tile a=int16:16x16:" + a_values +
      " --tile=b=int16:16x16:" + b_values);
  ASSERT_EQ(json_text.exit_code, 0) << json_text.output;
  v1::JobResult result;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(json_text.output, &result)
          .ok());
  const v1::Tile& d = result.tiles().at("d");
  ASSERT_EQ(d.values_size(), 256);
  for (int i = 0; i < 256; ++i) {
    const int16_t a = static_cast<int16_t>(i * 7 - 900);
    ASSERT_EQ(d.values(i), static_cast<int16_t>((a & 0x0f0f) ^ a)) << i;
  }
}

TEST(PtoctlFmtTest, PrintsTheCanonicalFormAndNamesErrors) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  std::ofstream(dir + "/p.pto") << kProgram;
  CommandResult r = RunCommand("client/ptoctl/ptoctl fmt " + dir + "/p.pto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("pto.tand ins(%a, %b : !pto.tile<...>, !pto.tile<...>) "
                        "outs(%c : !pto.tile<...>)\n"));
  // Formatting the canonical form changes nothing.
  std::ofstream(dir + "/q.pto") << r.output;
  CommandResult again =
      RunCommand("client/ptoctl/ptoctl fmt " + dir + "/q.pto");
  EXPECT_EQ(again.output, r.output);

  std::ofstream(dir + "/bad.pto") << "%c = tand %a %b : !pto.tile<...>\n";
  r = RunCommand("client/ptoctl/ptoctl fmt " + dir + "/bad.pto");
  EXPECT_EQ(r.exit_code, 2);  // a mistake in the file: a usage error
  EXPECT_THAT(
      r.output,
      HasSubstr("bad.pto:1:14: expected ',' after operand %a, found '%b'"));
}

}  // namespace
}  // namespace ptoserve
