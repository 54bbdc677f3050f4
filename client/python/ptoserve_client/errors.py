"""PtoserveError: how every failed call reaches the caller, whether gRPC
failed it or the server answered a stream's job with an error status."""

import grpc

# gRPC status codes by number, for JobStatus.code.
_STATUS_CODES = {code.value[0]: code for code in grpc.StatusCode}


class PtoserveError(Exception):
    """A failed call: the gRPC status code and the server's message."""

    def __init__(self, code: grpc.StatusCode, details: str):
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


def _error(error: grpc.RpcError) -> PtoserveError:
    return PtoserveError(error.code(), error.details())


def _status_error(code: int, message: str) -> PtoserveError:
    """The error of a ptoserve.v1.JobStatus: `code` a gRPC status code by
    number (UNKNOWN for one gRPC does not define)."""
    return PtoserveError(_STATUS_CODES.get(code, grpc.StatusCode.UNKNOWN),
                         message)
