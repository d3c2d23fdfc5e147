"""The CPU cost of UI work: what measuring, inflating, binding, drawing, uploading and
decoding cost in reference cycles (:class:`RenderCosts`), and what drawing one view
hierarchy costs the RenderThread (:func:`draw_cycles`, overdraw included).
"""

from __future__ import annotations

from dataclasses import dataclass

from mqoe.apps.view_hierarchy import ViewHierarchy
from mqoe.device.binder import TRANSACTION_CYCLES


@dataclass(frozen=True, slots=True)
class RenderCosts:
    """CPU costs of UI work, in reference cycles (Cortex-A53 cycles; see device/cpu.py).

    All values are assumptions (documented per field); work in reference cycles makes one
    constant serve every phone — faster cores finish it sooner."""

    # Input handling, animation callbacks and Choreographer bookkeeping per frame
    # (assumed: ~0.6 ms on a 1.5 GHz A53, as systrace "Choreographer#doFrame" slices of
    # list apps on low-end phones show before measure/layout).
    frame_base_cycles: float = 1.0e6
    # Measure + layout of one view (assumed: ~25 µs on a 1.5 GHz A53 — text views
    # measure their text; a few ms for a screen of a hundred views).
    layout_cycles_per_node: float = 40_000.0
    # Inflating one view from XML (assumed: ~0.2 ms on a 1.5 GHz A53: parsing,
    # reflection, the constructor, resources; why RecyclerView recycles view holders).
    inflate_cycles_per_node: float = 300_000.0
    # Binding data to one recycled view (assumed: ~0.1 ms on a 1.5 GHz A53: setText with
    # its text layout, an image request).
    bind_cycles_per_node: float = 150_000.0
    # RenderThread work per megapixel painted, folding in the GPU fill it waits for
    # (assumed: a full-HD layer ≈ 1.7 ms on a 1.8 GHz A53 with an Adreno 5xx at an
    # effective ~1–2 Gpx/s with blending).
    draw_cycles_per_mpixel: float = 1.5e6
    # Recording and issuing one drawing view's display-list ops (assumed: ~30 µs; text
    # goes through the glyph cache).
    draw_cycles_per_layer: float = 50_000.0
    # Uploading a newly decoded bitmap as a GPU texture in the next frame's sync stage
    # (assumed: 4 bytes/px at an effective ~1.2 GB/s on a 1.8 GHz A53: ~3.3 ms per Mpx).
    upload_cycles_per_mpixel: float = 6.0e6
    # Decoding an image on a worker (assumed: libjpeg-turbo ≈ 45 Mpx/s on a 1.8 GHz A53).
    decode_cycles_per_mpixel: float = 40e6
    # A Binder round trip beyond the server's own work (mqoe.device.binder).
    binder_transaction_cycles: float = TRANSACTION_CYCLES
    # Frame-to-frame spread of UI work (content varies): sigma of a mean-one lognormal.
    frame_cost_sigma: float = 0.25

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")


def draw_cycles(hierarchy: ViewHierarchy, costs: RenderCosts) -> float:
    """RenderThread work to draw ``hierarchy`` once, in reference cycles: every painted
    pixel (overdraw included) plus every drawing layer's display-list ops."""
    return (
        hierarchy.pixels_painted / 1e6 * costs.draw_cycles_per_mpixel
        + hierarchy.drawing_layers * costs.draw_cycles_per_layer
    )
