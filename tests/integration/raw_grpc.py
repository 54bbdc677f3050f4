"""gRPC calls made by hand over HTTP/2 (python3-h2), for tests that need
what no gRPC library sends: a message whose compressed flag or encoding
lies, a body a real client would never build. Loopback only; every wait is
bounded."""

import dataclasses
import socket
import ssl
import time
import zlib

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

import other_user

# Every call gives up after this long, whatever the server does.
CALL_TIMEOUT_S = 30


@dataclasses.dataclass
class Answer:
    """What the server sent back on the call's stream."""
    headers: dict
    trailers: dict
    body: bytes
    # The connection ended (reset, GOAWAY or closed) before the trailers.
    reset: bool = False

    @property
    def status(self) -> str:
        """grpc-status as text ("0" is OK); from the trailers, or the
        headers of a trailers-only answer; "" if none came."""
        return self.trailers.get("grpc-status",
                                 self.headers.get("grpc-status", ""))

    @property
    def message(self) -> str:
        return self.trailers.get("grpc-message",
                                 self.headers.get("grpc-message", ""))


def frame(payload: bytes, compressed: bool = False) -> bytes:
    """One gRPC length-prefixed message."""
    return (bytes([1 if compressed else 0]) + len(payload).to_bytes(4, "big")
            + payload)


def bomb(inflated_bytes: int, encoding: str = "gzip") -> bytes:
    """`inflated_bytes` zero bytes compressed as `encoding` (gzip or deflate,
    gRPC's names), made a chunk at a time: a 1 GiB bomb is about 1 MiB and
    never exists inflated here."""
    wbits = 31 if encoding == "gzip" else 15
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    chunk = bytes(1 << 20)
    parts = []
    left = inflated_bytes
    while left > 0:
        n = min(left, len(chunk))
        parts.append(packer.compress(chunk[:n]))
        left -= n
    parts.append(packer.flush())
    return b"".join(parts)


class Connection:
    """One HTTP/2 connection to a gRPC server, plaintext or TLS."""

    def __init__(self, address: str, tls_ca: str = "",
                 receive_window: int = 1 << 30, uid=None, source=None):
        """receive_window: what the server may send before this client
        reads it, per stream and for the connection (0: nothing, as a
        client that never reads leaves it). uid: the user the connection's
        socket belongs to (other_user.connect_as), else this process's.
        source: the address it comes from (e.g. 127.0.0.2)."""
        host, port = address.rsplit(":", 1)
        host = host.strip("[]")
        if uid is None:
            sock = socket.create_connection(
                (host, int(port)), timeout=CALL_TIMEOUT_S,
                source_address=(source, 0) if source else None)
        else:
            sock = other_user.connect_as(uid, host, int(port), CALL_TIMEOUT_S,
                                         source=source)
        if tls_ca:
            context = ssl.create_default_context(cafile=tls_ca)
            context.check_hostname = False
            context.set_alpn_protocols(["h2"])
            sock = context.wrap_socket(sock, server_hostname=host)
        self.sock = sock
        self.authority = address
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.h2.initiate_connection()
        self.receive_window = receive_window
        if receive_window == 0:
            # The connection's window starts at 65535 (RFC 9113 6.9.2) and
            # cannot shrink; the streams' can, to nothing.
            self.h2.update_settings(
                {h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        else:
            self.h2.update_settings(
                {h2.settings.SettingCodes.INITIAL_WINDOW_SIZE:
                 min(receive_window, (1 << 31) - 1)})
            self.h2.increment_flow_control_window(
                min(receive_window, (1 << 31) - 1 - 65535))
        self._flush()
        self.ends = {}
        # PINGs the server sent (not acknowledgements of ours).
        self.pings_received = 0

    def close(self) -> None:
        try:
            self.h2.close_connection()
            self._flush()
        except OSError:
            pass
        self.sock.close()

    def _flush(self) -> None:
        data = self.h2.data_to_send()
        if data:
            self.sock.sendall(data)

    def call(self, method: str, body: bytes, headers: list = (),
             end_stream: bool = True) -> Answer:
        """Sends `body` (framed gRPC messages) on a new stream to `method`
        ("/package.Service/Method") and returns the answer. Sends what flow
        control allows, waiting for window updates; stops sending once the
        server has answered."""
        stream = self.h2.get_next_available_stream_id()
        request_headers = [
            (":method", "POST"), (":scheme", "http"), (":path", method),
            (":authority", self.authority),
            ("content-type", "application/grpc"), ("te", "trailers"),
            ("grpc-accept-encoding", "identity"),
        ] + list(headers)
        self.h2.send_headers(stream, request_headers)
        self._flush()
        answer = Answer({}, {}, b"")
        done = False
        sent = 0
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while not done and time.monotonic() < deadline:
            # Send as much as the windows allow.
            while sent < len(body) and not answer.headers:
                room = min(self.h2.local_flow_control_window(stream),
                           self.h2.max_outbound_frame_size, len(body) - sent)
                if room <= 0:
                    break
                self.h2.send_data(stream, body[sent:sent + room])
                sent += room
            if sent == len(body) and end_stream and not answer.headers:
                try:
                    self.h2.end_stream(stream)
                except h2.exceptions.ProtocolError:
                    pass
                end_stream = False
            self._flush()
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(1 << 16)
            except (socket.timeout, ssl.SSLError, ConnectionError):
                answer.reset = True
                break
            if not data:
                answer.reset = True
                break
            for event in self.h2.receive_data(data):
                if isinstance(event, h2.events.PingReceived):
                    self.pings_received += 1
                if getattr(event, "stream_id", stream) != stream:
                    continue
                if isinstance(event, h2.events.ResponseReceived):
                    answer.headers = dict(event.headers)
                    if "grpc-status" in answer.headers:
                        done = True
                elif isinstance(event, h2.events.DataReceived):
                    answer.body += event.data
                    self.h2.acknowledge_received_data(
                        event.flow_controlled_length, stream)
                elif isinstance(event, h2.events.TrailersReceived):
                    answer.trailers = dict(event.headers)
                    done = True
                elif isinstance(event, (h2.events.StreamReset,
                                        h2.events.ConnectionTerminated)):
                    answer.reset = True
                    done = True
            self._flush()
        return answer

    def call_many(self, method: str, body: bytes, n: int) -> list:
        """Sends `body` (a framed message that fits the stream's window) to
        `method` on `n` new streams at once, and returns each one's
        grpc-status once all are answered ("" for one reset)."""
        streams = []
        for _ in range(n):
            stream = self.h2.get_next_available_stream_id()
            self.h2.send_headers(stream, [
                (":method", "POST"), (":scheme", "http"), (":path", method),
                (":authority", self.authority),
                ("content-type", "application/grpc"), ("te", "trailers")])
            self.h2.send_data(stream, body, end_stream=True)
            streams.append(stream)
        self._flush()
        status = {}
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while len(status) < n and time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            data = self.sock.recv(1 << 16)
            if not data:
                break
            for event in self.h2.receive_data(data):
                stream = getattr(event, "stream_id", None)
                if isinstance(event, h2.events.DataReceived):
                    self.h2.acknowledge_received_data(
                        event.flow_controlled_length, stream)
                elif isinstance(event, (h2.events.ResponseReceived,
                                        h2.events.TrailersReceived)):
                    headers = dict(event.headers)
                    if "grpc-status" in headers:
                        status[stream] = headers["grpc-status"]
                elif isinstance(event, h2.events.StreamReset):
                    status[stream] = ""
            self._flush()
        return [status.get(s, "") for s in streams]

    def open_stream(self, method: str, body: bytes, headers: list = (),
                    end: bool = False):
        """Opens a stream to `method` and sends `body` (framed messages) as
        far as the server's windows allow, without ending the stream or
        reading any answer (with `end`, then half-closes it, as a unary
        call does); returns the stream id. For a client that never
        reads: the server's answers stay where flow control keeps them."""
        stream = self.h2.get_next_available_stream_id()
        self.h2.send_headers(stream, [
            (":method", "POST"), (":scheme", "http"), (":path", method),
            (":authority", self.authority),
            ("content-type", "application/grpc"), ("te", "trailers"),
        ] + list(headers))
        sent = 0
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while sent < len(body) and time.monotonic() < deadline:
            room = min(self.h2.local_flow_control_window(stream),
                       self.h2.max_outbound_frame_size, len(body) - sent)
            if room > 0:
                self.h2.send_data(stream, body[sent:sent + room])
                sent += room
                self._flush()
                continue
            # Wait for the server to open its window (it reads requests).
            self.poll_ends(timeout=0.2)
            if stream in self.ends:
                break
        if end and sent == len(body) and stream not in self.ends:
            self.h2.end_stream(stream)
        self._flush()
        return stream

    def poll_ends(self, timeout: float = 0.0) -> dict:
        """Reads what the server sent within `timeout` s, granting no window,
        and returns how each stream that ended did (id -> "reset",
        "trailers <status>" or "closed")."""
        self.sock.settimeout(timeout if timeout > 0 else 0.001)
        try:
            data = self.sock.recv(1 << 16)
        except (socket.timeout, ssl.SSLError, BlockingIOError):
            return self.ends
        except ConnectionError:
            self.ends["connection"] = "closed"
            return self.ends
        if not data:
            self.ends["connection"] = "closed"
            return self.ends
        for event in self.h2.receive_data(data):
            if isinstance(event, h2.events.StreamReset):
                self.ends[event.stream_id] = "reset"
            elif isinstance(event, h2.events.TrailersReceived):
                self.ends[event.stream_id] = "trailers " + dict(
                    event.headers).get("grpc-status", "?")
            elif isinstance(event, h2.events.ResponseReceived):
                status = dict(event.headers).get("grpc-status")
                if status is not None:
                    self.ends[event.stream_id] = "trailers " + status
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.ends["connection"] = "closed"
        self._flush()
        return self.ends
