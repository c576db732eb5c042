"""Network probes that run on a node (`python -m sparkrig.fabric.probe …`), standard library
only, printing one JSON object. Raw sockets need root (or CAP_NET_RAW), like `ping`.

- `ping ADDR… --size N`: one ICMP echo per address with Don't Fragment set, payload N bytes
  (MTU-28 fills the MTU exactly); a size above the route's MTU fails locally with "message
  too long", an address without a route with "Network is unreachable".
- `echo6 IFACE…`: an ICMPv6 echo to all-nodes (ff02::1) on each interface; every node on the
  wire answers from a link-local address of the interface it heard it on (discovery).
- `connect ADDR PORT --ttl N`: a TCP connect whose packets may cross at most N hops.
- `listen ADDR PORT --seconds S`: accept TCP connections for S seconds; prints `ready` first.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import select
import socket
import struct
import sys
import time

ICMP_ECHO_REQUEST = 8
ICMP_ECHO_REPLY = 0
ICMP6_ECHO_REQUEST = 128
ICMP6_ECHO_REPLY = 129
IP_MTU_DISCOVER = 10  # linux/in.h; the socket module lacks the name
IP_PMTUDISC_DO = 2  # linux/in.h: always set DF
ALL_NODES = "ff02::1"


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(int(word) for word in struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def ping(address: str, size: int, timeout: float) -> dict[str, object]:
    ident = os.getpid() & 0xFFFF
    payload = bytes(i & 0xFF for i in range(size))
    header = struct.pack("!BBHHH", ICMP_ECHO_REQUEST, 0, 0, ident, 1)
    packet = struct.pack("!BBHHH", ICMP_ECHO_REQUEST, 0, _checksum(header + payload), ident, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP) as sock:
        sock.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
        started = time.monotonic()
        try:
            sock.sendto(packet + payload, (address, 0))
        except OSError as exc:
            reason = "message too long" if exc.errno == errno.EMSGSIZE else exc.strerror
            return {"ok": False, "error": reason, "size": size, "address": address}
        deadline = started + timeout
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([sock], [], [], left)
            if not ready:
                break
            data, source = sock.recvfrom(65535)
            header_length = (data[0] & 0x0F) * 4
            kind, _, _, reply_id, _ = struct.unpack(
                "!BBHHH", data[header_length : header_length + 8]
            )
            if kind == ICMP_ECHO_REPLY and reply_id == ident and source[0] == address:
                return {
                    "ok": True,
                    "address": address,
                    "size": size,
                    "reply_bytes": len(data),
                    "rtt_ms": round((time.monotonic() - started) * 1000, 3),
                }
    return {"ok": False, "error": "no reply", "size": size, "address": address}


def echo6(interfaces: list[str], wait: float) -> dict[str, object]:
    """Send to ff02::1 on each interface; collect who answered, per interface."""
    ident = os.getpid() & 0xFFFF
    sockets: dict[socket.socket, str] = {}
    heard: dict[str, list[str]] = {name: [] for name in interfaces}
    errors: dict[str, str] = {}
    try:
        for name in interfaces:
            sock = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
            sockets[sock] = name
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, name.encode())
                index = socket.if_nametoindex(name)
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 0)
                # the kernel fills in the ICMPv6 checksum on raw ICMPv6 sockets
                request = struct.pack("!BBHHH", ICMP6_ECHO_REQUEST, 0, 0, ident, 1)
                sock.sendto(request + b"sparkrig", (ALL_NODES, 0, 0, index))
            except OSError as exc:
                errors[name] = exc.strerror or str(exc)
        deadline = time.monotonic() + wait
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select(list(sockets), [], [], left)
            for sock in ready:
                data, source = sock.recvfrom(65535)
                kind, _, _, reply_id, _ = struct.unpack("!BBHHH", data[:8])
                if kind == ICMP6_ECHO_REPLY and reply_id == ident:
                    address = source[0].split("%")[0]
                    if address not in heard[sockets[sock]]:
                        heard[sockets[sock]].append(address)
    finally:
        for sock in sockets:
            sock.close()
    return {"heard": heard, "errors": errors}


def connect(address: str, port: int, ttl: int | None, timeout: float) -> dict[str, object]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        if ttl is not None:
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, ttl)
        sock.settimeout(timeout)
        try:
            sock.connect((address, port))
        except OSError as exc:
            return {"ok": False, "error": exc.strerror or type(exc).__name__, "ttl": ttl}
        return {"ok": True, "ttl": ttl, "local": sock.getsockname()[0]}


def listen(address: str, port: int, seconds: float) -> dict[str, object]:
    accepted = []
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(16)
        print("ready", flush=True)
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([sock], [], [], left)
            if ready:
                peer, source = sock.accept()
                with contextlib.closing(peer):
                    accepted.append(source[0])
    return {"accepted": accepted}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparkrig.fabric.probe")
    commands = parser.add_subparsers(dest="command", required=True)
    ping_args = commands.add_parser("ping")
    ping_args.add_argument("addresses", nargs="+")
    ping_args.add_argument("--size", type=int, required=True)
    ping_args.add_argument("--timeout", type=float, default=2.0)
    echo_args = commands.add_parser("echo6")
    echo_args.add_argument("interfaces", nargs="+")
    echo_args.add_argument("--wait", type=float, default=1.0)
    connect_args = commands.add_parser("connect")
    connect_args.add_argument("address")
    connect_args.add_argument("port", type=int)
    connect_args.add_argument("--ttl", type=int)
    connect_args.add_argument("--timeout", type=float, default=2.0)
    listen_args = commands.add_parser("listen")
    listen_args.add_argument("address")
    listen_args.add_argument("port", type=int)
    listen_args.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    result: dict[str, object]
    if args.command == "ping":
        result = {"results": [ping(a, args.size, args.timeout) for a in args.addresses]}
    elif args.command == "echo6":
        result = echo6(args.interfaces, args.wait)
    elif args.command == "connect":
        result = connect(args.address, args.port, args.ttl, args.timeout)
    else:
        result = listen(args.address, args.port, args.seconds)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
