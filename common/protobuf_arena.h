// Protobuf messages on an arena, except in ThreadSanitizer builds.
//
// Debian's libprotobuf is built without ThreadSanitizer, and its
// google/protobuf/map_field.h gives MapFieldBase two more fields when
// __SANITIZE_THREAD__ is defined: code compiled with -fsanitize=thread lays a
// message's map fields out one way, the library another. On the heap that has
// not mattered (the code that touches a map's fields is inline, compiled on our
// side), but an arena's destruction runs the library's MapFieldBase::Destruct
// on our layout, which reads a wrong arena pointer and crashes (the "heap
// corruption" of an earlier attempt at arenas: a layout mismatch of the build,
// not a race). So the ThreadSanitizer build puts these messages on the heap;
// every other build uses the arena.
#ifndef PTOSERVE_COMMON_PROTOBUF_ARENA_H_
#define PTOSERVE_COMMON_PROTOBUF_ARENA_H_

#include <google/protobuf/arena.h>
#include <google/protobuf/message.h>

#include <memory>

namespace ptoserve {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kProtobufArenas = false;
#else
inline constexpr bool kProtobufArenas = true;
#endif

// A new M on `arena`, or where arenas are not used (kProtobufArenas), on
// the heap and owned by `*owner`, which must outlive its use.
template <typename M>
M* NewMessage(google::protobuf::Arena* arena,
              std::unique_ptr<google::protobuf::Message>* owner) {
  if constexpr (kProtobufArenas) {
    return google::protobuf::Arena::CreateMessage<M>(arena);
  } else {
    auto message = std::make_unique<M>();
    M* made = message.get();
    *owner = std::move(message);
    return made;
  }
}

}  // namespace ptoserve

#endif  // PTOSERVE_COMMON_PROTOBUF_ARENA_H_
