// What the server process sets up for itself before it serves.
#ifndef PTOSERVE_SERVER_PROCESS_SETUP_H_
#define PTOSERVE_SERVER_PROCESS_SETUP_H_

#include <string>

namespace ptoserve {

// Raises the soft limit on open files to the hard one (every connection is
// a file) and says what it is now, for the start-up log.
std::string RaiseOpenFileLimit();

// Keeps the memory of large requests and results in the heap between jobs
// (glibc's mmap and trim thresholds; process_setup.cc has the figures).
void KeepLargeBlocksInHeap();

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_PROCESS_SETUP_H_
