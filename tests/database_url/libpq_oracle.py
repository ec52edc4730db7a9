"""libpq's reading of connection strings, as the oracle of tests/database_url/libpq.rs.

Reads a JSON list of strings on stdin and writes, for each, how libpq reads it: the hosts with
their ports, the user, the database, the password and every other keyword set, or the reason it
refuses. The parsing is libpq's own (PQconninfoParse, loaded from libpq.so.5 with ctypes). What
PQconninfoParse leaves to connect time is done here as libpq 15 documents and does it in
pqConnectOptions2 and PQconnectPoll (fe-connect.c), without connecting:
  - host is split on commas (one host if unset or empty); an empty item is libpq's default host
    (its compiled socket directory, asked of libpq itself below), an item starting with / is a
    Unix-socket directory;
  - port is split on commas: one port for every host, or one per host; an empty item is 5432;
    each is an integer as strtol reads it (spaces around, a sign) within 1..65535;
  - user defaults to the OS user, dbname to the user;
  - sslmode, gssencmode, channel_binding, target_session_attrs, ssl_min/max_protocol_version
    must be one of libpq's values, and connect_timeout an integer.
No environment variable is applied (PQconninfoParse applies none) and no password file is read.
If libpq cannot be loaded the script fails: the test must not pass without its oracle.
"""

import ctypes
import json
import os
import pwd
import re
import sys


class Option(ctypes.Structure):
    _fields_ = [
        ("keyword", ctypes.c_char_p),
        ("envvar", ctypes.c_char_p),
        ("compiled", ctypes.c_char_p),
        ("val", ctypes.c_char_p),
        ("label", ctypes.c_char_p),
        ("dispchar", ctypes.c_char_p),
        ("dispsize", ctypes.c_int),
    ]


libpq = ctypes.CDLL("libpq.so.5")
libpq.PQconninfoParse.restype = ctypes.POINTER(Option)
libpq.PQconninfoParse.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
libpq.PQconninfoFree.argtypes = [ctypes.POINTER(Option)]
libpq.PQfreemem.argtypes = [ctypes.c_void_p]
libpq.PQconnectStart.restype = ctypes.c_void_p
libpq.PQconnectStart.argtypes = [ctypes.c_char_p]
libpq.PQhost.restype = ctypes.c_char_p
libpq.PQhost.argtypes = [ctypes.c_void_p]
libpq.PQfinish.argtypes = [ctypes.c_void_p]
libpq.PQconndefaults.restype = ctypes.POINTER(Option)


def default_host():
    """Where libpq goes for an empty host: asked of libpq, which resolves it before connecting
    (to a socket on port 1, where nothing listens, so it fails at once)."""
    conn = libpq.PQconnectStart(b"port=1 user=oracle dbname=oracle connect_timeout=2")
    try:
        return libpq.PQhost(conn).decode()
    finally:
        libpq.PQfinish(conn)


def keywords():
    options = libpq.PQconndefaults()
    names, i = [], 0
    while options[i].keyword:
        names.append(options[i].keyword.decode())
        i += 1
    libpq.PQconninfoFree(options)
    return names


def parse(text):
    error = ctypes.c_void_p()
    options = libpq.PQconninfoParse(text.encode(), ctypes.byref(error))
    if not options:
        message = ctypes.string_at(error.value).decode(errors="replace") if error.value else "?"
        libpq.PQfreemem(error)
        return None, message.strip()
    values, i = {}, 0
    while options[i].keyword:
        if options[i].val is not None:
            values[options[i].keyword.decode()] = options[i].val.decode()
        i += 1
    libpq.PQconninfoFree(options)
    return values, None


C_SPACE = " \t\n\v\f\r"


def libpq_int(text):
    """pqParseIntParam: strtol base 10, whitespace around, a C int."""
    if not re.fullmatch(r"[+-]?[0-9]+", text.strip(C_SPACE)):
        return None
    value = int(text.strip(C_SPACE))
    return value if -(2**31) <= value < 2**31 else None


CHOICES = {
    "sslmode": ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"],
    "gssencmode": ["disable", "prefer", "require"],
    "channel_binding": ["disable", "prefer", "require"],
    "target_session_attrs": [
        "any", "read-write", "read-only", "primary", "standby", "prefer-standby",
    ],
}
TLS_VERSIONS = ["", "tlsv1", "tlsv1.1", "tlsv1.2", "tlsv1.3"]


def read(text, default):
    values, refused = parse(text)
    if refused:
        return {"refused": refused}
    host_list = values.get("host") or ""
    hosts = host_list.split(",") if host_list else [""]
    port_list = values.get("port") or ""
    ports = port_list.split(",") if port_list else [""]
    if len(ports) not in (1, len(hosts)):
        return {"refused": f"could not match {len(ports)} port numbers to {len(hosts)} hosts"}
    read_hosts = []
    for index, host in enumerate(hosts):
        port_text = ports[index] if len(ports) > 1 else ports[0]
        port = 5432 if port_text == "" else libpq_int(port_text)
        if port is None or not 1 <= port <= 65535:
            return {"refused": f"invalid port number: {port_text!r}"}
        host = host or default
        kind = "socket" if host.startswith("/") else "tcp"
        read_hosts.append([kind, host, port])
    for keyword, choices in CHOICES.items():
        if keyword in values and values[keyword] not in choices:
            return {"refused": f"invalid {keyword} value"}
    for keyword in ("ssl_min_protocol_version", "ssl_max_protocol_version"):
        if keyword in values and values[keyword].lower() not in TLS_VERSIONS:
            return {"refused": f"invalid {keyword} value"}
    if "connect_timeout" in values and libpq_int(values["connect_timeout"]) is None:
        return {"refused": "invalid integer value for connect_timeout"}
    user = values.get("user") or pwd.getpwuid(os.geteuid()).pw_name
    own = {"host", "port", "user", "dbname", "password"}
    return {
        "hosts": read_hosts,
        "user": user,
        "dbname": values.get("dbname") or user,
        "password": values.get("password") or None,
        "params": {k: v for k, v in values.items() if k not in own},
    }


def main():
    texts = json.load(sys.stdin)
    default = default_host()
    json.dump(
        {"keywords": keywords(), "readings": [read(text, default) for text in texts]},
        sys.stdout,
    )


main()
