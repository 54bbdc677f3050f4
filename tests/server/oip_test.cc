// The Open Inference Protocol's adapter (server/oip) through the request
// pipeline, below the doors: a ModelInferRequest's job and its answer
// against a scalar loop, on gRPC's form and the REST form; the wire scan's
// bounds before a request is parsed; the REST JSON priced against the
// caller's share while it is parsed; and the request's mistakes in its
// words.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "server/oip/infer.h"
#include "server/oip/models.h"
#include "server/oip/rest.h"
#include "tests/server/pipeline.h"
#include "tests/server/signal.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

// A request of `model` on int32 inputs of `rows` x `cols`, src0 = i * 7,
// src1 = 0x5a5a ^ i, as raw contents.
inference::ModelInferRequest Request(const std::string& model, int rows,
                                     int cols) {
  inference::ModelInferRequest r;
  r.set_model_name(model);
  r.set_id("req-1");
  for (const char* name : {"src0", "src1"}) {
    auto* t = r.add_inputs();
    t->set_name(name);
    t->set_datatype("INT32");
    t->add_shape(rows);
    t->add_shape(cols);
    std::string raw(size_t(rows) * cols * 4, '\0');
    for (int i = 0; i < rows * cols; ++i) {
      const int32_t v = std::string(name) == "src0" ? i * 7 : 0x5a5a ^ i;
      std::memcpy(&raw[i * 4], &v, 4);
    }
    r.add_raw_input_contents(std::move(raw));
  }
  return r;
}

int32_t At(const std::string& raw, int i) {
  int32_t v;
  std::memcpy(&v, &raw[i * 4], 4);
  return v;
}

absl::StatusOr<WireShape> Scan(const std::string& bytes) {
  google::protobuf::io::ArrayInputStream in(bytes.data(), int(bytes.size()));
  return ScanInferRequest(&in, bytes.size(), EngineLimits{});
}

class OipTest : public ::testing::Test, protected Pipeline {
 protected:
  // 64 MiB in all, 1 MiB a client.
  OipTest()
      : Pipeline(ServiceLimits{}, 64 << 20, 1 << 20),
        catalog_(dispatcher_->capabilities()) {}

  const ModelCatalog catalog_;
};

TEST_F(OipTest, ARequestIsItsModelsJobAndItsAnswerMatchesAScalarLoop) {
  for (const char* model : {"tand", "txor", "tor"}) {
    const inference::ModelInferRequest request = Request(model, 4, 16);
    const GrpcInferProtocol protocol(&catalog_);
    Outcome o;
    Pipeline::Execute(&o, BodyFormat::kProtobuf, request.SerializeAsString(),
                      "the request", &protocol);
    ASSERT_TRUE(o.done.HasBeenNotified()) << model;  // light: run here
    ASSERT_TRUE(o.status.ok()) << o.status;
    inference::ModelInferResponse response;
    InferResponseOf(o.result, protocol.envelope(), &response);
    EXPECT_EQ(response.model_name(), model);
    EXPECT_EQ(response.model_version(), "1");
    EXPECT_EQ(response.id(), "req-1");
    EXPECT_EQ(response.parameters().at("target").string_param(), "host");
    EXPECT_THAT(response.parameters().at("events").string_param(),
                HasSubstr(absl::StrCat("instruction 0 ",
                                       std::string(model) == "tand"   ? "TAND"
                                       : std::string(model) == "txor" ? "TXOR"
                                                                      : "TOR",
                                       " on host")));
    ASSERT_EQ(response.outputs_size(), 1);
    EXPECT_EQ(response.outputs(0).name(), "dst");
    EXPECT_EQ(response.outputs(0).datatype(), "INT32");
    EXPECT_THAT(response.outputs(0).shape(), ::testing::ElementsAre(4, 16));
    const std::string& dst = response.raw_output_contents(0);
    ASSERT_EQ(dst.size(), 4u * 16 * 4);
    for (int i = 0; i < 64; ++i) {
      const int32_t a = i * 7, b = 0x5a5a ^ i;
      const int32_t want = std::string(model) == "tand"   ? (a & b)
                           : std::string(model) == "txor" ? (a ^ b)
                                                          : (a | b);
      ASSERT_EQ(At(dst, i), want) << model << " element " << i;
    }
  }
  EXPECT_EQ(budget_.held(), 0u);
}

TEST_F(OipTest, TypedContentsAreCheckedForTheirDatatypesRange) {
  inference::ModelInferRequest r = Request("tand", 1, 4);
  r.clear_raw_input_contents();
  for (auto& input : *r.mutable_inputs()) {
    input.set_datatype("INT8");
    for (int v : {1, -2, 127, -128})
      input.mutable_contents()->add_int_contents(v);
  }
  v1::Job job;
  InferEnvelope envelope;
  ASSERT_TRUE(JobOfInferRequest(catalog_, r, &job, &envelope).ok());
  EXPECT_EQ(job.tiles().at("src0").data(), std::string("\x01\xfe\x7f\x80", 4));
  r.mutable_inputs(1)->mutable_contents()->set_int_contents(2, 128);
  job.Clear();
  const absl::Status refused = JobOfInferRequest(catalog_, r, &job, &envelope);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(),
              HasSubstr("input src1: element 2 is 128, outside INT8's -128 "
                        "to 127"));
}

TEST_F(OipTest, TheScanBoundsARequestBeforeItIsParsed) {
  const inference::ModelInferRequest ok = Request("tand", 2, 8);
  absl::StatusOr<WireShape> shape = Scan(ok.SerializeAsString());
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->tiles, 2u);

  inference::ModelInferRequest many = ok;
  for (size_t i = 0; i <= EngineLimits{}.max_tiles_per_job; ++i) {
    many.add_inputs()->set_name("x");
  }
  EXPECT_THAT(Scan(many.SerializeAsString()).status().message(),
              HasSubstr("more than 1024 inputs"));

  inference::ModelInferRequest params = ok;
  for (int i = 0; i <= 64; ++i) {
    (*params.mutable_parameters())[absl::StrCat("p", i)].set_bool_param(true);
  }
  EXPECT_EQ(Scan(params.SerializeAsString()).status().code(),
            absl::StatusCode::kResourceExhausted);

  inference::ModelInferRequest floats = ok;
  floats.mutable_inputs(0)->mutable_contents()->add_fp32_contents(1.5);
  EXPECT_THAT(Scan(floats.SerializeAsString()).status().message(),
              HasSubstr("may hold int_contents"));

  // Elements past what a tile may hold (16 MiB of one-byte elements).
  inference::ModelInferRequest elements = ok;
  auto* contents = elements.mutable_inputs(0)->mutable_contents();
  contents->mutable_uint_contents()->Resize((16 << 20) + 1, 0);
  EXPECT_THAT(Scan(elements.SerializeAsString()).status().message(),
              HasSubstr("more than a tile may hold"));

  // Fields the protocol lacks: a few pass, many do not.
  std::string unknown = ok.SerializeAsString();
  for (int i = 0; i < 17; ++i) unknown += std::string("\xa0\x06\x01", 3);
  EXPECT_THAT(Scan(unknown).status().message(),
              HasSubstr("more than 16 fields the protocol lacks"));
  std::string truncated = ok.SerializeAsString();
  truncated.resize(truncated.size() - 3);
  EXPECT_THAT(Scan(truncated).status().message(),
              HasSubstr("truncated or corrupt"));
}

TEST_F(OipTest, RestJsonIsPricedAgainstTheCallersShareWhileItIsParsed) {
  // 60 KiB of JSON costs some 1.2 MB while parsed: over the client's
  // 1 MiB share, refused before the parse; the same bytes in a request of
  // a client with room parse.
  std::string data;
  for (int i = 0; i < 64 * 256 && data.size() < 60000; ++i) {
    absl::StrAppend(&data, data.empty() ? "" : ",", i % 1000);
  }
  const std::string body = absl::StrCat(
      R"({"inputs": [{"name": "src0", "shape": [1, 1], "datatype": "INT32", )",
      R"("data": [)", data, R"(]}]})");
  const RestInferProtocol protocol(&catalog_, "tand", "", body.size(), false);
  Outcome o;
  Pipeline::Execute(&o, BodyFormat::kJson, body, "the body", &protocol);
  ASSERT_TRUE(o.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(o.status.code(), absl::StatusCode::kResourceExhausted) << o.status;
  EXPECT_THAT(o.status.message(), HasSubstr("memory"));
  o.body.reset();  // the door's, until its request ends
  EXPECT_TRUE(WaitUntil([&] { return budget_.held() == 0; }));
}

TEST_F(OipTest, RestBinaryAndJsonInputsMakeOneRequest) {
  const std::string json =
      R"({"id": "r", "inputs": [)"
      R"({"name": "src0", "shape": [1, 4], "datatype": "UINT8", "parameters": {"binary_data_size": 4}},)"
      R"({"name": "src1", "shape": [1, 4], "datatype": "UINT8", "data": [[255, 15, 0, 1]]}],)"
      R"("outputs": [{"name": "dst", "parameters": {"binary_data": true}}]})";
  const std::string body = json + std::string("\x0f\xff\x0f\x03", 4);
  inference::ModelInferRequest request;
  ASSERT_TRUE(RestInferRequest(body, json.size(), "tand", "1", &request).ok());
  ASSERT_EQ(request.raw_input_contents_size(), 2);
  EXPECT_EQ(request.raw_input_contents(0), std::string("\x0f\xff\x0f\x03", 4));
  EXPECT_EQ(request.raw_input_contents(1), std::string("\xff\x0f\x00\x01", 4));
  EXPECT_FALSE(request.inputs(1).has_contents());
  v1::Job job;
  InferEnvelope envelope;
  ASSERT_TRUE(JobOfInferRequest(catalog_, request, &job, &envelope).ok());
  ASSERT_EQ(envelope.binary.size(), 1u);
  EXPECT_TRUE(envelope.binary[0]);

  const absl::Status extra =
      RestInferRequest(body + "xy", json.size(), "tand", "", &request);
  EXPECT_THAT(extra.message(),
              HasSubstr("2 bytes follow the JSON that no input's "
                        "binary_data_size claims"));
  request.Clear();
  const absl::Status short_tail =
      RestInferRequest(json + "\x01", json.size(), "tand", "", &request);
  EXPECT_THAT(short_tail.message(),
              HasSubstr("binary_data_size must be a byte count within the 1 "
                        "bytes after the JSON"));
}

TEST_F(OipTest, MistakesAreNamedInTheRequestsWords) {
  struct Case {
    std::function<void(inference::ModelInferRequest*)> change;
    absl::StatusCode code;
    const char* words;
  };
  const std::vector<Case> cases = {
      {[](auto* r) { r->set_model_name("tmul"); }, absl::StatusCode::kNotFound,
       "no model \"tmul\" on this server; its models are job, tand, tnot, "
       "tor, txor"},
      {[](auto* r) { r->set_model_version("2"); }, absl::StatusCode::kNotFound,
       "model \"tand\" has no version \"2\": its one version is \"1\""},
      {[](auto* r) { r->mutable_inputs(1)->set_name("b"); },
       absl::StatusCode::kInvalidArgument,
       "input \"b\" is not one of model tand's: src0, src1"},
      {[](auto* r) { (*r->mutable_parameters())["target"].set_int64_param(3); },
       absl::StatusCode::kInvalidArgument,
       "parameter target must be a string (host, a2a3, a5), not an integer"},
      {[](auto* r) {
         (*r->mutable_parameters())["valid_rows"].set_string_param("x");
       },
       absl::StatusCode::kInvalidArgument,
       "parameter valid_rows must be an integer, not a string"},
      {[](auto* r) { r->add_outputs()->set_name("c"); },
       absl::StatusCode::kInvalidArgument,
       "output \"c\" is not one of model tand's: dst"},
      {[](auto* r) { r->mutable_raw_input_contents()->RemoveLast(); },
       absl::StatusCode::kInvalidArgument,
       "raw_input_contents has 1 entries for 2 inputs"},
      {[](auto* r) {
         (*r->mutable_inputs(0)->mutable_parameters())["shared_memory_region"]
             .set_string_param("r");
       },
       absl::StatusCode::kUnimplemented, "system shared memory is not served"},
      {[](auto* r) { r->set_model_name("job"); },
       absl::StatusCode::kInvalidArgument,
       "model job runs the program in parameter job"},
  };
  for (const Case& c : cases) {
    inference::ModelInferRequest r = Request("tand", 1, 8);
    c.change(&r);
    v1::Job job;
    InferEnvelope envelope;
    const absl::Status s = JobOfInferRequest(catalog_, r, &job, &envelope);
    EXPECT_EQ(s.code(), c.code) << c.words;
    EXPECT_THAT(s.message(), HasSubstr(c.words));
  }
}

}  // namespace
}  // namespace ptoserve
