// The SIGBUS guard of shared-memory mappings. A mapping of a shared-memory
// object that its owner cuts short faults (SIGBUS) on the pages past the
// new end. The handler finds the mapping in a fixed table, maps anonymous
// zero pages over the rest of it, counts the fault and returns: the access
// completes, and each job that used the mapping across the fault is
// answered an error once it ends (JobRegions::CheckIntact). A fault anywhere
// else goes to the handler that was there before, or kills the process as it
// would have. The table is lock-free: the handler may run on any thread at any
// moment.
#ifndef PTOSERVE_SERVER_SHM_SIGBUS_GUARD_H_
#define PTOSERVE_SERVER_SHM_SIGBUS_GUARD_H_

#include <cstdint>

namespace ptoserve {

// Mappings guarded at once in one process.
inline constexpr int kGuardSlots = 1024;

// The size of a page, which mappings are aligned to.
uintptr_t PageBytes();

// Guards the mapping [begin, end) (installing the handler the first time)
// and returns its slot, or -1 when all kGuardSlots are taken.
int GuardMapping(uintptr_t begin, uintptr_t end);
// Stops guarding the mapping in `slot`, before it is unmapped.
void UnguardMapping(int slot);
// How many accesses to the mapping in `slot` faulted since it was guarded
// (a count that only grows: a job compares it before and after).
uint64_t MappingFaults(int slot);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_SHM_SIGBUS_GUARD_H_
