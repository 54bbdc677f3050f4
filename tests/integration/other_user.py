"""Connections that belong to another user, so that one test process can be
two clients of a server on loopback (the server tells a loopback client by
the user whose socket its connection is: docs/SECURITY.md, "Who a client
is")."""

import ctypes
import os
import socket

# Users none of this machine's accounts use, for the sockets below.
OTHER_USER = 54321
THIRD_USER = 54322

_libc = ctypes.CDLL(None, use_errno=True)


def available():
    """Whether this process may make sockets for other users (root)."""
    return os.geteuid() == 0


def connect_as(uid, host, port, timeout, source=None):
    """A TCP socket connected to (host, port) whose owner in the kernel's
    socket tables is `uid`: it is made while this thread's file-system user
    is `uid` (setfsuid is the calling thread's alone); from address
    `source` (e.g. 127.0.0.2) if given. REQUIRES: root."""
    if not available():
        raise PermissionError("needs root, to make another user's socket")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    before = _libc.setfsuid(uid)
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    finally:
        _libc.setfsuid(before)
    sock.settimeout(timeout)
    if source is not None:
        sock.bind((source, 0))
    sock.connect((host, port))
    return sock
