// The inference protocol's small path (server/oip/infer_wire.h) against
// its generic one: random requests of the covered shape read as
// JobOfInferRequest makes them, every covered field at its edges, what it
// must decline, mangled bytes either declined or read equally; requests
// through the pipeline both ways with the same refusals and the same
// answers, each checked against a scalar loop; and the response writer's
// bytes equal to InferResponseOf's message's, for jobs run and for an
// outcome with every field at its edges.
#include "server/oip/infer_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "proto/codec.h"
#include "proto/wire.h"
#include "proto/words.h"
#include "server/oip/infer.h"
#include "server/oip/models.h"
#include "tests/server/pipeline.h"
#include "tests/server/small_infer_checks.h"
#include "tests/server/small_job_checks.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

// A request the small path covers, of a model that runs one instruction:
// its inputs in random order with random elements, its outputs one of
// the ways a client asks for them.
inference::ModelInferRequest RandomRequest(const ModelCatalog& catalog,
                                           std::mt19937* rng) {
  std::vector<const InferModel*> models;
  for (const InferModel& m : catalog.models()) {
    if (m.op != nullptr) models.push_back(&m);
  }
  const InferModel& model = *models[(*rng)() % models.size()];
  const std::string datatype =
      model.datatypes[(*rng)() % model.datatypes.size()];
  const int rows = 1 + (*rng)() % 16, cols = 1 + (*rng)() % 16;
  const size_t bytes =
      size_t(rows) * cols * WireElementBytes(DTypeOfDatatype(datatype));
  inference::ModelInferRequest r;
  r.set_model_name(model.name);
  if ((*rng)() % 2) r.set_model_version("1");
  if ((*rng)() % 2) r.set_id(absl::StrCat("req-", (*rng)() % 1000));
  std::vector<std::string> names = {"src0"};
  if (model.op->sources == 2) names.push_back("src1");
  if ((*rng)() % 2) std::reverse(names.begin(), names.end());
  for (const std::string& name : names) {
    auto* input = r.add_inputs();
    input->set_name(name);
    input->set_datatype(datatype);
    input->add_shape(rows);
    input->add_shape(cols);
    std::string raw(bytes, '\0');
    for (char& c : raw) c = static_cast<char>((*rng)());
    r.add_raw_input_contents(std::move(raw));
  }
  // A target named, in any case, half the time; else the server's.
  v1::Target target = catalog.default_target();
  if ((*rng)() % 2) {
    target = model.targets[(*rng)() % model.targets.size()];
    std::string text = TargetText(target);
    if ((*rng)() % 2) text = absl::AsciiStrToUpper(text);
    (*r.mutable_parameters())["target"].set_string_param(text);
  }
  const bool takes_tmp =
      std::find(model.tmp_targets.begin(), model.tmp_targets.end(), target) !=
      model.tmp_targets.end();
  switch ((*rng)() % 3) {
    case 0:
      break;  // dst, by default
    case 1:
      r.add_outputs()->set_name("dst");
      break;
    default:
      if (takes_tmp) r.add_outputs()->set_name("tmp");
      r.add_outputs()->set_name("dst");
      break;
  }
  return r;
}

// `r` with a field the schema lacks: the generic path's to read.
std::string Generic(const inference::ModelInferRequest& r) {
  return r.SerializeAsString() + std::string("\xa0\x06\x01", 3);  // 100: 1
}

// The response to a request as its door writes it: from the outcome when
// the small path read the request, else from the result message.
std::string Response(const GrpcInferProtocol& protocol, const Outcome& o,
                     const std::string& written) {
  if (protocol.read_small()) return written;
  inference::ModelInferResponse response;
  InferResponseOf(o.result, protocol.envelope(), &response);
  return DeterministicBytes(response);
}

// The scalar answer of `model` on the request's inputs, as raw bytes.
std::string ScalarAnswer(const inference::ModelInferRequest& r) {
  std::string a, b;
  for (int i = 0; i < r.inputs_size(); ++i) {
    (r.inputs(i).name() == "src0" ? a : b) = r.raw_input_contents(i);
  }
  std::string out(a.size(), '\0');
  for (size_t i = 0; i < a.size(); ++i) {
    const uint8_t x = a[i], y = b.empty() ? 0 : uint8_t(b[i]);
    const std::string& m = r.model_name();
    out[i] = static_cast<char>(m == "tand"   ? (x & y)
                               : m == "txor" ? (x ^ y)
                               : m == "tor"  ? (x | y)
                                             : ~x);
  }
  return out;
}

class InferWireTest : public ::testing::Test, protected Pipeline {
 protected:
  InferWireTest()
      : Pipeline(ServiceLimits{}, 64 << 20, 4 << 20),
        catalog_(dispatcher_->capabilities()) {}

  // Runs `bytes` through the pipeline; the small path's answer written as
  // the door writes it.
  void Run(const std::string& bytes, const GrpcInferProtocol& protocol,
           Outcome* o, std::string* written) {
    o->before_message = [&protocol, written](JobReply& reply) {
      if (protocol.read_small()) {
        *written = WrittenInferResponse(protocol.envelope(), reply.outcome());
      }
    };
    Pipeline::Execute(o, BodyFormat::kProtobuf, bytes, "the request",
                      &protocol);
    RunScheduler();
    ASSERT_TRUE(o->done.HasBeenNotified());
  }

  const ModelCatalog catalog_;
};

TEST_F(InferWireTest, RandomRequestsReadAsTheGenericPathMakesThem) {
  std::mt19937 rng(53);
  for (int i = 0; i < 500; ++i) {
    const std::string bytes = RandomRequest(catalog_, &rng).SerializeAsString();
    ASSERT_TRUE(ReadSmallInfer(bytes, catalog_, EngineLimits{}).has_value())
        << i;
    EXPECT_EQ(SmallInferDiffers(bytes, catalog_), "") << i;
  }
}

TEST_F(InferWireTest, CoveredFieldsAtTheirEdgesReadAsTheGenericPath) {
  std::mt19937 rng(7);
  inference::ModelInferRequest r;
  do {
    r = RandomRequest(catalog_, &rng);
  } while (r.model_name() != "tand");
  std::vector<std::pair<std::string, std::string>> cases;
  const auto add = [&](const std::string& what, auto change) {
    inference::ModelInferRequest c = r;
    change(c);
    cases.emplace_back(what, c.SerializeAsString());
  };
  add("an id of 256 bytes", [](auto& c) { c.set_id(std::string(256, 'i')); });
  add("an empty id", [](auto& c) { c.clear_id(); });
  add("a 1x1 tensor", [](auto& c) {
    for (auto& in : *c.mutable_inputs()) {
      in.set_datatype("UINT8");
      in.set_shape(0, 1);
      in.set_shape(1, 1);
    }
    for (auto& raw : *c.mutable_raw_input_contents()) raw = "\x7f";
  });
  add("a pair of 128x62 int32 tensors, near 64 KiB", [](auto& c) {
    for (auto& in : *c.mutable_inputs()) {
      in.set_datatype("INT32");
      in.set_shape(0, 128);
      in.set_shape(1, 62);
    }
    for (auto& raw : *c.mutable_raw_input_contents()) {
      raw.assign(128 * 62 * 4, '\x5a');
    }
  });
  for (const auto& [what, bytes] : cases) {
    ASSERT_TRUE(ReadSmallInfer(bytes, catalog_, EngineLimits{}).has_value())
        << what;
    EXPECT_EQ(SmallInferDiffers(bytes, catalog_), "") << what;
  }
  // The shape one size at a time rather than packed, as protobuf reads it.
  std::string unpacked;
  {
    inference::ModelInferRequest c = r;
    c.clear_inputs();
    const std::string packed = c.SerializeAsString();
    std::string inputs;
    for (const auto& in : r.inputs()) {
      inference::ModelInferRequest::InferInputTensor t = in;
      t.clear_shape();
      std::string tensor = t.SerializeAsString();
      for (int64_t size : in.shape()) {
        tensor += '\x18';  // field 3, varint
        tensor += static_cast<char>(size);
      }
      inputs += '\x2a';  // field 5, bytes
      inputs += static_cast<char>(tensor.size());
      inputs += tensor;
    }
    unpacked = inputs + packed;
  }
  ASSERT_TRUE(ReadSmallInfer(unpacked, catalog_, EngineLimits{}).has_value());
  EXPECT_EQ(SmallInferDiffers(unpacked, catalog_), "");
}

TEST_F(InferWireTest, WhatItDoesNotCoverItDeclines) {
  std::mt19937 rng(11);
  inference::ModelInferRequest r;
  do {
    r = RandomRequest(catalog_, &rng);
  } while (r.model_name() != "tand");
  r.clear_outputs();
  std::vector<std::pair<std::string, std::string>> cases;
  const auto add = [&](const std::string& what, auto change) {
    inference::ModelInferRequest c = r;
    change(c);
    cases.emplace_back(what, c.SerializeAsString());
  };
  add("a parameter besides the target", [](auto& c) {
    (*c.mutable_parameters())["priority"].set_int64_param(1);
  });
  add("a target that is not the server's", [](auto& c) {
    (*c.mutable_parameters())["target"].set_string_param("gpu");
  });
  add("a target that is not a string",
      [](auto& c) { (*c.mutable_parameters())["target"].set_int64_param(1); });
  add("an empty target", [](auto& c) {
    (*c.mutable_parameters())["target"].set_string_param("");
  });
  add("an input's parameter", [](auto& c) {
    (*c.mutable_inputs(0)->mutable_parameters())["binary_data_size"]
        .set_int64_param(1);
  });
  add("an output's parameter", [](auto& c) {
    auto* out = c.add_outputs();
    out->set_name("dst");
    (*out->mutable_parameters())["binary_data"].set_bool_param(true);
  });
  add("contents", [](auto& c) {
    c.mutable_inputs(0)->mutable_contents()->add_int_contents(1);
  });
  add("the job model", [](auto& c) { c.set_model_name("job"); });
  add("a model that is not", [](auto& c) { c.set_model_name("tmul"); });
  add("version 2", [](auto& c) { c.set_model_version("2"); });
  add("an input not the model's",
      [](auto& c) { c.mutable_inputs(0)->set_name("a"); });
  add("src0 twice", [](auto& c) {
    c.mutable_inputs(0)->set_name("src0");
    c.mutable_inputs(1)->set_name("src0");
  });
  add("one input", [](auto& c) {
    c.mutable_inputs()->RemoveLast();
    c.mutable_raw_input_contents()->RemoveLast();
  });
  add("three inputs", [](auto& c) {
    *c.add_inputs() = c.inputs(0);
    c.add_raw_input_contents(c.raw_input_contents(0));
  });
  add("a datatype the model lacks", [](auto& c) {
    for (auto& in : *c.mutable_inputs()) in.set_datatype("FP32");
  });
  add("three sizes", [](auto& c) { c.mutable_inputs(0)->add_shape(1); });
  add("a size of 0", [](auto& c) { c.mutable_inputs(0)->set_shape(0, 0); });
  add("a size of -1", [](auto& c) { c.mutable_inputs(0)->set_shape(1, -1); });
  add("a size over 2^32",
      [](auto& c) { c.mutable_inputs(0)->set_shape(1, int64_t{1} << 32); });
  add("a shape whose bytes wrap 64 bits", [](auto& c) {
    for (auto& in : *c.mutable_inputs()) {
      in.set_datatype("INT32");
      in.set_shape(0, int64_t{1} << 31);
      in.set_shape(1, int64_t{1} << 31);
    }
    for (auto& raw : *c.mutable_raw_input_contents()) raw.clear();
  });
  add("raw contents a byte short",
      [](auto& c) { c.mutable_raw_input_contents(0)->pop_back(); });
  add("raw contents for one input of two",
      [](auto& c) { c.mutable_raw_input_contents()->RemoveLast(); });
  add("no raw contents", [](auto& c) { c.clear_raw_input_contents(); });
  add("an output not the model's",
      [](auto& c) { c.add_outputs()->set_name("src0"); });
  add("dst twice", [](auto& c) {
    c.add_outputs()->set_name("dst");
    c.add_outputs()->set_name("dst");
  });
  add("an id of 257 bytes", [](auto& c) { c.set_id(std::string(257, 'i')); });
  add("an id not ASCII", [](auto& c) { c.set_id("caf\xc3\xa9"); });
  add("over 64 KiB", [](auto& c) {
    for (auto& in : *c.mutable_inputs()) {
      in.set_datatype("INT32");
      in.set_shape(0, 128);
      in.set_shape(1, 65);
    }
    for (auto& raw : *c.mutable_raw_input_contents()) {
      raw.assign(128 * 65 * 4, '\0');
    }
  });
  const std::string whole = r.SerializeAsString();
  cases.emplace_back("a field the schema lacks", Generic(r));
  cases.emplace_back("truncated", whole.substr(0, whole.size() - 1));
  cases.emplace_back("the model named twice",
                     whole + "\x0a\x04tand");  // field 1 again
  // parameters {key: "target", value: {string_param: "host"}}, twice: the
  // parser keeps the last.
  const std::string target("\x22\x10\x0a\x06target\x12\x06\x1a\x04host", 18);
  cases.emplace_back("the target twice", whole + target + target);
  cases.emplace_back(
      "a target's value twice",
      whole + std::string("\x22\x18\x0a\x06target\x12\x06\x1a\x04host"
                          "\x12\x06\x1a\x04"
                          "a2a3",
                          26));
  cases.emplace_back(
      "a target and another of the oneof",
      whole + std::string("\x22\x12\x0a\x06target\x12\x08\x1a\x04host"
                          "\x08\x01",
                          20));
  const InferModel& tand = **catalog_.Find("tand", "");
  if (std::find(tand.tmp_targets.begin(), tand.tmp_targets.end(),
                catalog_.default_target()) == tand.tmp_targets.end()) {
    add("tmp where the default target takes none",
        [](auto& c) { c.add_outputs()->set_name("tmp"); });
  }
  for (const auto& [what, bytes] : cases) {
    EXPECT_FALSE(ReadSmallInfer(bytes, catalog_, EngineLimits{}).has_value())
        << what;
  }
}

// src0 & src1 for model tand: 2x4 INT32, nothing else.
inference::ModelInferRequest Tand() {
  inference::ModelInferRequest r;
  r.set_model_name("tand");
  for (const char* name : {"src0", "src1"}) {
    auto* input = r.add_inputs();
    input->set_name(name);
    input->set_datatype("INT32");
    input->add_shape(2);
    input->add_shape(4);
    r.add_raw_input_contents(std::string(32, name[3]));
  }
  return r;
}

TEST_F(InferWireTest, PaddedTagsAndLengthsReadAsProtobufReadsThem) {
  // The model name's tag and length, then the first input's and its
  // name's: at most 5 bytes each protobuf reads, so does the small path.
  const std::string bytes = Tand().SerializeAsString();
  ASSERT_EQ(bytes.substr(0, 6), std::string("\x0a\x04tand", 6));
  ASSERT_EQ(bytes[6], '\x2a');  // the first input
  for (const size_t at : {0, 1, 6, 7, 8, 9}) {
    for (const int width : {2, 5, 6, 10}) {
      std::string padded = PaddedVarint(bytes, at, width);
      if (at > 7) padded[7] += width - 1;  // its message's length
      inference::ModelInferRequest parsed;
      EXPECT_EQ(
          parsed.ParseFromArray(padded.data(), static_cast<int>(padded.size())),
          width <= 5)
          << "at " << at << ", " << width;
      EXPECT_EQ(ReadSmallInfer(padded, catalog_, EngineLimits{}).has_value(),
                width <= 5)
          << "at " << at << ", " << width;
      EXPECT_EQ(SmallInferDiffers(padded, catalog_), "")
          << "at " << at << ", " << width;
    }
  }
}

TEST_F(InferWireTest, TheServersLimitsOnInputsAndOutputsHoldForBoth) {
  // Over --max_tiles_per_job the scan refuses what the small path would
  // read: it declines it, the scan's refusal stands.
  EngineLimits one;
  one.max_tiles_per_job = 1;
  const std::string two_inputs = Tand().SerializeAsString();
  EXPECT_FALSE(ReadSmallInfer(two_inputs, catalog_, one).has_value());
  EXPECT_EQ(SmallInferDiffers(two_inputs, catalog_, one), "");
  inference::ModelInferRequest tnot = Tand();
  tnot.set_model_name("tnot");
  tnot.mutable_inputs()->RemoveLast();
  tnot.mutable_raw_input_contents()->RemoveLast();
  tnot.add_outputs()->set_name("dst");
  EXPECT_TRUE(ReadSmallInfer(tnot.SerializeAsString(), catalog_, one));
  EXPECT_EQ(SmallInferDiffers(tnot.SerializeAsString(), catalog_, one), "");
}

TEST_F(InferWireTest, ARequestThatIsNotOneIsNamedAsTheRequest) {
  std::string truncated = Tand().SerializeAsString();
  truncated.pop_back();
  const GrpcInferProtocol protocol(&catalog_);
  Outcome o;
  std::string written;
  Run(truncated, protocol, &o, &written);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(o.status.message(),
            absl::StrCat("the request (", truncated.size(),
                         " bytes) is not an inference.ModelInferRequest: its "
                         "protobuf encoding is truncated or corrupt"));
}

TEST_F(InferWireTest, MangledRequestsAreDeclinedOrReadAsTheGenericPath) {
  std::mt19937 rng(5);
  int read = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string bytes = RandomRequest(catalog_, &rng).SerializeAsString();
    for (int k = 1 + rng() % 3; k > 0; --k) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0:
          bytes[at] = static_cast<char>(rng());
          break;
        case 1:
          bytes.erase(at, 1);
          break;
        default:
          bytes.insert(at, 1, static_cast<char>(rng()));
          break;
      }
    }
    if (ReadSmallInfer(bytes, catalog_, EngineLimits{})) ++read;
    ASSERT_EQ(SmallInferDiffers(bytes, catalog_), "") << "input " << i;
  }
  EXPECT_GT(read, 100);  // the mangling leaves many readable
}

TEST_F(InferWireTest, BothPathsAnswerAlikeAndAsAScalarLoop) {
  std::mt19937 rng(97);
  int answered = 0;
  for (int i = 0; i < 300; ++i) {
    inference::ModelInferRequest r = RandomRequest(catalog_, &rng);
    if (i % 4 == 3) {  // invalid: a byte short
      r.mutable_raw_input_contents(0)->pop_back();
    }
    Outcome small, generic;
    std::string small_written, generic_written;
    const GrpcInferProtocol small_protocol(&catalog_);
    const GrpcInferProtocol generic_protocol(&catalog_);
    Run(r.SerializeAsString(), small_protocol, &small, &small_written);
    Run(Generic(r), generic_protocol, &generic, &generic_written);
    EXPECT_FALSE(generic_protocol.read_small());
    ASSERT_EQ(small.status, generic.status) << i;
    if (i % 4 == 3) {
      EXPECT_FALSE(small_protocol.read_small());
      EXPECT_THAT(small.status.message(), HasSubstr("bytes of raw contents"));
      continue;
    }
    ASSERT_TRUE(small_protocol.read_small()) << i;
    // A target may refuse a shape (the NPU targets' rows are whole 32-byte
    // blocks): both paths alike, checked above.
    if (!small.status.ok()) continue;
    ++answered;
    // The writer's bytes are those of the message of the same outcome.
    inference::ModelInferResponse own;
    InferResponseOf(small.result, small_protocol.envelope(), &own);
    ASSERT_EQ(small_written, DeterministicBytes(own)) << i;
    // The two paths' answers, times aside.
    inference::ModelInferResponse a, b;
    ASSERT_TRUE(
        a.ParseFromString(Response(small_protocol, small, small_written)));
    ASSERT_TRUE(b.ParseFromString(
        Response(generic_protocol, generic, generic_written)));
    EXPECT_THAT(a.parameters().at("events").string_param(),
                HasSubstr("instruction 0 "));
    (*a.mutable_parameters())["events"].clear_string_param();
    (*b.mutable_parameters())["events"].clear_string_param();
    ASSERT_EQ(DeterministicBytes(a), DeterministicBytes(b)) << i;
    int dst = 0;
    while (a.outputs(dst).name() != "dst") ++dst;
    EXPECT_EQ(a.raw_output_contents(dst), ScalarAnswer(r)) << i;
  }
  EXPECT_GT(answered, 100);
  EXPECT_EQ(budget_.held(), 0u);
}

// An outcome with its fields at their edges: an output whose raw content
// has two length bytes, a name twice, events with waits, micro-ops and
// notes, and one with every field at its default.
JobOutcome EdgeOutcome(const std::string& bytes) {
  TileDesc desc;
  desc.dtype = DType::kInt8;
  desc.rows = 3;
  desc.cols = 200;
  JobOutcome outcome;
  outcome.target = Target::kA5;
  outcome.outputs.push_back(
      {"tmp",
       Tile::Borrow(desc, reinterpret_cast<const uint8_t*>(bytes.data())),
       false});
  TileDesc one = desc;
  one.dtype = DType::kUInt32;
  one.rows = one.cols = 1;
  outcome.outputs.push_back({"dst", Tile(one), false});
  outcome.outputs.push_back({"dst", Tile(one), false});
  Event e;
  e.id = "e0";
  e.opcode = Opcode::kTxor;
  e.target = Target::kA5;
  e.waited_on = {"a", "b"};
  e.start_time = absl::FromUnixNanos(1500);
  e.end_time = absl::FromUnixNanos(1'000'000'000);
  MicroOp op;
  op.op = "vxor";
  op.dst = "dst";
  op.srcs = {"src0", "src1"};
  op.repeats = 2;
  op.elements = 64;
  e.trace.ops.push_back(op);
  e.trace.notes = {"a note"};
  outcome.events.push_back(e);
  outcome.events.push_back(Event{});
  return outcome;
}

// The writer's bytes and the message's, in both forms.
void ExpectSameBytes(const InferEnvelope& envelope, JobOutcome outcome,
                     const std::string& what) {
  const std::string written = WrittenInferResponse(envelope, outcome);
  const InferResponseWriter in_stream(
      envelope, outcome, InferResponseWriter::Form::kStreamResponse);
  std::string streamed(in_stream.size(), '\0');
  in_stream.Write(reinterpret_cast<uint8_t*>(streamed.data()));
  v1::JobResult result;
  ToJobResult(std::move(outcome), ResultEncodings{}, &result);
  inference::ModelStreamInferResponse answer;
  InferResponseOf(result, envelope, answer.mutable_infer_response());
  EXPECT_EQ(written, DeterministicBytes(answer.infer_response())) << what;
  EXPECT_EQ(streamed, DeterministicBytes(answer)) << what;
}

TEST_F(InferWireTest, EveryFieldAtItsEdgesWritesAsItsMessage) {
  const std::string bytes(600, '\x81');
  InferEnvelope envelope;
  ExpectSameBytes(envelope, EdgeOutcome(bytes),
                  "every tile, by name; no model, no id");
  envelope.model = std::string(300, 'm');
  envelope.id = "i";
  envelope.outputs = {"tmp", "missing", "dst"};
  ExpectSameBytes(envelope, EdgeOutcome(bytes),
                  "the outputs asked for, one missing");
  ExpectSameBytes(envelope, JobOutcome{}, "no outputs, no events");
}

}  // namespace
}  // namespace ptoserve
