"""Python client for ptoserve, the gRPC service that executes PTO tile
instructions (TAND, TXOR).

    from ptoserve_client import Client
    with Client("127.0.0.1:50051") as client:
        r = client.txor(a, b, target="a2a3")  # r.dst, r.events
        r = client.tand(a, 0x0f)              # a scalar travels as Tile.fill

ptoserve_client.aio has the same client for asyncio.
"""

from ptoserve_client.client import (MAX_TILE_BYTES, Client, PtoserveError,
                                    Result, ServerMetadata, as_tile_array,
                                    assembly_job, binary_job, decode_tile,
                                    encode_operands, encode_tile, make_job,
                                    tile_dtype)

# The client's version (the package's, read by pyproject.toml): the same
# as the server it ships with.
__version__ = "0.1.0"

__all__ = ["Client", "MAX_TILE_BYTES", "PtoserveError", "Result",
           "ServerMetadata", "as_tile_array", "assembly_job", "binary_job",
           "decode_tile", "encode_operands", "encode_tile", "make_job",
           "tile_dtype"]
