"""``mqoe testbed bulk``: argument checks and the measured window (no root needed)."""

from __future__ import annotations

import pytest

from mqoe.cli.main import main
from mqoe.emulation.bulk import run_bulk, simulate_bulk
from mqoe.emulation.topology import BottleneckSpec
from mqoe.errors import UserError


def test_a_run_too_short_for_its_measured_window_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # goodput is averaged over whole seconds after slow start (2 s) and before the last
    # second: a 3 s run has none of them (it used to divide by zero)
    assert main(["testbed", "bulk", "--duration-s", "3", "--simulate"]) == 2
    assert "4–600 s" in capsys.readouterr().err


def test_the_shortest_allowed_run_measures_one_second() -> None:
    assert main(["testbed", "bulk", "--duration-s", "4", "--simulate"]) == 0


def test_the_library_refuses_an_empty_window_too() -> None:
    with pytest.raises(UserError, match="no whole second"):
        simulate_bulk(BottleneckSpec(5.0, 15000), 1, duration_s=3.0, skip_s=2.0)
    with pytest.raises(UserError, match="no whole second"):
        run_bulk(
            BottleneckSpec(5.0, 15000), [""], duration_s=5.5, skip_s=4.0
        )  # before the testbed is built
