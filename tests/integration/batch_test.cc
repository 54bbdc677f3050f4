// ExecuteBatches end to end: batches of jobs on a real server, through the
// C++ SDK and as raw bytes.
#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "tests/integration/grpc_util.h"
#include "tests/integration/server_process.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

// One job of a batch and what its dst must hold, computed here with a
// scalar loop over the elements as int64 (each type's bits, sign-extended
// or not, and back).
struct Expected {
  v1::DType dtype;
  std::vector<int64_t> dst;  // empty: the job is broken on purpose
};

template <typename T>
Expected AddBinaryJob(std::mt19937* rng, v1::Target target, bool is_xor,
                      const std::string& id, v1::JobBatch* batch) {
  // a2a3 and a5 rows are a multiple of 32 bytes; the host takes any.
  std::uniform_int_distribution<uint32_t> dim(1, 24), blocks(1, 3);
  const uint32_t rows = dim(*rng);
  const uint32_t cols =
      target == v1::TARGET_HOST ? dim(*rng) : blocks(*rng) * (32 / sizeof(T));
  std::uniform_int_distribution<int64_t> value(std::numeric_limits<T>::min(),
                                               std::numeric_limits<T>::max());
  std::vector<T> a(rows * cols), b(rows * cols);
  for (T& v : a) v = static_cast<T>(value(*rng));
  for (T& v : b) v = static_cast<T>(value(*rng));
  v1::Job job = BinaryJob<T>(is_xor ? v1::OPCODE_TXOR : v1::OPCODE_TAND,
                             BinaryArgs<T>{a, b, rows, cols, 0, 0, target});
  job.set_id(id);
  *batch->add_jobs() = std::move(job);
  Expected want{DTypeOf<T>(), {}};
  for (size_t k = 0; k < a.size(); ++k) {
    want.dst.push_back(static_cast<T>(is_xor ? a[k] ^ b[k] : a[k] & b[k]));
  }
  return want;
}

template <typename T>
std::vector<int64_t> Widened(const v1::Tile& tile) {
  std::vector<T> elements = TileElements<T>(tile).value();
  return std::vector<int64_t>(elements.begin(), elements.end());
}

std::vector<int64_t> Elements(v1::DType dtype, const v1::Tile& tile) {
  switch (dtype) {
    case v1::DTYPE_INT8:
      return Widened<int8_t>(tile);
    case v1::DTYPE_UINT8:
      return Widened<uint8_t>(tile);
    case v1::DTYPE_INT16:
      return Widened<int16_t>(tile);
    case v1::DTYPE_UINT16:
      return Widened<uint16_t>(tile);
    case v1::DTYPE_INT32:
      return Widened<int32_t>(tile);
    default:
      return Widened<uint32_t>(tile);
  }
}

// 60 batches of 1 to 40 jobs, each job of a random type, target, opcode and
// shape, one in 17 broken: every batch is answered once, its results in its
// order, every element as the scalar loop says, every broken job's error in
// its own result without touching its neighbours.
TEST(BatchTest, EveryJobOfEveryBatchMatchesAScalarLoopInOrder) {
  ServerProcess server;
  auto client = Client::Connect(server.address()).value();
  std::mt19937 rng(2026);
  std::vector<v1::JobBatch> batches;
  std::map<std::string, Expected> expected;  // by job id
  const v1::Target targets[] = {v1::TARGET_HOST, v1::TARGET_A2A3,
                                v1::TARGET_A5};
  int broken = 0;
  for (int b = 0; b < 60; ++b) {
    v1::JobBatch batch;
    const int jobs = std::uniform_int_distribution<int>(1, 40)(rng);
    for (int j = 0; j < jobs; ++j) {
      const std::string id = absl::StrCat(b, ".", j);
      const v1::Target target = targets[rng() % 3];
      const bool is_xor = rng() % 2;
      switch (rng() % 6) {
        case 0:
          expected[id] = AddBinaryJob<int8_t>(&rng, target, is_xor, id, &batch);
          break;
        case 1:
          expected[id] =
              AddBinaryJob<uint8_t>(&rng, target, is_xor, id, &batch);
          break;
        case 2:
          expected[id] =
              AddBinaryJob<int16_t>(&rng, target, is_xor, id, &batch);
          break;
        case 3:
          expected[id] =
              AddBinaryJob<uint16_t>(&rng, target, is_xor, id, &batch);
          break;
        case 4:
          expected[id] =
              AddBinaryJob<int32_t>(&rng, target, is_xor, id, &batch);
          break;
        default:
          expected[id] =
              AddBinaryJob<uint32_t>(&rng, target, is_xor, id, &batch);
      }
      if (rng() % 17 == 0) {
        batch.mutable_jobs(j)->mutable_instructions(0)->set_src1("missing");
        expected[id].dst.clear();
        ++broken;
      }
    }
    batches.push_back(std::move(batch));
  }
  ASSERT_GT(broken, 0);
  std::set<int> answered;
  absl::Status status =
      client->ExecuteBatches(batches, [&](v1::JobResultBatch answer) {
        ASSERT_GT(answer.results_size(), 0);
        const std::string& first = answer.results(0).id();
        const int b = std::stoi(first.substr(0, first.find('.')));
        ASSERT_TRUE(answered.insert(b).second) << "batch " << b << " twice";
        ASSERT_EQ(answer.results_size(), batches[b].jobs_size());
        for (int j = 0; j < answer.results_size(); ++j) {
          const v1::JobResult& r = answer.results(j);
          ASSERT_EQ(r.id(), absl::StrCat(b, ".", j)) << "out of order";
          const Expected& want = expected.at(r.id());
          if (want.dst.empty()) {
            EXPECT_EQ(r.status().code(), v1::INVALID_ARGUMENT) << r.id();
            EXPECT_THAT(r.status().message(), HasSubstr("src1 \"missing\""));
            continue;
          }
          ASSERT_EQ(r.status().code(), v1::OK) << r.status().message();
          EXPECT_EQ(r.target(), batches[b].jobs(j).target());
          ASSERT_EQ(r.events_size(), 1);
          ASSERT_EQ(Elements(want.dtype, r.tiles().at("dst")), want.dst)
              << "job " << r.id();
        }
      });
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(answered.size(), batches.size());
}

TEST(BatchTest, AnEmptyBatchGetsAnEmptyAnswer) {
  ServerProcess server;
  auto client = Client::Connect(server.address()).value();
  int answers = 0;
  ASSERT_TRUE(client
                  ->ExecuteBatches({v1::JobBatch()},
                                   [&](v1::JobResultBatch answer) {
                                     ++answers;
                                     EXPECT_EQ(answer.results_size(), 0);
                                   })
                  .ok());
  EXPECT_EQ(answers, 1);
}

// Raw messages on one ExecuteBatches stream, answered in order since each is
// sent after the previous answer.
class RawBatchStream {
 public:
  explicit RawBatchStream(const std::string& address)
      : stub_(OwnChannel(address)) {
    context_.set_deadline(In(absl::Seconds(30)));
    stream_ = stub_.PrepareCall(
        &context_, "/ptoserve.v1.TileCompute/ExecuteBatches", &cq_);
    stream_->StartCall(Tag(1));
    EXPECT_TRUE(Wait(1));
  }
  ~RawBatchStream() {
    context_.TryCancel();
    cq_.Shutdown();
    void* tag;
    bool ok;
    while (cq_.Next(&tag, &ok)) {
    }
  }

  // Sends `bytes` as one message and returns the answer.
  v1::JobResultBatch Send(const std::string& bytes) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer message(&slice, 1);
    stream_->Write(message, Tag(2));
    EXPECT_TRUE(Wait(2));
    grpc::ByteBuffer reply;
    stream_->Read(&reply, Tag(3));
    v1::JobResultBatch answer;
    if (Wait(3)) {
      EXPECT_TRUE(answer.ParseFromString(Bytes(reply)));
    }
    return answer;
  }

 private:
  static void* Tag(intptr_t n) { return reinterpret_cast<void*>(n); }
  bool Wait(intptr_t want) {
    void* tag;
    bool ok;
    if (cq_.AsyncNext(&tag, &ok, In(absl::Seconds(20))) !=
        grpc::CompletionQueue::GOT_EVENT) {
      ADD_FAILURE() << "no completion for " << want;
      return false;
    }
    EXPECT_EQ(tag, Tag(want));
    return ok;
  }

  grpc::GenericStub stub_;
  grpc::ClientContext context_;
  grpc::CompletionQueue cq_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> stream_;
};

v1::Job SmallTand(const std::string& id, int32_t x, int32_t y) {
  const std::vector<int32_t> a(8, x), b(8, y);
  v1::Job job =
      BinaryJob<int32_t>(v1::OPCODE_TAND, BinaryArgs<int32_t>{a, b, 1, 8});
  job.set_id(id);
  return job;
}

// A message that is not a batch the server takes is answered with one
// result (no id, the error naming the message and what is wrong), and the
// stream goes on.
TEST(BatchTest, AMessageRefusedAsAWholeGetsOneResultAndTheStreamGoesOn) {
  ServerProcess server({"--max_jobs_per_batch=4", "--max_tiles_per_job=3"});
  RawBatchStream stream(server.address());

  v1::JobResultBatch a = stream.Send("\x0a\x05\xff\xff");  // field past the end
  ASSERT_EQ(a.results_size(), 1);
  EXPECT_EQ(a.results(0).id(), "");
  EXPECT_EQ(a.results(0).status().code(), v1::INVALID_ARGUMENT);
  EXPECT_EQ(a.results(0).status().message(),
            "stream message 1 (4 bytes) is not a ptoserve.v1.JobBatch: its "
            "protobuf encoding is truncated or corrupt");

  v1::JobBatch five;
  for (int i = 0; i < 5; ++i) *five.add_jobs() = SmallTand("x", 1, 1);
  v1::JobResultBatch b = stream.Send(five.SerializeAsString());
  ASSERT_EQ(b.results_size(), 1);
  EXPECT_EQ(b.results(0).status().code(), v1::RESOURCE_EXHAUSTED);
  EXPECT_THAT(b.results(0).status().message(), HasSubstr("stream message 2 ("));
  EXPECT_THAT(b.results(0).status().message(),
              HasSubstr("the batch has more than 4 jobs, the limit"));

  // A job over a per-job limit, named by its place in the batch.
  v1::JobBatch crowded;
  *crowded.add_jobs() = SmallTand("ok", 1, 1);
  v1::Job& many = *crowded.add_jobs() = SmallTand("many", 1, 1);
  for (int i = 0; i < 3; ++i) (*many.mutable_tiles())[absl::StrCat("t", i)];
  v1::JobResultBatch c = stream.Send(crowded.SerializeAsString());
  ASSERT_EQ(c.results_size(), 1);
  EXPECT_THAT(c.results(0).status().message(),
              HasSubstr("job 1: job has more than 3 tiles, the limit"));

  // The stream still works, and four jobs are within the limit.
  v1::JobBatch four;
  for (int i = 0; i < 4; ++i) {
    *four.add_jobs() = SmallTand(absl::StrCat(i), 6 + i, 3);
  }
  v1::JobResultBatch d = stream.Send(four.SerializeAsString());
  ASSERT_EQ(d.results_size(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(d.results(i).id(), absl::StrCat(i));
    ASSERT_EQ(d.results(i).status().code(), v1::OK)
        << d.results(i).status().message();
    EXPECT_EQ(TileElements<int32_t>(d.results(i).tiles().at("dst")).value(),
              std::vector<int32_t>(8, (6 + i) & 3));
  }
}

// Each job holds its own share of the memory budget until its batch's
// answer is written: the jobs that do not fit are refused in their own
// results, the others run, and the budget is whole again afterwards.
TEST(BatchTest, JobsOverTheBudgetAreRefusedAloneInTheirResults) {
  ServerProcess server({"--memory_budget_mb=8", "--max_job_mb=8"});
  RawBatchStream stream(server.address());
  v1::JobBatch batch;
  for (int i = 0; i < 8; ++i) {
    v1::Job job = SmallTand(absl::StrCat(i), 0, 0);
    for (const char* name : {"src0", "src1"}) {
      v1::Tile& t = (*job.mutable_tiles())[name];
      t.clear_data();
      t.set_rows(256);
      t.set_cols(512);
      t.set_fill(name[3] == '0' ? 12 : 10);
    }
    *batch.add_jobs() = job;
  }
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    v1::JobResultBatch answer = stream.Send(batch.SerializeAsString());
    ASSERT_EQ(answer.results_size(), 8);
    int ran = 0, refused = 0;
    for (int i = 0; i < 8; ++i) {
      const v1::JobResult& r = answer.results(i);
      EXPECT_EQ(r.id(), absl::StrCat(i));
      if (r.status().code() == v1::OK) {
        ++ran;
        EXPECT_EQ(TileElements<int32_t>(r.tiles().at("dst")).value(),
                  std::vector<int32_t>(256 * 512, 12 & 10));
      } else {
        ++refused;
        EXPECT_EQ(r.status().code(), v1::RESOURCE_EXHAUSTED);
        EXPECT_THAT(r.status().message(), HasSubstr("memory budget"));
      }
    }
    EXPECT_GT(ran, 0);
    EXPECT_GT(refused, 0);
  }
}

// An answer too large to send, even as one error per job with its id (4500
// jobs, 200-byte ids, 1 MiB messages), is sent as one refused message, and
// the stream goes on. Building that answer once passed gRPC an empty buffer,
// which aborted the server.
TEST(BatchTest, AnAnswerTooLargeEvenAsErrorsIsOneRefusal) {
  ServerProcess server({"--max_message_mb=1", "--max_jobs_per_batch=65536"});
  RawBatchStream stream(server.address());
  v1::JobBatch batch;
  for (int i = 0; i < 4500; ++i) {
    batch.add_jobs()->set_id(absl::StrCat(i, std::string(200, '.')));
  }
  ASSERT_LT(batch.ByteSizeLong(), 1u << 20);
  v1::JobResultBatch answer = stream.Send(batch.SerializeAsString());
  ASSERT_EQ(answer.results_size(), 1);
  EXPECT_EQ(answer.results(0).id(), "");
  EXPECT_EQ(answer.results(0).status().code(), v1::RESOURCE_EXHAUSTED);
  EXPECT_THAT(answer.results(0).status().message(),
              HasSubstr("the batch's answer could not be sent"));
  EXPECT_THAT(answer.results(0).status().message(),
              HasSubstr("4500 results, each an error, were too large too"));
  v1::JobBatch one;
  *one.add_jobs() = SmallTand("after", 7, 12);
  answer = stream.Send(one.SerializeAsString());
  ASSERT_EQ(answer.results_size(), 1);
  EXPECT_EQ(answer.results(0).status().code(), v1::OK)
      << answer.results(0).status().message();
}

// Ids are echoed in results: like names, they are at most 256 bytes, on a
// stream and in a batch alike.
TEST(BatchTest, LongIdsAreRefusedOnStreamsAndInBatches) {
  ServerProcess server;
  auto client = Client::Connect(server.address()).value();
  v1::Job job = SmallTand(std::string(300, 'x'), 1, 1);
  std::vector<v1::JobResult> results;
  ASSERT_TRUE(client
                  ->ExecuteStream(
                      {job, SmallTand("next", 3, 5)},
                      [&](v1::JobResult r) { results.push_back(std::move(r)); })
                  .ok());
  ASSERT_EQ(results.size(), 2u);
  std::map<std::string, v1::JobResult> by_id;
  for (v1::JobResult& r : results) by_id[r.id()] = r;
  EXPECT_EQ(by_id[""].status().code(), v1::INVALID_ARGUMENT);
  EXPECT_THAT(by_id[""].status().message(), HasSubstr("job id \"xxxxxxxx"));
  EXPECT_EQ(by_id["next"].status().code(), v1::OK);
  v1::JobBatch batch;
  *batch.add_jobs() = SmallTand("ok", 1, 1);
  *batch.add_jobs() = job;
  RawBatchStream stream(server.address());
  v1::JobResultBatch answer = stream.Send(batch.SerializeAsString());
  ASSERT_EQ(answer.results_size(), 1);
  EXPECT_THAT(answer.results(0).status().message(),
              HasSubstr("job 1: job id \"xxxx"));
}

TEST(BatchTest, CapabilitiesGiveTheBatchLimit) {
  ServerProcess server({"--max_jobs_per_batch=77"});
  auto client = Client::Connect(server.address()).value();
  EXPECT_EQ(client->GetCapabilities()->limits().max_jobs_per_batch(), 77u);
}

}  // namespace
}  // namespace ptoserve
