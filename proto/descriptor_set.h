// The serialized FileDescriptorSet of ptoserve's protos, comments included.
#ifndef PTOSERVE_PROTO_DESCRIPTOR_SET_H_
#define PTOSERVE_PROTO_DESCRIPTOR_SET_H_

#include "absl/strings/string_view.h"

namespace ptoserve {

// A google.protobuf.FileDescriptorSet with source info, built from
// proto/ptoserve/v1/*.proto and their imports.
absl::string_view DescriptorSetWithComments();

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_DESCRIPTOR_SET_H_
