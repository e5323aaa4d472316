"""The environment commands run with: which variables pass through, which are added.

Executing backends take `env=` (variables to add, a mapping of names to values) and
`inherit_env=` (which of the agent's, or the server's, variables pass through: `True`
for all, `False` for none, or a list of names). The variables of `env=` are set last,
so they win over inherited ones. Each backend states its default:

- `LocalBackend(execute=True)` (sandboxed by default): only `MINIMAL_ENV` (`PATH`,
  `HOME`, `LANG`, `TERM`, `TMPDIR`, and `PYTHONPYCACHEPREFIX` in the session's temporary
  folder), so secrets in the agent's environment stay outside;
  and whatever `inherit_env` says, a variable that looks like a secret (`looks_secret`:
  a name such as `*_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*_PAT`, `*_PWD`,
  `*JWT*`, ..., or a value holding a URL with credentials, `redis://:pw@host`) is never
  inherited into the sandbox: only `env=` can pass one;
- `LocalBackend(execute=True, sandbox=None)`: everything this process has;
- `SSHBackend`: the environment the server gives the session (`inherit_env=True`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

MINIMAL_ENV: Final = ("PATH", "HOME", "LANG", "TERM", "TMPDIR")
"""The variables a sandboxed command gets by default."""

InheritEnv = bool | Sequence[str]
"""`True` (all variables), `False` (none), or the names of those that pass through."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECRET = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE"
    r"|CERT|_DSN$|^DSN$|DATABASE_URL|CONNECTION_STRING|WEBHOOK|(^|_)PAT$|_PWD$|JWT",
    re.IGNORECASE,
)
_CREDENTIAL_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s]+@")
"""A URL with user information (`https://user:token@host`, `redis://:pw@host`)."""


def looks_secret(name: str, value: str = "") -> bool:
    """Whether a variable looks like it holds a secret.

    Args:
        name: Its name: `OPENAI_API_KEY`, `GITHUB_PAT`, `MYSQL_PWD`, `CI_JOB_JWT`, ...
            look secret (`PWD` and `OLDPWD`, the working directories, do not).
        value: Its value: one holding a URL with credentials
            (`REDIS_URL=redis://:pw@host`) looks secret whatever the name.
    """
    return _SECRET.search(name) is not None or _CREDENTIAL_URL.search(value) is not None


@dataclass(frozen=True, slots=True)
class CommandEnv:
    """A validated pair of `env=` and `inherit_env=`.

    Attributes:
        add: Variables set for every command, over the inherited ones.
        inherit: `True`, `False`, or the names that pass through.
    """

    add: tuple[tuple[str, str], ...] = ()
    inherit: bool | tuple[str, ...] = True

    @classmethod
    def of(cls, env: Mapping[str, str] | None, inherit_env: InheritEnv) -> CommandEnv:
        """Validate `env=` and `inherit_env=` as a backend receives them.

        Raises:
            ValueError: `env` is not a mapping of variable names to strings (without
                NUL characters), or `inherit_env` is not a bool or a list of names.
        """
        if env is not None and not isinstance(env, Mapping):
            raise ValueError("env must be a mapping of variable names to values")
        add = tuple((env or {}).items())
        for name, value in add:
            _check_name(name, "env")
            if not isinstance(value, str) or "\0" in value:
                raise ValueError(f"env[{name!r}] must be a string without NUL characters")
        if isinstance(inherit_env, bool):
            return cls(add, inherit_env)
        if isinstance(inherit_env, str) or not isinstance(inherit_env, Sequence):
            raise ValueError(  # noqa: TRY004 - bad configuration is a ValueError here
                "inherit_env must be True, False or a list of variable names"
            )
        for name in inherit_env:
            _check_name(name, "inherit_env")
        return cls(add, tuple(inherit_env))

    @property
    def inherits_all(self) -> bool:
        """Whether commands get the whole environment, unchanged."""
        return self.inherit is True and not self.add

    def build(self, base: Mapping[str, str], *, secrets: bool = True) -> dict[str, str]:
        """The environment of a command, from the variables `base` has.

        Args:
            base: The variables there are to inherit.
            secrets: Inherit variables that look like secrets (`looks_secret`, by name
                or value); False drops them (those of `add` are always set).
                Default: True.
        """
        if self.inherit is True:
            passed = dict(base)
        elif self.inherit is False:
            passed = {}
        else:
            passed = {name: base[name] for name in self.inherit if name in base}
        if not secrets:
            passed = {n: v for n, v in passed.items() if not looks_secret(n, v)}
        passed.update(self.add)
        return passed

    def shell_prefix(self) -> str:
        """A POSIX shell prefix (`env -i A="$A" B=value `) that sets it up remotely.

        Inherited names are read in the remote shell that runs the prefix; one it
        does not have stays unset. Empty when nothing changes.
        """
        if self.inherits_all:
            return ""
        words = ["env"]
        if self.inherit is not True:
            words.append("-i")
            kept = () if self.inherit is False else self.inherit
            words += [f'${{{name}+"{name}=${name}"}}' for name in kept]
        words += [shlex.quote(f"{name}={value}") for name, value in self.add]
        return " ".join(words) + " "


def _check_name(name: object, where: str) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(
            f"{where} names must be environment variable names"
            f" (letters, digits, underscores); got {name!r}"
        )


__all__ = ["MINIMAL_ENV", "CommandEnv", "InheritEnv", "looks_secret"]
