/* alloc_count: counts a process's heap allocations, for bench/alloc_bench.py.
 *
 *   LD_PRELOAD=bazel-bin/bench/liballoc_count.so ALLOC_COUNT_FILE=/tmp/n prog
 *
 * Every malloc, calloc, realloc, memalign, aligned_alloc and posix_memalign
 * (C++'s operator new calls malloc) adds one to a counter that lives in
 * ALLOC_COUNT_FILE, mapped shared, so that another process reads the count
 * whenever it likes, with no signal or thread in the counted process. The
 * allocations themselves are glibc's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t count, size_t size);
extern void* __libc_realloc(void* ptr, size_t size);
extern void* __libc_memalign(size_t alignment, size_t size);

/* Allocations before the file is mapped (the loader's, libc's start-up)
 * count here and are never read. */
static _Atomic unsigned long early;
static _Atomic unsigned long* counter = &early;

__attribute__((constructor)) static void map_counter(void) {
  const char* path = getenv("ALLOC_COUNT_FILE");
  if (path == NULL) return;
  int fd = open(path, O_RDWR | O_CREAT, 0600);
  if (fd < 0) return;
  if (ftruncate(fd, sizeof(unsigned long)) == 0) {
    void* shared = mmap(NULL, sizeof(unsigned long), PROT_READ | PROT_WRITE,
                        MAP_SHARED, fd, 0);
    if (shared != MAP_FAILED) counter = shared;
  }
  close(fd);
}

static void count(void) {
  atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

void* malloc(size_t size) {
  count();
  return __libc_malloc(size);
}

void* calloc(size_t n, size_t size) {
  count();
  return __libc_calloc(n, size);
}

void* realloc(void* ptr, size_t size) {
  count();
  return __libc_realloc(ptr, size);
}

void* memalign(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}

void* aligned_alloc(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}

int posix_memalign(void** out, size_t alignment, size_t size) {
  count();
  void* p = __libc_memalign(alignment, size);
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}
