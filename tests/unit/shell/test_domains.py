"""Allowed domains: what the list accepts at construction and which hosts it lets through."""

from __future__ import annotations

import pytest

from langchain_fstools.errors import SandboxUnavailable
from langchain_fstools.shell.network.domains import AllowedDomains
from langchain_fstools.shell.sandbox import sandbox
from langchain_fstools.shell.sandbox.sandbox import Confinement, Sandbox


@pytest.mark.parametrize(
    "entry",
    [
        "https://pypi.org",
        "pypi.org/simple",
        "pypi.org:443",
        "pypi org",
        "",
        "*",
        "*.com",
        "-bad.example.com",
        "a..b",
    ],
)
def test_an_entry_that_is_not_a_host_name_is_refused_at_construction(entry: str) -> None:
    with pytest.raises(ValueError, match="not a host name"):
        Sandbox(network=[entry])


def test_one_string_instead_of_a_list_is_refused() -> None:
    with pytest.raises(ValueError, match="not one string"):
        Sandbox(network="pypi.org")  # type: ignore[arg-type]


def test_a_port_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="1 to 65535"):
        AllowedDomains(["pypi.org"], ports=[0])


def test_an_empty_list_is_no_network() -> None:
    assert Sandbox(network=[]) == Sandbox()
    assert Sandbox(network=[]).domains is None


def test_a_list_becomes_allowed_domains_and_true_stays_the_whole_network() -> None:
    boxed = Sandbox(network=["PyPI.org.", "files.pythonhosted.org"])
    assert boxed.domains == AllowedDomains(["pypi.org", "files.pythonhosted.org"])
    assert boxed.network == boxed.domains
    assert Sandbox(network=True).domains is None
    assert Sandbox(network=True).network is True


def test_exact_names_allow_only_themselves_and_a_wildcard_allows_names_beneath() -> None:
    domains = AllowedDomains(["pypi.org", "*.github.com"])
    assert domains.allows("pypi.org")
    assert domains.allows("PYPI.ORG.")
    assert not domains.allows("files.pypi.org")
    assert not domains.allows("pypi.org.evil.test")
    assert domains.allows("api.github.com")
    assert domains.allows("a.b.github.com")
    assert not domains.allows("github.com")
    assert not domains.allows("evilgithub.com")


def test_an_address_is_allowed_only_when_listed_itself() -> None:
    domains = AllowedDomains(["pypi.org", "10.0.0.5", "::1"])
    assert not domains.allows("151.101.0.223")
    assert domains.allows("10.0.0.5")
    assert domains.allows("[::1]")
    assert domains.allows("0:0::1")
    assert not AllowedDomains(["*.example.com"]).allows("127.0.0.1")


def test_a_refusal_says_what_is_allowed_and_how_to_allow_more() -> None:
    domains = AllowedDomains(["pypi.org"])
    reason = domains.refusal("evil.test", 443)
    assert reason is not None
    assert "evil.test is not an allowed host" in reason
    assert "pypi.org" in reason
    assert "Sandbox(network=[...])" in reason
    port = domains.refusal("pypi.org", 22)
    assert port is not None
    assert "port 22 is not allowed" in port
    assert domains.refusal("pypi.org", 443) is None
    address = domains.refusal("127.0.0.1", 80)
    assert address is not None
    assert "not an allowed address" in address


def test_the_injected_resolver_is_the_only_one() -> None:
    domains = AllowedDomains(["a.test", "b.test"], resolve={"A.test": "127.0.0.1"})
    assert domains.addresses("a.test", 80) == [(2, "127.0.0.1")]
    with pytest.raises(OSError, match="not in the proxy's resolver"):
        domains.addresses("b.test", 80)


def test_landlock_alone_refuses_domains_naming_why() -> None:
    with pytest.raises(ValueError, match="match ports, not addresses"):
        Sandbox(network=["pypi.org"], method="landlock")


def test_where_bubblewrap_cannot_start_domains_do_not_fall_back_to_landlock(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    with pytest.raises(SandboxUnavailable) as raised:
        Confinement.prepare(Sandbox(network=["pypi.org"]), str(tmp_path))
    assert "match ports, not addresses" in raised.value.reason
    assert "no bwrap executable" in raised.value.reason
