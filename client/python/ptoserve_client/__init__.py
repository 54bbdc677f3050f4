"""Python client for ptoserve, the gRPC service that executes PTO tile
instructions (TAND, TXOR).

    from ptoserve_client import Client
    with Client("127.0.0.1:50051") as client:
        r = client.txor(a, b, target="a2a3")  # r.dst, r.events
        r = client.tand(a, 0x0f)              # a scalar travels as Tile.fill

ptoserve_client.aio has the same client for asyncio. On the server's
host, tiles may live in shared memory instead of travelling as bytes:

    with client.shared_region(1 << 20) as region:   # a SharedRegion
        a = region.asarray(a)                        # now in the region
        c = region.array(a.shape, a.dtype)
        client.tand(a, 0x0f, out=c)                  # the server writes c
"""

from ptoserve_client.client import Client
from ptoserve_client.dtypes import as_tile_array, tile_dtype
from ptoserve_client.errors import PtoserveError
from ptoserve_client.events import duration_text, event_text
from ptoserve_client.jobs import assembly_job, binary_job, make_job
from ptoserve_client.results import Result, ServerMetadata
from ptoserve_client.shared import SharedRegion, shared_slice
from ptoserve_client.tiles import (MAX_TILE_BYTES, decode_tile,
                                   encode_operands, encode_tile)

# The client's version (the package's, read by pyproject.toml): the same
# as the server it ships with.
__version__ = "0.1.0"

__all__ = ["Client", "MAX_TILE_BYTES", "PtoserveError", "Result",
           "duration_text", "event_text",
           "ServerMetadata", "SharedRegion", "as_tile_array", "assembly_job",
           "binary_job", "decode_tile", "encode_operands", "encode_tile",
           "make_job", "shared_slice", "tile_dtype"]
