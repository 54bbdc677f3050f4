// Every flag of ptoctl, in one file so that --help lists them all
// (common/cli_help.h). client/options.h reads the connection flags by name.
#include "client/ptoctl/flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/time/time.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051",
          "ptoserve address: HOST:PORT, a comma-separated list of IP:PORT "
          "(round robin, retried on UNAVAILABLE), or a gRPC name such as "
          "dns:///ptoserve:50051. Also given as the first argument, as "
          "grpcurl takes it: ptoctl 127.0.0.1:50051 list.");
ABSL_FLAG(bool, plaintext, false,
          "As grpcurl's -plaintext: no TLS, which is ptoctl's default, so "
          "that a command line written for grpcurl works; with a --tls flag "
          "it is a usage error.");
ABSL_FLAG(bool, tls, false,
          "Connect with TLS (implied by --tls_ca, --tls_cert, --tls_key and "
          "--tls_server_name).");
ABSL_FLAG(std::string, tls_ca, "",
          "CA certificate (PEM file) to verify the server with (default: the "
          "system's roots).");
ABSL_FLAG(std::string, tls_cert, "",
          "Client certificate (PEM file), for mutual TLS; needs --tls_key.");
ABSL_FLAG(std::string, tls_key, "",
          "The client certificate's private key (PEM file); needs --tls_cert.");
ABSL_FLAG(std::string, tls_server_name, "",
          "The name the server's certificate must carry, if not the host's.");
ABSL_FLAG(std::string, token, "",
          "Bearer token sent as \"authorization: Bearer <token>\". Visible to "
          "other users in ps: prefer --token_file or $PTOSERVE_TOKEN.");
ABSL_FLAG(std::string, token_file, "",
          "File holding the bearer token: its first line that is neither "
          "blank nor a # comment (a server's --auth_token_file works).");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(30),
          "How long to wait for a connection (a refused or failed one ends "
          "the wait at once, with gRPC's reason), and for each call.");
ABSL_FLAG(bool, json, false,
          "Print responses, and errors, as proto3 JSON on stdout; stream "
          "prints one result per line.");
ABSL_FLAG(std::string, format, "dec",
          "How tiles print: dec (numbers) or hex (each element's bits, "
          "0x00ff for int16 255).");
ABSL_FLAG(
    std::string, out, "",
    "tand/txor/tor/tnot: also write dst's raw little-endian bytes (the whole "
    "tile) to this file. run: a directory to write every result tile "
    "into, as NAME.bin. Tiles are then not printed.");
ABSL_FLAG(
    std::string, dtype, "int32",
    "tand/txor/tor/tnot: element type: int8, uint8, int16, uint16, int32, "
    "uint32.");
ABSL_FLAG(std::string, shape, "",
          "tand/txor/tor/tnot: physical shape ROWSxCOLS, e.g. 16x16.");
ABSL_FLAG(std::string, valid, "",
          "tand/txor/tor/tnot: valid region ROWSxCOLS (default: the shape).");
ABSL_FLAG(
    std::string, src0, "",
    "tand/txor/tor/tnot: src0 elements: one value for every element (sent as "
    "fill, a few bytes whatever the shape), comma-separated values one "
    "per element (row-major), or @FILE of raw little-endian bytes. A "
    "value is decimal (-1, 255) or hex, read as the element's bits "
    "(0xffff is int16 -1).");
ABSL_FLAG(std::string, src1, "", "tand/txor/tor: src1 elements, as --src0.");
ABSL_FLAG(std::string, tmp, "",
          "txor: tmp elements, as --src0 (default: the server allocates tmp).");
ABSL_FLAG(bool, shm, false,
          "tand/txor/tor/tnot: pass the tiles through a shared-memory region "
          "that ptoctl creates, registers and removes, instead of in the "
          "request (the server must run on this host with shared memory on).");
ABSL_FLAG(std::string, target, "",
          "host, a2a3 or a5: the target of tand/txor/tor/tnot, and of every "
          "job that "
          "run and stream send without one (default: the server's).");
ABSL_FLAG(std::string, trace, "",
          "run: also write the job's event records to this file as a Chrome "
          "trace (JSON trace events; open it in ui.perfetto.dev or "
          "chrome://tracing). The result still prints.");
ABSL_FLAG(std::string, service, "",
          "health: the service to ask about (default: the server).");
ABSL_FLAG(std::string, d, "",
          "call: the request in proto3 JSON, @FILE, or - for standard input "
          "(as grpcurl's -d; default {}).");
