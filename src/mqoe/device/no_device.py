"""What a scenario that models no phone is built on (the trace-driven mode).

Like :class:`~mqoe.device.phone.Phone` it is a composition root, the only other one:
it builds the run's :class:`~mqoe.engine.Environment` and holds the components handed
to the run. It imports no device model and loads no profile.
"""

from __future__ import annotations

from collections.abc import Mapping

from mqoe.engine import Environment


class NoDevice:
    """What a scenario that models no phone is built on: the run's clock and named random
    streams (``env``, as a phone's) and the components handed to the run. No profile is
    loaded and no device model imported, so such a run starts in a fraction of the time."""

    def __init__(self, seed: int, components: Mapping[str, object] | None = None) -> None:
        self.env = Environment(seed)
        self._components = dict(components or {})

    def take_component(self, slot: str) -> object | None:
        """The policy object given for ``slot``, or None (as :meth:`Phone.take_component
        <mqoe.device.phone.Phone.take_component>`)."""
        return self._components.pop(slot, None)

    @property
    def untaken_components(self) -> tuple[str, ...]:
        """Slots given a component that the scenario did not take."""
        return tuple(sorted(self._components))
