"""PtoserveError: how every failed call reaches the caller, whether gRPC
failed it or the server answered a stream's job with an error status."""

import re

import grpc

# gRPC status codes by number, for JobStatus.code.
_STATUS_CODES = {code.value[0]: code for code in grpc.StatusCode}


class _StatusCode:
    """A grpc.StatusCode that is also callable: `error.code` (this client's
    attribute) and `error.code()` (grpc.RpcError's method) both give it."""

    __slots__ = ("_code",)

    def __init__(self, code: grpc.StatusCode):
        self._code = code

    def __call__(self) -> grpc.StatusCode:
        return self._code

    def __eq__(self, other) -> bool:
        if isinstance(other, _StatusCode):
            other = other._code
        return self._code == other

    def __hash__(self) -> int:
        return hash(self._code)

    def __getattr__(self, name):  # .name, .value
        return getattr(self._code, name)

    def __repr__(self) -> str:
        return repr(self._code)

    def __str__(self) -> str:
        return str(self._code)


class _Details(str):
    """The server's message, a str that is also callable (as
    grpc.RpcError's details())."""

    def __call__(self) -> str:
        return str(self)


class PtoserveError(grpc.RpcError):
    """A failed call: the gRPC status code and the server's message.

    It is a grpc.RpcError, so code that catches gRPC's errors catches it,
    and like one it answers `code()` and `details()`; `code` and `details`
    also read as attributes (`e.code == grpc.StatusCode.NOT_FOUND`)."""

    def __init__(self, code: grpc.StatusCode, details: str):
        super().__init__(f"{code.name}: {details}")
        self.code = _StatusCode(code)
        self.details = _Details(details)


# gRPC's own refusal to send a request over the message limit.
_TOO_LARGE = re.compile(r"^Sent message larger than max \((\d+) vs\. (\d+)\)$")


def _error(error: grpc.RpcError, closed_hint: str = "") -> PtoserveError:
    """`error` in this client's words; `closed_hint` follows gRPC's
    "Socket closed" (a server that closed the connection while it was
    being made), saying which of the client's arguments may be wrong."""
    details = error.details() or ""
    if (error.code() == grpc.StatusCode.UNAVAILABLE and closed_hint and
            details.endswith("Socket closed")):
        details += closed_hint
    too_large = _TOO_LARGE.match(details)
    if error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and too_large:
        # Said as the server says a limit, and as the C++ client says it.
        details = (f"the request is {too_large.group(1)} bytes, more than a "
                   f"message may be ({too_large.group(2)}): send tiles this "
                   "large through shared memory, as fill, or in parts")
    return PtoserveError(error.code(), details)


def _status_error(code: int, message: str) -> PtoserveError:
    """The error of a ptoserve.v1.JobStatus: `code` a gRPC status code by
    number (UNKNOWN for one gRPC does not define)."""
    return PtoserveError(_STATUS_CODES.get(code, grpc.StatusCode.UNKNOWN),
                         message)
