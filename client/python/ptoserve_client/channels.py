"""The gRPC channel both clients open: its target (one server, a list of
them, or any gRPC target), message limits, credentials and service config
(round robin, retries of the calls that have no side effects)."""

import json
from typing import Any

import grpc

# The server's default --max_message_mb.
_MAX_MESSAGE_BYTES = 64 << 20

# As the C++ SDK's (client/client.cc): round robin over every address the
# target resolves to; Execute and GetCapabilities, which have no side
# effects, are retried on another server when one is gone or going away
# (UNAVAILABLE: unreachable or refusing calls in its lame duck; CANCELLED:
# what gRPC answers calls that reach a server as it closes). A call whose
# deadline passes is never retried.
_SERVICE_CONFIG = json.dumps({
    "loadBalancingConfig": [{"round_robin": {}}],
    "methodConfig": [{
        "name": [{"service": "ptoserve.v1.TileCompute", "method": "Execute"},
                 {"service": "ptoserve.v1.TileCompute",
                  "method": "GetCapabilities"}],
        "retryPolicy": {
            "maxAttempts": 5,
            "initialBackoff": "0.05s",
            "maxBackoff": "1s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE", "CANCELLED"],
        },
    }],
})


def channel_target(address: str) -> str:
    """The gRPC target for `address`: HOST:PORT, a comma-separated list of
    them ("10.0.0.5:50051,10.0.0.6:50051", IPv6 in brackets), or any gRPC
    target with a scheme ("dns:///ptoserve.default.svc:50051")."""
    if "," not in address or ":/" in address or address.startswith(
            ("ipv4:", "ipv6:")):
        return address
    return ("ipv6:" if address.startswith("[") else "ipv4:") + address


def open_channel(grpc_module: Any, address: str, *, tls: bool = False,
                 root_certificates: bytes | None = None,
                 certificate_chain: bytes | None = None,
                 private_key: bytes | None = None) -> Any:
    """A channel to `address` from `grpc_module` (grpc, or grpc.aio for
    asyncio) with the client's message limits and service config."""
    options = [
        ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
        ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
        ("grpc.service_config", _SERVICE_CONFIG),
        ("grpc.enable_retries", 1),
    ]
    if (certificate_chain is None) != (private_key is None):
        raise ValueError("certificate_chain and private_key go together")
    if tls or root_certificates or certificate_chain:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=root_certificates, private_key=private_key,
            certificate_chain=certificate_chain)
        return grpc_module.secure_channel(channel_target(address),
                                          credentials, options=options)
    return grpc_module.insecure_channel(channel_target(address),
                                        options=options)
