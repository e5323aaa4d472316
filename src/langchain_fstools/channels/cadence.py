"""Delta channels whose snapshots scale with their value, so storage per update stays flat.

A LangGraph `DeltaChannel` checkpoints each update once and, every `snapshot_frequency`
updates, the whole value, so a load replays at most that many updates after the last
snapshot. A fixed cadence makes the snapshots the bulk of a long thread's storage: with
1,000 files in state, every 50th mutation stores all 1,000 again (4 MB for files of
4 KB: 80 KB per mutation on top of the mutation itself), and a conversation's snapshots
grow with the square of its length.

`ScaledDeltaChannel` snapshots after `max(minimum, len(value) // 2)` updates instead.
An update adds or replaces about one entry (a file record, a message), so the replay
after a snapshot is at most about half the snapshot's size, and a load reads at most
about 1.5 times the value, as with a snapshot every few steps. In exchange each snapshot
is spread over half as many updates as it has entries: about two entries of storage per
update, whatever the size of the state, and a conversation's snapshots add up to about
twice its length (the cadence doubles as the list grows) instead of its square.

LangGraph reads `snapshot_frequency` from the channel whenever it checkpoints
(`delta_channels_to_snapshot`), so the cadence follows the value.
"""

from __future__ import annotations

from collections.abc import Sized
from typing import TYPE_CHECKING, Any, Final, Self, cast

from langgraph.channels.delta import DeltaChannel

if TYPE_CHECKING:
    from types import MemberDescriptorType

MINIMUM_CADENCE: Final = 50
"""Fewest updates between two snapshots of `files`, `file_reads` and `file_history` (small
values snapshot at this fixed cadence, deepagents' for its `files`)."""

_MINIMUM: Final[MemberDescriptorType] = DeltaChannel.__dict__["snapshot_frequency"]
"""`DeltaChannel`'s slot, here holding the minimum (the property below shadows its name)."""


class ScaledDeltaChannel(DeltaChannel[Any]):
    """A `DeltaChannel` that snapshots after `max(minimum, len(value) // 2)` updates.

    Args:
        reducer: `(state, list[writes]) -> new_state`, deterministic and
            batching-invariant, as `DeltaChannel` requires.
        typ: The value type; inferred from the annotation in a state schema.
        snapshot_frequency: The minimum number of updates between two snapshots.
    """

    __slots__ = ()

    @property
    def snapshot_frequency(self) -> int:
        """Updates between two snapshots: the minimum, or half the value's entries."""
        minimum: int = _MINIMUM.__get__(self)
        value = self.value
        if isinstance(value, Sized):
            return max(minimum, len(value) // 2)
        return minimum

    @snapshot_frequency.setter
    def snapshot_frequency(self, minimum: int) -> None:
        _MINIMUM.__set__(self, minimum)

    def __getstate__(self) -> tuple[None, dict[str, Any]]:
        """What pickling and `copy` keep: the slots, with the minimum (not the scaled cadence)."""
        state = cast("tuple[None, dict[str, Any]]", super().__getstate__())
        return None, {**state[1], "snapshot_frequency": _MINIMUM.__get__(self)}

    def copy(self) -> Self:
        """A copy with the same value and the same minimum (not the scaled cadence)."""
        return self._with_my_minimum(super().copy())

    def from_checkpoint(self, checkpoint: Any) -> Self:
        """Restore from a stored blob, keeping the minimum (not the scaled cadence)."""
        return self._with_my_minimum(super().from_checkpoint(checkpoint))

    def _with_my_minimum(self, channel: Self) -> Self:
        """`channel` (made by `DeltaChannel` from the scaled cadence) with this minimum."""
        _MINIMUM.__set__(channel, _MINIMUM.__get__(self))
        return channel
