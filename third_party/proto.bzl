"""C++ code generation from .proto files with the system protoc.

Debian's protoc and grpc_cpp_plugin generate the messages and stubs at
build time; nothing generated is committed.
"""

def cc_grpc_library(name, protos, import_dir, src_prefix = "", deps = [], **kwargs):
    """Two cc_libraries: the messages of `protos`, and their gRPC stubs.

    `name + "_messages"` holds the messages alone (protobuf, no gRPC), for
    code that must not depend on gRPC; `name` adds the stubs on top.

    Args:
      name: the stubs' cc_library's name.
      protos: .proto paths relative to `import_dir`, as they import each other.
      import_dir: the execroot path that `protos` are relative to.
      src_prefix: prepended to each entry of `protos` to form its label.
      deps: cc_grpc_library targets whose protos these import.
      **kwargs: passed on to both cc_libraries (visibility, ...).
    """
    stems = [p[:-len(".proto")] for p in protos]
    hdrs = [s + ext for s in stems for ext in (".pb.h", ".grpc.pb.h")]
    srcs = [s + ext for s in stems for ext in (".pb.cc", ".grpc.pb.cc")]
    out_dir = "$(GENDIR)/" + native.package_name()
    native.genrule(
        name = name + "_codegen",
        srcs = [src_prefix + p for p in protos],
        outs = hdrs + srcs,
        cmd = " ".join([
            "protoc",
            "--proto_path=" + import_dir,
            "--cpp_out=" + out_dir,
            "--grpc_out=" + out_dir,
            "--plugin=protoc-gen-grpc=$$(command -v grpc_cpp_plugin)",
        ] + [import_dir + "/" + p for p in protos]),
    )
    native.cc_library(
        name = name + "_messages",
        srcs = [s + ".pb.cc" for s in stems],
        hdrs = [s + ".pb.h" for s in stems],
        includes = ["."],
        deps = [d + "_messages" for d in deps] + ["@system//:protobuf"],
        **kwargs
    )
    native.cc_library(
        name = name,
        srcs = [s + ".grpc.pb.cc" for s in stems],
        hdrs = [s + ".grpc.pb.h" for s in stems],
        includes = ["."],
        deps = deps + [":" + name + "_messages", "@system//:grpc"],
        **kwargs
    )
