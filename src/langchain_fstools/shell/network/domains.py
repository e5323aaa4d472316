"""Allowed domains: the hosts sandboxed commands may reach through the sandbox's proxy.

`Sandbox(network=["pypi.org", "*.githubusercontent.com"])` keeps the network namespace
unshared and lets commands reach those hosts over HTTP and HTTPS through a proxy the
sandbox starts (`shell.network.proxy`). This module holds what the proxy decides with: the list,
checked at construction, and the rule for one requested host and port.

Matching (a requested host is lower-cased and loses a trailing dot first):
1. An exact name allows itself only; `*.example.com` allows every name beneath
   `example.com` (`a.example.com`, `a.b.example.com`), not `example.com` itself.
2. An address literal (`10.0.0.5`, `::1`) is allowed only when it is listed itself;
   a name never allows an address.
3. The port must be one of `ports` (80 and 443 by default).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

DEFAULT_PORTS: Final = (80, 443)
"""The ports commands may reach on an allowed host: HTTP and HTTPS."""

_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_MAX_NAME = 253
_MAX_PORT = 65535


def host_key(host: str) -> str:
    """`host` as the list compares it: lower case, no trailing dot, no IPv6 brackets."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def _address(host: str) -> str | None:
    """The canonical form of an address literal, or None for a name."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def _checked(entry: object) -> str:
    """One entry of the list, canonical; ValueError saying what to give instead."""
    if not isinstance(entry, str):
        raise ValueError(f"allowed domains are host names (strings), not {entry!r}")  # noqa: TRY004
    name = host_key(entry)
    address = _address(name)
    if address is not None:
        return address
    bare = name.removeprefix("*.")
    labels = bare.split(".")
    if (
        not bare
        or len(bare) > _MAX_NAME
        or not all(_LABEL.fullmatch(label) for label in labels)
        or (name != bare and len(labels) < 2)  # noqa: PLR2004 - `*.com` is a whole domain
    ):
        raise ValueError(
            f"{entry!r} is not a host name: give names like 'pypi.org' or '*.github.com'"
            " (no scheme, path or port; ports are AllowedDomains(ports=...))"
        )
    return name


class AllowedDomains:
    """The hosts, and ports, commands may reach through the sandbox's proxy.

    `Sandbox(network=[...])` builds one from a list of names; build it yourself to
    change the ports. See the module docstring for how a host is matched.

    Args:
        names: Host names (`pypi.org`), wildcards (`*.github.com`: names beneath it)
            or address literals. No scheme, path or port.
        ports: The ports allowed on those hosts. Default: 80 and 443.
        resolve: Where each name leads, instead of the host's resolver: a name absent
            from it cannot be reached. For tests, which give loopback servers names.
            Default: the host's resolver.

    Raises:
        ValueError: an entry is not a host name or address, or a port is out of range.

    Example:
        ```python
        from langchain_fstools import LocalBackend, Sandbox
        from langchain_fstools.shell.network.domains import AllowedDomains

        domains = AllowedDomains(["registry.example.com"], ports=[443, 8443])
        LocalBackend(".", execute=True, sandbox=Sandbox(network=domains))
        ```
    """

    __slots__ = ("_resolve", "names", "ports")

    def __init__(
        self,
        names: Iterable[str],
        *,
        ports: Iterable[int] = DEFAULT_PORTS,
        resolve: Mapping[str, str] | None = None,
    ) -> None:
        """Check and keep the names, the ports and the resolver."""
        if isinstance(names, str):
            raise ValueError(f"allowed domains take a list of names, not one string: [{names!r}]")  # noqa: TRY004
        self.names: tuple[str, ...] = tuple(dict.fromkeys(_checked(name) for name in names))
        self.ports: tuple[int, ...] = tuple(dict.fromkeys(ports))
        for port in self.ports:
            if not isinstance(port, int) or not 0 < port <= _MAX_PORT:
                raise ValueError(f"a port is a number from 1 to 65535, not {port!r}")
        self._resolve = (
            None if resolve is None else tuple(sorted((host_key(k), v) for k, v in resolve.items()))
        )

    def __bool__(self) -> bool:
        """Whether any host is allowed."""
        return bool(self.names)

    def __iter__(self) -> Iterator[str]:
        """The allowed names."""
        return iter(self.names)

    def __eq__(self, other: object) -> bool:
        """Same names, ports and resolver."""
        if not isinstance(other, AllowedDomains):
            return NotImplemented
        return (self.names, self.ports, self._resolve) == (other.names, other.ports, other._resolve)

    def __hash__(self) -> int:
        """From the names, ports and resolver."""
        return hash((self.names, self.ports, self._resolve))

    def __repr__(self) -> str:
        """`AllowedDomains([...], ports=(...))`."""
        return f"AllowedDomains({list(self.names)!r}, ports={self.ports!r})"

    def spec(self) -> dict[str, Any]:
        """The keyword arguments that build this list again (JSON-ready)."""
        resolve = None if self._resolve is None else dict(self._resolve)
        return {"names": list(self.names), "ports": list(self.ports), "resolve": resolve}

    def allows(self, host: str) -> bool:
        """Whether `host` is on the list (rules 1 and 2 of the module docstring)."""
        key = host_key(host)
        address = _address(key)
        if address is not None:
            return address in self.names
        return any(
            key == name or (name.startswith("*.") and key.endswith(name[1:])) for name in self.names
        )

    def refusal(self, host: str, port: int) -> str | None:
        """Why a command may not reach `host:port`, in one sentence; None when it may."""
        if not self.allows(host):
            kind = "address" if _address(host_key(host)) is not None else "host"
            return (
                f"{host} is not an allowed {kind}: the sandbox reaches only"
                f" {', '.join(self.names)}; add it to Sandbox(network=[...]) to allow it"
            )
        if port not in self.ports:
            allowed = ", ".join(str(p) for p in self.ports)
            return (
                f"port {port} is not allowed (only {allowed});"
                " set AllowedDomains(ports=...) to allow it"
            )
        return None

    def addresses(self, host: str, port: int) -> list[tuple[socket.AddressFamily, str]]:
        """Where `host` leads: (family, address) pairs to try in order.

        Raises:
            OSError: the name does not resolve.
        """
        key = host_key(host)
        if self._resolve is not None:
            found = dict(self._resolve).get(key)
            if found is None:
                raise OSError(f"{host} is not in the proxy's resolver")
            address = ipaddress.ip_address(found)
            family = socket.AF_INET6 if address.version == 6 else socket.AF_INET  # noqa: PLR2004
            return [(family, str(address))]
        infos = socket.getaddrinfo(key, port, type=socket.SOCK_STREAM)
        return list(dict.fromkeys((info[0], str(info[4][0])) for info in infos))


def allowed_domains(network: object) -> AllowedDomains | None:
    """`Sandbox(network=...)`'s list as `AllowedDomains` (None for True or False).

    Raises:
        ValueError: one string instead of a list, or an entry that is not a host.
    """
    if isinstance(network, bool):
        return None
    if isinstance(network, AllowedDomains):
        return network
    if isinstance(network, str):
        raise ValueError(  # noqa: TRY004 - a configuration error, as for every Sandbox field
            f"Sandbox(network=...) takes True, False or a list of host names, not one string:"
            f" network=[{network!r}]"
        )
    try:
        return AllowedDomains(network)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(
            f"Sandbox(network=...) takes True, False or a list of host names, not {network!r}"
        ) from None


__all__ = ["DEFAULT_PORTS", "AllowedDomains", "allowed_domains", "host_key"]
