// HttpApi's own: libmicrohttpd's callbacks and the state of one request,
// shared by http_api.cc (which starts the daemon) and http_routes.cc (what
// each route does).
#ifndef PTOSERVE_SERVER_HTTP_HTTP_CALLBACKS_H_
#define PTOSERVE_SERVER_HTTP_HTTP_CALLBACKS_H_

#include <microhttpd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "ptoserve/v1/job.pb.h"
#include "server/http/http_api.h"
#include "server/jobs/dispatcher.h"
#include "server/jobs/intake.h"
#include "server/jobs/memory_budget.h"
#include "server/jobs/request_body.h"

namespace ptoserve {

enum class HttpRoute {
  kPage,
  kExecute,
  kCapabilities,
  kHealth,
  kLive,
  kReady,
  kOther
};

// The job of a request; shared with the job's done, which may still be
// returning on another thread when the request is answered.
struct HttpJob {
  HttpJob(MemoryBudget* budget, std::shared_ptr<MemoryBudget::Share> share,
          uint64_t limit)
      : body(BodyFormat::kJson, budget, std::move(share), limit) {}

  IncomingBody body;  // held against the client's share as it arrives
  v1::Job job;
  v1::JobResult result;
  CallInfo call;
  absl::Mutex mu;
  bool started = false;  // handed to the pipeline
  bool done ABSL_GUARDED_BY(mu) = false;
  bool suspended ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);
  std::string json ABSL_GUARDED_BY(mu);
  // The job's part of the budget, and its JSON's, until the answer is sent.
  MemoryBudget::Hold hold ABSL_GUARDED_BY(mu);
  MemoryBudget::Hold json_hold ABSL_GUARDED_BY(mu);
};

struct HttpApi::Request {
  HttpRoute route = HttpRoute::kOther;
  std::string path;
  absl::Time start;
  int status = 0;        // the HTTP status answered; 0: none yet
  absl::Status refused;  // found while the body arrived
  uint64_t dropped = 0;  // bytes of the body past its limit
  std::shared_ptr<MemoryBudget::Share> share;
  std::shared_ptr<HttpJob> job;  // a POST's, from its head on
};

struct HttpApi::Callbacks {
  static MHD_Result OnRequest(void* api, MHD_Connection* c, const char* url,
                              const char* method, const char* version,
                              const char* upload, size_t* upload_size,
                              void** state);
  static void OnCompleted(void* api, MHD_Connection* c, void** state,
                          MHD_RequestTerminationCode how);
  static void OnConnection(void* api, MHD_Connection* c, void** socket_state,
                           MHD_ConnectionNotificationCode what);
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_HTTP_HTTP_CALLBACKS_H_
