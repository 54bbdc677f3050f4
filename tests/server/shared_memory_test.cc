// The shared-memory registry and a job's slices, without gRPC: registering
// real POSIX shared-memory objects, every refusal, bounds without overflow,
// overlaps through two names for one object, unregistering in use, and
// objects cut short before and during use (the SIGBUS guard), then whole
// again.
#include "server/shm/shared_memory.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/shm/job_regions.h"
#include "tests/server/loopback.h"

namespace ptoserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// A shared-memory object made for one test and removed after it.
class Object {
 public:
  explicit Object(uint64_t bytes, const std::string& tag = "")
      : key_(absl::StrCat("/ptoserve-test-", getpid(), "-", tag, counter_++)) {
    const int fd = shm_open(key_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    EXPECT_GE(fd, 0) << key_;
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
    void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    EXPECT_NE(map, MAP_FAILED);
    close(fd);
    data_ = static_cast<uint8_t*>(map);
    bytes_ = bytes;
    for (uint64_t i = 0; i < bytes; ++i) data_[i] = static_cast<uint8_t>(i);
  }
  ~Object() {
    munmap(data_, bytes_);
    shm_unlink(key_.c_str());
  }
  const std::string& key() const { return key_; }
  uint8_t* data() const { return data_; }
  void Truncate(uint64_t bytes) const {
    ASSERT_EQ(truncate(absl::StrCat("/dev/shm", key_).c_str(),
                       static_cast<off_t>(bytes)),
              0);
  }

 private:
  static inline int counter_ = 0;
  std::string key_;
  uint8_t* data_ = nullptr;
  uint64_t bytes_ = 0;
};

v1::RegisterRequest Request(const std::string& name, const std::string& key,
                            uint64_t offset, uint64_t size) {
  v1::RegisterRequest r;
  r.set_name(name);
  r.set_key(key);
  r.set_offset(offset);
  r.set_size(size);
  return r;
}

v1::RegionSlice Slice(const std::string& region, uint64_t offset,
                      uint64_t size) {
  v1::RegionSlice s;
  s.set_region(region);
  s.set_offset(offset);
  s.set_size(size);
  return s;
}

SharedMemoryOptions On() {
  SharedMemoryOptions o;
  o.enabled = true;
  o.key_prefix = "/ptoserve-test";
  o.max_regions = 4;
  return o;
}

TEST(SharedMemoryTest, RegistersMapsListsAndUnregisters) {
  Object object(10000);
  MemoryBudget budget(1 << 20);
  SharedMemoryRegistry registry(On(), &budget);
  absl::StatusOr<v1::Region> region =
      registry.Register(Request("r", object.key(), 5000, 3000), getuid());
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_EQ(region->name(), "r");
  EXPECT_EQ(region->key(), object.key());
  EXPECT_EQ(region->offset(), 5000u);
  EXPECT_EQ(region->size(), 3000u);
  EXPECT_EQ(budget.held(), 3000u);  // mapped bytes count
  EXPECT_EQ(registry.regions(), 1u);
  // Mapped from the page the region starts in: 5000 - 4096 bytes before it.
  EXPECT_EQ(registry.mapped_bytes(), 3000u + 5000 % getpagesize());

  // The region's first byte is the object's byte 5000 (an offset that is
  // not a page multiple): the same memory, both ways.
  JobRegions job(&registry);
  absl::StatusOr<absl::Span<uint8_t>> bytes =
      job.Resolve(Slice("r", 10, 20), "a", false);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_EQ(bytes->size(), 20u);
  EXPECT_EQ((*bytes)[0], static_cast<uint8_t>(5010));
  (*bytes)[1] = 0xee;
  EXPECT_EQ(object.data()[5011], 0xee);

  v1::ListResponse list = registry.List();
  ASSERT_EQ(list.regions_size(), 1);
  EXPECT_EQ(list.regions(0).jobs_in_flight(), 1u);
  EXPECT_EQ(list.regions(0).jobs_total(), 1u);

  absl::StatusOr<v1::Region> gone = registry.Unregister("r", getuid());
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->jobs_in_flight(), 1u);
  EXPECT_EQ(registry.List().regions_size(), 0);
  EXPECT_EQ(registry.Unregister("r", getuid()).status().code(),
            absl::StatusCode::kNotFound);
  // Jobs already holding it keep it mapped, and its bytes held ...
  EXPECT_EQ(budget.held(), 3000u);
  EXPECT_EQ(registry.regions(), 0u);
  EXPECT_EQ(registry.mapped_bytes(), 3000u + 5000 % getpagesize());
  EXPECT_EQ((*bytes)[0], static_cast<uint8_t>(5010));
  // ... new ones do not find it ...
  JobRegions later(&registry);
  absl::StatusOr<absl::Span<uint8_t>> refused =
      later.Resolve(Slice("r", 0, 1), "b", false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("no region \"r\" is registered"));
  // ... and the last one to let go gives the bytes back.
  { JobRegions done = std::move(job); }
  EXPECT_EQ(budget.held(), 0u);
  EXPECT_EQ(registry.mapped_bytes(), 0u);
}

// The names of the regions registered now, in order.
std::vector<std::string> Names(const SharedMemoryRegistry& registry) {
  std::vector<std::string> names;
  const v1::ListResponse list = registry.List();
  for (const v1::Region& r : list.regions()) {
    names.push_back(r.name());
  }
  return names;
}

// A real loopback connection, as the server names the ones it accepted
// itself, and its client's end.
struct Connection {
  LoopbackListener listener;
  int client = -1;
  PeerConnection found;

  Connection() {
    client = ConnectLoopback(listener.port());
    EXPECT_GE(client, 0);
    listener.AcceptPeer();
    found =
        FindConnection(absl::StrCat("fd:", listener.last_accepted())).value();
  }
  ~Connection() { CloseClient(); }
  // Closes the client's end, and waits (at most 10 s) until the server's
  // end has seen it.
  void CloseClient() {
    if (client < 0) return;
    close(client);
    client = -1;
    for (int i = 0; i < 10000 && ConnectionsOpen({found})[0]; ++i) {
      usleep(1000);
    }
    EXPECT_FALSE(ConnectionsOpen({found})[0]);
  }
};

TEST(SharedMemoryTest, ALeasedRegionGoesItsGraceAfterItsConnectionCloses) {
  Object object(4096);
  MemoryBudget budget(1 << 20);
  SharedMemoryOptions options = On();
  options.lease_grace = absl::Seconds(10);
  SharedMemoryRegistry registry(options, &budget);
  Connection connection;
  v1::RegisterRequest kept = Request("kept", object.key(), 0, 100);
  kept.set_outlive_connection(true);
  ASSERT_TRUE(registry
                  .Register(Request("leased", object.key(), 0, 100), getuid(),
                            connection.found)
                  .ok());
  ASSERT_TRUE(registry.Register(kept, getuid(), connection.found).ok());
  // A caller with no connection (inside the process): nothing to lease to.
  ASSERT_TRUE(
      registry.Register(Request("inside", object.key(), 0, 100), getuid())
          .ok());
  EXPECT_EQ(budget.held(), 300u);
  v1::ListResponse list = registry.List();
  ASSERT_EQ(list.regions_size(), 3);
  EXPECT_TRUE(list.regions(0).outlives_connection());   // inside
  EXPECT_TRUE(list.regions(1).outlives_connection());   // kept
  EXPECT_FALSE(list.regions(2).outlives_connection());  // leased
  EXPECT_FALSE(list.regions(2).connection_closed());

  // While the connection is open, the lease holds however long.
  const absl::Time start = absl::Now();
  EXPECT_EQ(registry.SweepLeases(start + absl::Hours(24)), 0u);
  EXPECT_THAT(Names(registry), ElementsAre("inside", "kept", "leased"));

  // A job that holds the region when it goes keeps it mapped.
  JobRegions job(&registry);
  ASSERT_TRUE(job.Resolve(Slice("leased", 0, 10), "a", false).ok());
  connection.CloseClient();
  EXPECT_EQ(registry.SweepLeases(start), 0u);  // seen closed now
  EXPECT_TRUE(registry.List().regions(2).connection_closed());
  EXPECT_EQ(registry.SweepLeases(start + absl::Seconds(9)), 0u);
  EXPECT_EQ(registry.leases_expired(), 0u);
  EXPECT_EQ(registry.SweepLeases(start + absl::Seconds(10)), 1u);
  EXPECT_THAT(Names(registry), ElementsAre("inside", "kept"));
  EXPECT_EQ(registry.leases_expired(), 1u);
  EXPECT_EQ(budget.held(), 300u);
  { JobRegions done = std::move(job); }
  EXPECT_EQ(budget.held(), 200u);
  // Its name is free again, and the rest stay.
  EXPECT_EQ(registry.SweepLeases(start + absl::Hours(24)), 0u);
  EXPECT_TRUE(
      registry.Register(Request("leased", object.key(), 0, 1), getuid()).ok());
  EXPECT_THAT(Names(registry), ElementsAre("inside", "kept", "leased"));
}

TEST(SharedMemoryTest, ANameRegisteredAgainStartsItsOwnLease) {
  Object object(4096);
  MemoryBudget budget(1 << 20);
  SharedMemoryRegistry registry(On(), &budget);
  Connection connection;
  ASSERT_TRUE(registry
                  .Register(Request("r", object.key(), 0, 100), getuid(),
                            connection.found)
                  .ok());
  connection.CloseClient();
  const absl::Time start = absl::Now();
  EXPECT_EQ(registry.SweepLeases(start), 0u);
  ASSERT_TRUE(registry.Unregister("r", getuid()).ok());
  // The name taken again by a region of an open connection.
  Connection second;
  ASSERT_TRUE(
      registry
          .Register(Request("r", object.key(), 0, 100), getuid(), second.found)
          .ok());
  EXPECT_EQ(registry.SweepLeases(start + absl::Hours(1)), 0u);
  EXPECT_THAT(Names(registry), ElementsAre("r"));
  EXPECT_EQ(registry.leases_expired(), 0u);
}

TEST(SharedMemoryTest, TheRegistrysThreadSweepsByItself) {
  Object object(4096);
  MemoryBudget budget(1 << 20);
  SharedMemoryOptions options = On();
  options.lease_grace = absl::ZeroDuration();
  options.lease_sweep = absl::Milliseconds(5);
  SharedMemoryRegistry registry(options, &budget);
  Connection connection;
  ASSERT_TRUE(registry
                  .Register(Request("r", object.key(), 0, 100), getuid(),
                            connection.found)
                  .ok());
  connection.CloseClient();
  // The sweep forgets the name under the registry's lock and unmaps after
  // it (its last hold): both are waited for.
  for (int i = 0; i < 10000 && (registry.regions() != 0 || budget.held() != 0);
       ++i) {
    usleep(1000);
  }
  EXPECT_EQ(registry.regions(), 0u);
  EXPECT_EQ(registry.leases_expired(), 1u);
  EXPECT_EQ(budget.held(), 0u);
}

TEST(SharedMemoryTest, RefusesWhatCannotBeARegion) {
  Object object(4096);
  MemoryBudget budget(1 << 20);
  SharedMemoryRegistry registry(On(), &budget);
  struct Case {
    v1::RegisterRequest request;
    absl::StatusCode code;
    std::string says;
  };
  const std::string long_name(300, 'n');
  const Case cases[] = {
      {Request("", object.key(), 0, 1), absl::StatusCode::kInvalidArgument,
       "name is not set"},
      {Request(long_name, object.key(), 0, 1),
       absl::StatusCode::kInvalidArgument, "longer than names may be"},
      {Request("r", "", 0, 1), absl::StatusCode::kInvalidArgument,
       "key is not set"},
      {Request("r", "ptoserve-test-x", 0, 1),
       absl::StatusCode::kInvalidArgument, "is not a shared-memory object"},
      {Request("r", "/ptoserve-test/../x", 0, 1),
       absl::StatusCode::kInvalidArgument, "is not a shared-memory object"},
      {Request("r", std::string("/ptoserve-test\0x", 16), 0, 1),
       absl::StatusCode::kInvalidArgument, "is not a shared-memory object"},
      {Request("r", "/" + std::string(300, 'k'), 0, 1),
       absl::StatusCode::kInvalidArgument, "longer than an object name"},
      {Request("r", "/other", 0, 1), absl::StatusCode::kPermissionDenied,
       "does not start with \"/ptoserve-test\""},
      {Request("r", object.key(), 0, 0), absl::StatusCode::kInvalidArgument,
       "size is 0"},
      {Request("r", object.key(), kMax, 1), absl::StatusCode::kInvalidArgument,
       "past any object's end"},
      {Request("r", object.key(), 1, kMax), absl::StatusCode::kInvalidArgument,
       "past any object's end"},
      {Request("r", object.key(), 4000, 97), absl::StatusCode::kOutOfRange,
       "reaches past the end of shared-memory object"},
      {Request("r", "/ptoserve-test-none", 0, 1), absl::StatusCode::kNotFound,
       "No such file"},
      {Request("r", object.key(), 0, 2 << 20),
       absl::StatusCode::kResourceExhausted, "memory budget"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<v1::Region> got = registry.Register(c.request, getuid());
    EXPECT_EQ(got.status().code(), c.code) << c.request.ShortDebugString();
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.says))
        << c.request.ShortDebugString();
  }
  EXPECT_EQ(budget.held(), 0u);
  EXPECT_EQ(registry.List().regions_size(), 0);

  // The same name twice; more than max_regions.
  ASSERT_TRUE(
      registry.Register(Request("r", object.key(), 0, 10), getuid()).ok());
  EXPECT_EQ(registry.Register(Request("r", object.key(), 0, 10), getuid())
                .status()
                .code(),
            absl::StatusCode::kAlreadyExists);
  for (const char* name : {"s", "t", "u"}) {
    ASSERT_TRUE(
        registry.Register(Request(name, object.key(), 0, 10), getuid()).ok());
  }
  absl::StatusOr<v1::Region> fifth =
      registry.Register(Request("v", object.key(), 0, 10), getuid());
  EXPECT_EQ(fifth.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(fifth.status().message()),
              HasSubstr("(shared_memory.max_regions)"));
  EXPECT_EQ(budget.held(), 40u);
}

TEST(SharedMemoryTest, NeverFollowsALinkNorOpensADirectory) {
  Object target(4096);
  const std::string link = absl::StrCat("/ptoserve-test-link-", getpid());
  const std::string dir = absl::StrCat("/ptoserve-test-dir-", getpid());
  ASSERT_EQ(symlink(absl::StrCat("/dev/shm", target.key()).c_str(),
                    absl::StrCat("/dev/shm", link).c_str()),
            0);
  ASSERT_EQ(mkdir(absl::StrCat("/dev/shm", dir).c_str(), 0700), 0);
  MemoryBudget budget(1 << 20);
  SharedMemoryRegistry registry(On(), &budget);
  absl::StatusOr<v1::Region> linked =
      registry.Register(Request("l", link, 0, 1), getuid());
  EXPECT_EQ(linked.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(linked.status().message()),
              HasSubstr("symbolic link"));
  absl::StatusOr<v1::Region> directory =
      registry.Register(Request("d", dir, 0, 1), getuid());
  EXPECT_FALSE(directory.ok());
  unlink(absl::StrCat("/dev/shm", link).c_str());
  rmdir(absl::StrCat("/dev/shm", dir).c_str());
}

// The server maps only what the caller could open for reading and writing
// itself: its own object with rw for its owner, or one every user may read
// and write; root may map anything. Group permission does not count.
TEST(SharedMemoryTest, MapsOnlyWhatTheCallerCouldOpen) {
  // The rule alone, for users that are not root.
  const uid_t owner = 1000, other = 65534;
  struct stat st {};
  st.st_mode = S_IFREG | 0600;
  st.st_uid = owner;
  EXPECT_TRUE(CallerMayMap(owner, st.st_uid, st.st_mode, "/ptoserve-x").ok());
  EXPECT_TRUE(CallerMayMap(0, st.st_uid, st.st_mode, "/ptoserve-x").ok());
  absl::Status denied =
      CallerMayMap(other, st.st_uid, st.st_mode, "/ptoserve-x");
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(denied.message()),
              HasSubstr(absl::StrCat("belongs to user ", owner,
                                     " with mode 0600: the caller (user ",
                                     other, ")")));
  for (mode_t mode : {0400, 0200, 0000, 0660, 0604, 0602}) {
    st.st_mode = S_IFREG | mode;
    EXPECT_EQ(CallerMayMap(other, st.st_uid, st.st_mode, "/ptoserve-x").code(),
              absl::StatusCode::kPermissionDenied)
        << std::oct << mode;
  }
  st.st_mode = S_IFREG | 0400;  // the owner may not write it either
  EXPECT_EQ(CallerMayMap(owner, st.st_uid, st.st_mode, "/ptoserve-x").code(),
            absl::StatusCode::kPermissionDenied);
  st.st_mode = S_IFREG | 0666;
  EXPECT_TRUE(CallerMayMap(other, st.st_uid, st.st_mode, "/ptoserve-x").ok());

  // Through Register, on a real object (0600, this process's user's).
  const uid_t self = geteuid();
  const uid_t stranger = self == 65534 ? 65533 : 65534;
  Object object(4096);
  MemoryBudget budget(1 << 20);
  SharedMemoryRegistry registry(On(), &budget);
  absl::StatusOr<v1::Region> stolen =
      registry.Register(Request("r", object.key(), 0, 64), stranger);
  EXPECT_EQ(stolen.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(budget.held(), 0u);
  EXPECT_EQ(registry.mapped_bytes(), 0u);
  EXPECT_TRUE(registry.Register(Request("r", object.key(), 0, 64), self).ok());
  ASSERT_EQ(chmod(absl::StrCat("/dev/shm", object.key()).c_str(), 0666), 0);
  EXPECT_TRUE(
      registry.Register(Request("s", object.key(), 0, 64), stranger).ok());
}

// A registered region is used, and unregistered, only for callers who
// could open its object themselves: another user's job naming it is
// refused, and its caller asked once a job, however many slices it names.
TEST(SharedMemoryTest, ARegionServesOnlyCallersWhoCouldOpenIt) {
  const uid_t self = geteuid();
  const uid_t stranger = self == 65534 ? 65533 : 65534;
  Object object(4096);  // 0600, this process's user's
  MemoryBudget budget(1 << 20);
  SharedMemoryRegistry registry(On(), &budget);
  ASSERT_TRUE(
      registry.Register(Request("r", object.key(), 0, 4096), self).ok());

  int asked = 0;
  JobRegions theirs(&registry, [&]() -> absl::StatusOr<uid_t> {
    ++asked;
    return stranger;
  });
  absl::StatusOr<absl::Span<uint8_t>> refused =
      theirs.Resolve(Slice("r", 0, 64), "a", false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr(absl::StrCat("the caller (user ", stranger, ")")));
  EXPECT_EQ(theirs.Resolve(Slice("r", 64, 64), "c", true).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(asked, 1);

  JobRegions mine(&registry, [&]() -> absl::StatusOr<uid_t> {
    ++asked;
    return self;
  });
  EXPECT_TRUE(mine.Resolve(Slice("r", 0, 64), "a", false).ok());
  EXPECT_TRUE(mine.Resolve(Slice("r", 64, 64), "c", true).ok());
  EXPECT_EQ(asked, 2);

  // A caller whose user cannot be told is refused with that reason.
  JobRegions unknown(&registry, []() -> absl::StatusOr<uid_t> {
    return absl::PermissionDeniedError("cannot tell which user");
  });
  EXPECT_THAT(
      std::string(
          unknown.Resolve(Slice("r", 0, 64), "a", false).status().message()),
      HasSubstr("cannot tell which user"));

  absl::StatusOr<v1::Region> taken = registry.Unregister("r", stranger);
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(registry.regions(), 1u);
  EXPECT_TRUE(registry.Unregister("r", self).ok());
}

TEST(SharedMemoryTest, OffRefusesEverything) {
  Object object(4096);
  MemoryBudget budget(1 << 20);
  SharedMemoryOptions off = On();
  off.enabled = false;
  SharedMemoryRegistry registry(off, &budget);
  EXPECT_EQ(registry.Register(Request("r", object.key(), 0, 1), getuid())
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(registry.Unregister("r", getuid()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(registry.Use("r").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(SharedMemoryTest, SlicesStayInTheirRegionWhateverTheNumbers) {
  Object object(8192);
  MemoryBudget budget(1 << 20);
  SharedMemoryRegistry registry(On(), &budget);
  ASSERT_TRUE(
      registry.Register(Request("r", object.key(), 100, 1000), getuid()).ok());
  JobRegions job(&registry);
  struct Case {
    uint64_t offset, size;
    absl::StatusCode code;
  };
  const Case cases[] = {
      {0, 1000, absl::StatusCode::kOk},
      {999, 1, absl::StatusCode::kOk},
      {0, 1001, absl::StatusCode::kOutOfRange},
      {1, 1000, absl::StatusCode::kOutOfRange},
      {1000, 1, absl::StatusCode::kOutOfRange},
      {1001, 0, absl::StatusCode::kInvalidArgument},
      {0, 0, absl::StatusCode::kInvalidArgument},
      {kMax, 1, absl::StatusCode::kOutOfRange},
      {1, kMax, absl::StatusCode::kOutOfRange},
      {kMax - 999, 1000, absl::StatusCode::kOutOfRange},  // wraps to 0
      {uint64_t{1} << 63, uint64_t{1} << 63, absl::StatusCode::kOutOfRange},
  };
  for (const Case& c : cases) {
    absl::StatusOr<absl::Span<uint8_t>> got =
        job.Resolve(Slice("r", c.offset, c.size), "a", false);
    EXPECT_EQ(got.status().code(), c.code) << c.offset << " " << c.size;
    if (!got.ok()) {
      EXPECT_THAT(std::string(got.status().message()),
                  HasSubstr("region \"r\""));
    }
  }
  EXPECT_EQ(job.Resolve(Slice("", 0, 1), "a", false).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SharedMemoryTest, WrittenSlicesOverlapNothingElseEvenUnderTwoNames) {
  Object object(8192);
  MemoryBudget budget(1 << 20);
  SharedMemoryRegistry registry(On(), &budget);
  // "r" and "s" are the same object, "s" starting 1000 bytes in.
  ASSERT_TRUE(
      registry.Register(Request("r", object.key(), 0, 8192), getuid()).ok());
  ASSERT_TRUE(
      registry.Register(Request("s", object.key(), 1000, 4000), getuid()).ok());
  Object other(8192);
  ASSERT_TRUE(
      registry.Register(Request("o", other.key(), 0, 8192), getuid()).ok());

  struct Use {
    const char* region;
    uint64_t offset, size;
    const char* tile;
    bool write;
  };
  auto check = [&](std::vector<Use> uses) {
    JobRegions job(&registry);
    for (const Use& u : uses) {
      EXPECT_TRUE(
          job.Resolve(Slice(u.region, u.offset, u.size), u.tile, u.write).ok());
    }
    return job.CheckOverlaps();
  };
  // Disjoint, and reads may share bytes with each other.
  EXPECT_TRUE(check({{"r", 0, 100, "a", false},
                     {"r", 0, 100, "b", false},
                     {"r", 100, 100, "c", true},
                     {"r", 200, 100, "d", true}})
                  .ok());
  // A tile's own input, written back in place.
  EXPECT_TRUE(
      check({{"r", 0, 100, "c", false}, {"r", 0, 100, "c", true}}).ok());
  // The same bytes read as another tile's input.
  absl::Status shared = check({{"r", 0, 100, "a", false},
                               {"r", 0, 100, "c", false},
                               {"r", 0, 100, "c", true}});
  EXPECT_EQ(shared.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(shared.message()),
              HasSubstr("tile \"a\" and output_regions[\"c\"] share bytes"));
  // Its own input, but not exactly its bytes.
  EXPECT_FALSE(
      check({{"r", 0, 100, "c", false}, {"r", 50, 100, "c", true}}).ok());
  // Two outputs that touch by one byte.
  EXPECT_FALSE(
      check({{"r", 0, 101, "c", true}, {"r", 100, 100, "d", true}}).ok());
  // Through the second name: s's byte 0 is r's byte 1000.
  absl::Status aliased =
      check({{"r", 1050, 10, "a", false}, {"s", 0, 100, "c", true}});
  EXPECT_EQ(aliased.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(aliased.message()), HasSubstr("share bytes"));
  EXPECT_TRUE(
      check({{"r", 1100, 10, "a", false}, {"s", 0, 100, "c", true}}).ok());
  // Another object's bytes at the same offsets do not overlap.
  EXPECT_TRUE(
      check({{"o", 0, 100, "a", false}, {"r", 0, 100, "c", true}}).ok());
}

// The object's size is not read per job: an object cut short is found by
// the first access past its new end (the guard counts the fault), refused
// while it stays short, and mapped again once it is whole.
TEST(SharedMemoryTest, AnObjectCutShortIsFoundByItsFaultAndServesOnceWhole) {
  constexpr uint64_t kPage = 4096;
  Object object(4 * kPage);
  MemoryBudget budget(1 << 20);
  SharedMemoryRegistry registry(On(), &budget);
  // Object bytes [4096, 12288): the region's pages are the object's 1 and 2.
  ASSERT_TRUE(
      registry.Register(Request("r", object.key(), kPage, 2 * kPage), getuid())
          .ok());
  JobRegions before(&registry);  // entered while the object was whole
  ASSERT_TRUE(before.Resolve(Slice("r", 0, 16), "a", false).ok());

  object.Truncate(6000);  // page 1 keeps 1,904 bytes; page 2 is gone
  JobRegions faulting(&registry);
  absl::StatusOr<absl::Span<uint8_t>> bytes =
      faulting.Resolve(Slice("r", 0, 2 * kPage), "a", false);
  ASSERT_TRUE(bytes.ok()) << bytes.status();  // no size read: no fault yet
  volatile uint8_t* p = bytes->data();
  EXPECT_EQ(p[10], static_cast<uint8_t>(kPage + 10));  // still the object's
  EXPECT_TRUE(faulting.CheckIntact().ok());
  EXPECT_EQ(p[kPage + 10], 0);  // past the end: the guard's zero page
  absl::Status faulted = faulting.CheckIntact();
  EXPECT_EQ(faulted.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(faulted.message()),
              HasSubstr("is now 6000 bytes, too short for the region (offset "
                        "4096, 8192 bytes), and an access to it faulted while "
                        "a job used it"));
  EXPECT_EQ(before.CheckIntact().code(), absl::StatusCode::kFailedPrecondition);

  // Refused before use while the object is short, each time.
  for (int i = 0; i < 2; ++i) {
    JobRegions refused(&registry);
    absl::Status status =
        refused.Resolve(Slice("r", 0, 16), "a", false).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("region \"r\": shared-memory object"));
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("is now 6000 bytes, too short"));
    EXPECT_THAT(std::string(status.message()),
                Not(HasSubstr("faulted while a job used it")));
  }

  // Whole again: the next job maps the object again and sees its bytes,
  // not the zero pages, and what it writes reaches the object.
  object.Truncate(4 * kPage);
  object.data()[2 * kPage + 5] = 0xa5;
  JobRegions again(&registry);
  absl::StatusOr<absl::Span<uint8_t>> whole =
      again.Resolve(Slice("r", 0, 2 * kPage), "a", true);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ((*whole)[kPage + 5], 0xa5);
  EXPECT_EQ((*whole)[10], static_cast<uint8_t>(kPage + 10));
  (*whole)[2 * kPage - 1] = 0x3c;
  EXPECT_EQ(object.data()[3 * kPage - 1], 0x3c);
  EXPECT_TRUE(again.CheckIntact().ok());
  // A job that used the region across the fault stays failed.
  EXPECT_EQ(before.CheckIntact().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(before.CheckIntact().message()),
              HasSubstr("faulted while a job used it (it was cut short, or "
                        "/dev/shm had no room for its pages)"));
  EXPECT_EQ(faulting.CheckIntact().code(),
            absl::StatusCode::kFailedPrecondition);
}

// Jobs on one region while its object is cut short and made whole again,
// over and over: every job ends OK or FAILED_PRECONDITION, nothing faults
// unhandled, and once the object stays whole a job reads its bytes.
TEST(SharedMemoryTest, JobsAcrossRepeatedCutsEndOkOrFailedAndTheRegionHeals) {
  constexpr int kThreads = 3, kJobs = 300;
  constexpr uint64_t kPer = 5 * 4096, kBytes = kThreads * kPer;
  Object object(kBytes);
  MemoryBudget budget(1 << 20);
  SharedMemoryRegistry registry(On(), &budget);
  ASSERT_TRUE(
      registry.Register(Request("r", object.key(), 0, kBytes), getuid()).ok());
  std::atomic<int> ok{0}, failed{0}, other{0}, running{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    // Each thread's jobs write their own pages.
    threads.emplace_back([&, t] {
      for (int j = 0; j < kJobs; ++j) {
        JobRegions job(&registry);
        absl::StatusOr<absl::Span<uint8_t>> bytes =
            job.Resolve(Slice("r", t * kPer, kPer), "a", true);
        absl::Status status = bytes.status();
        if (bytes.ok()) {
          volatile uint8_t* p = bytes->data();
          for (uint64_t i = 0; i < kPer; i += 4096) p[i] = p[i] + 1;
          status = job.CheckIntact();
        }
        if (status.ok()) {
          ++ok;
        } else if (status.code() == absl::StatusCode::kFailedPrecondition) {
          ++failed;
        } else {
          ++other;
        }
      }
      --running;
    });
  }
  // Cut and restored while the jobs run (they end by themselves).
  for (int i = 0; running.load() > 0; ++i) {
    object.Truncate(4096 * (i % 15));
    object.Truncate(kBytes);
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok + failed, kThreads * kJobs);
  EXPECT_EQ(other, 0);
  object.data()[kBytes - 1] = 0x5a;
  JobRegions last(&registry);
  absl::StatusOr<absl::Span<uint8_t>> bytes =
      last.Resolve(Slice("r", 0, kBytes), "a", false);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ((*bytes)[kBytes - 1], 0x5a);
  EXPECT_TRUE(last.CheckIntact().ok());
}

// Makes every later mmap of a file over an existing mapping (MAP_FIXED
// without MAP_ANONYMOUS) on the calling thread fail with ENOMEM, as the
// kernel would when out of memory; anonymous and unfixed mappings (the
// allocators', the sanitizers') go through. A seccomp filter is the
// thread's own and stays until it ends. False where the kernel has no
// seccomp filters, or on another architecture.
bool RefuseFileMappingsOverMappingsOnThisThread() {
#if defined(__x86_64__)
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 6),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 4),
      // The flags' low 32 bits (little-endian).
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
               offsetof(struct seccomp_data, args[3])),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_FIXED, 0, 2),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_ANONYMOUS, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOMEM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {
      static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
#else
  return false;
#endif
}

// The object is whole again but mapping it over the region fails: the job
// is refused with RESOURCE_EXHAUSTED naming the mapping, the region's
// pages are zero pages again (no hole: the failed job's own slice still
// reads), and the next job maps it again and reads the object's bytes.
TEST(SharedMemoryTest, AMappingRefusedAfterAFaultIsTriedAgainByTheNextJob) {
  constexpr uint64_t kPage = 4096;
  Object object(4 * kPage);
  MemoryBudget budget(1 << 20);
  SharedMemoryRegistry registry(On(), &budget);
  ASSERT_TRUE(
      registry.Register(Request("r", object.key(), 0, 4 * kPage), getuid())
          .ok());
  object.Truncate(kPage);
  JobRegions faulting(&registry);
  absl::StatusOr<absl::Span<uint8_t>> bytes =
      faulting.Resolve(Slice("r", 0, 4 * kPage), "a", false);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  volatile uint8_t* p = bytes->data();
  EXPECT_EQ(p[2 * kPage], 0);  // the fault: zero pages from here
  EXPECT_EQ(faulting.CheckIntact().code(),
            absl::StatusCode::kFailedPrecondition);
  object.Truncate(4 * kPage);
  object.data()[3 * kPage] = 0x77;

  bool filtered = false;
  absl::Status refused;
  std::thread([&] {
    filtered = RefuseFileMappingsOverMappingsOnThisThread();
    if (!filtered) return;
    JobRegions job(&registry);
    refused = job.Resolve(Slice("r", 0, 16), "a", false).status();
  }).join();
  if (!filtered) GTEST_SKIP() << "no seccomp filter on this kernel";
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("region \"r\": mapping shared-memory object"));
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("again after a fault: Cannot allocate memory"));
  // Zero pages over the whole region, as the guard leaves them.
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[3 * kPage], 0);

  JobRegions next(&registry);
  absl::StatusOr<absl::Span<uint8_t>> whole =
      next.Resolve(Slice("r", 0, 4 * kPage), "a", false);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ((*whole)[3 * kPage], 0x77);
  EXPECT_EQ((*whole)[5], 5);
  EXPECT_TRUE(next.CheckIntact().ok());
}

TEST(SharedMemoryTest, AnObjectCutShortDuringUseFaultsIntoAnError) {
  constexpr uint64_t kBytes = 1 << 20;
  Object object(kBytes);
  MemoryBudget budget(4 << 20);
  SharedMemoryRegistry registry(On(), &budget);
  ASSERT_TRUE(
      registry.Register(Request("r", object.key(), 0, kBytes), getuid()).ok());
  JobRegions job(&registry);
  absl::StatusOr<absl::Span<uint8_t>> bytes =
      job.Resolve(Slice("r", 0, kBytes), "a", false);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(job.CheckIntact().ok());
  // Cut short after the check, as a hostile client would mid-job: reading
  // and writing past the new end would raise SIGBUS.
  object.Truncate(8192);
  volatile uint8_t* p = bytes->data();
  uint64_t sum = 0;
  for (uint64_t i = 0; i < kBytes; i += 4096) sum += p[i];
  p[kBytes - 1] = 7;
  EXPECT_EQ(p[kBytes - 1], 7);
  EXPECT_EQ(p[0], 0);  // still the object's byte 0
  (void)sum;
  absl::Status intact = job.CheckIntact();
  EXPECT_EQ(intact.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(intact.message()),
              HasSubstr("is now 8192 bytes, too short"));
  EXPECT_THAT(std::string(intact.message()),
              HasSubstr("faulted while a job used it"));
  // A fault outside every region is not the guard's to swallow.
  EXPECT_DEATH(
      {
        const std::string key = absl::StrCat("/ptoserve-test-bus-", getpid());
        const int fd = shm_open(key.c_str(), O_RDWR | O_CREAT, 0600);
        (void)ftruncate(fd, 4096);
        auto* q = static_cast<volatile uint8_t*>(
            mmap(nullptr, 8192, PROT_READ, MAP_SHARED, fd, 0));
        shm_unlink(key.c_str());
        (void)q[4096];  // past the object's end: SIGBUS
      },
      "");
}

}  // namespace
}  // namespace ptoserve
