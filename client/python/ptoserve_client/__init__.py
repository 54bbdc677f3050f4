"""Python client for ptoserve, the gRPC service that executes PTO tile
instructions (TAND, TXOR).

    from ptoserve_client import Client
    with Client("127.0.0.1:50051") as client:
        r = client.txor(a, b, target="a2a3")  # r.dst, r.events
"""

from ptoserve_client.client import (Client, PtoserveError, Result,
                                    decode_tile, encode_tile, make_job)

__all__ = ["Client", "PtoserveError", "Result", "decode_tile", "encode_tile",
           "make_job"]
