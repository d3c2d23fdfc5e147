"""The device-profile schema: what a phone is made of, validated at the file boundary.

Profiles are TOML data (``catalog/*.toml``); every number has a source named in the
profile's ``[sources]`` table. Subsystems not built yet add their own optional sections.
This module holds the profile itself and its memory, storage, video, lmk, gpu and
display sections; the ``[cpu]`` section and the SoC tables are in
:mod:`mqoe.device.profiles.cpu_schema` (their names are importable from here too).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from mqoe.device.profiles.base import _Model
from mqoe.device.profiles.cpu_schema import (
    CPUSET_GROUPS,
    PER_CLUSTER_TABLES,
    BoostSpec,
    ClusterPower,
    ClusterSpec,
    CoreType,
    CpuSpec,
    GovernorSpec,
    HmpSpec,
    HotplugSpec,
    InteractionBoostSpec,
    PowerProfileSpec,
    SchedSpec,
    SocCluster,
    SocRef,
    SocSpec,
    Tunable,
    Tunables,
)

REQUIRED_SOURCES = ("android", "cpu", "memory", "storage", "display")


# Ceilings for numbers the sources give no limit for: each far above any phone's, low
# enough that the simulator's integer nanoseconds and pages cannot overflow.
_MAX_CYCLES = 10**10  # reference cycles for one action: 10 s of a 1 GHz core
_MAX_LATENCY_US = 1_000_000.0  # one storage request: a second
_MAX_DELAY_MS = 60_000.0  # a minute
# The lowest oom_score_adj a level kills: within oom_score_adj's range (-1000..1000,
# include/uapi/linux/oom.h), or 1001, above every process, for "kills nothing".
OomAdj = Annotated[int, Field(ge=-1000, le=1001)]
Count = Annotated[int, Field(ge=0, le=1000)]  # cached-process counts


class MemorySpec(_Model):
    ram_mb: int = Field(ge=256, le=65536)
    # Carve-outs (modem, GPU, TrustZone) plus kernel text/data: RAM userspace never sees.
    # None → 12% of RAM (a 1 GB Go phone reports MemTotal ≈ 880 MB; calibration).
    reserved_mb: int | None = Field(default=None, ge=0, le=65536)
    swappiness: int = Field(default=60, ge=0, le=200)  # vm.swappiness, Linux default
    # The kernel's dynamic memory inside MemTotal: slab, page tables, kernel stacks,
    # driver allocations (/proc/meminfo Slab + KernelStack + PageTables + the rest that
    # no process or cache holds). Unreclaimable and charged to no memory cgroup, so it
    # lowers lmkd's mem_pressure (RAM use over RAM + swap use) as well as free memory.
    kernel_mb: float = Field(default=0.0, ge=0, le=65536)
    watermark_scale_factor: int = Field(default=10, ge=1, le=1000)  # mm/page_alloc.c
    # vm.extra_free_kbytes (Android kernels before 5.4): free memory kswapd keeps above
    # the min watermark on top of the usual gap; ActivityManager's ProcessList writes
    # width * height * 4 * 3 / 1024 (three screens of 32-bit pixels).
    extra_free_kbytes: int = Field(default=0, ge=0, le=4_194_304)
    # zRAM: size as a fraction of RAM and the compression ratio (the kernel's zram
    # docs expect ~2:1; lz4 ≈ 2.6:1 on desktop samples, lower on small devices).
    zram_fraction: float = Field(default=0.5, ge=0, le=2)
    zram_ratio: float = Field(default=2.0, gt=1, le=10)
    # Reclaim CPU costs in reference cycles per 4 KB page (calibration constants:
    # scanning a page — LRU isolation, the rmap walk that checks its referenced bits,
    # putback — ~2 µs on a 1 GHz A53; lz4 ~350 MB/s compress, ~1.3 GB/s decompress).
    scan_cycles_per_page: int = Field(default=2_000, ge=0, le=_MAX_CYCLES)
    compress_cycles_per_page: int = Field(default=12_000, ge=0, le=_MAX_CYCLES)
    decompress_cycles_per_page: int = Field(default=3_000, ge=0, le=_MAX_CYCLES)
    # zRAM's compression streams (/sys/block/zram0/max_comp_streams): a thread that
    # compresses holds one, and the others wait. 3.15–4.6 kernels default to 1; 0 means
    # one per CPU (the 4.7+ default, nobody waits).
    zram_streams: int = Field(default=0, ge=0, le=64)
    # vm.page-cluster: a swap-in reads 2**n slots around the faulting one (swap
    # readahead). Kernels before 4.15 also do this for zRAM, decompressing every page.
    # The kernel default is 3; 0 (one page) unless a profile says otherwise.
    page_cluster: int = Field(default=0, ge=0, le=5)
    # The rmap walk's cost per extra mapping of a shared file page (page_referenced on
    # each scan, try_to_unmap on eviction: the page-table lookup of each mapping VMA;
    # calibration constant, "lists" model: the preloaded image's pages).
    rmap_cycles_per_mapping: int = Field(default=1_000, ge=0, le=_MAX_CYCLES)
    # A scanned page that its process used recently is found referenced and rotated
    # instead of reclaimed. "Recently" = the pages touched, decayed with this time
    # constant (roughly one LRU scan cycle; calibration constant).
    referenced_window_ms: float = Field(default=1000.0, gt=0, le=3_600_000)  # ≤ an hour
    # Pages per reclaim pass (kswapd and direct reclaim): the kernel's SWAP_CLUSTER_MAX
    # (32). A larger value is a simulation granularity for hour-long workloads — the same
    # pages are reclaimed, in fewer, bigger steps.
    reclaim_batch_pages: int = Field(default=32, ge=1, le=4096)
    # How reclaim picks pages (device/memory.py LRU_MODELS): "recency" — one recency
    # order over processes, referenced pages by recent use; "lists" — Linux's inactive
    # and active lists per process, with workingset refault detection.
    lru: Literal["recency", "lists"] = "recency"
    # Locality of file-page uses ("lists" model; calibration constants): each process's
    # hot pages — this fraction of its file working set — take ``hot_use_share`` of its
    # uses, the cold tail the rest. 0: uses are uniform over the working set.
    hot_fraction: float = Field(default=0.0, ge=0, lt=1)
    hot_use_share: float = Field(default=0.0, ge=0, le=1)
    # The kernel's version, major.minor: the LRU lists' rules changed in 4.7
    # (memcg-aware workingset) and 4.8 (inactive_list_is_low for file pages).
    kernel_version: str = Field(default="4.4", pattern=r"^[2-9]\.[0-9]{1,2}$")

    @property
    def kernel(self) -> tuple[int, int]:
        major, minor = self.kernel_version.split(".")
        return int(major), int(minor)

    @model_validator(mode="after")
    def _hot_set_whole(self) -> MemorySpec:
        if (self.hot_fraction > 0) != (self.hot_use_share > 0):
            raise ValueError(
                "hot_fraction and hot_use_share go together: both 0 (uses are uniform) "
                f"or both above 0, got {self.hot_fraction} and {self.hot_use_share}"
            )
        return self

    @model_validator(mode="after")
    def _reserved_below_ram(self) -> MemorySpec:
        if self.reserved_mb is not None and self.reserved_mb >= self.ram_mb:
            raise ValueError(f"reserved_mb ({self.reserved_mb}) must be below ram_mb")
        if self.kernel_mb * 256 >= self.total_pages - self.reserved_pages:
            raise ValueError(f"kernel_mb ({self.kernel_mb}) must be below MemTotal")
        return self

    @property
    def total_pages(self) -> int:
        return self.ram_mb * 256

    @property
    def reserved_pages(self) -> int:
        mb = self.reserved_mb if self.reserved_mb is not None else round(self.ram_mb * 0.12)
        return mb * 256


class StorageSpec(_Model):
    type: Literal["emmc", "ufs"]
    capacity_gb: int = Field(ge=1, le=4096)
    # Request service times (calibration: eMMC 4.5/5.0 random 4 KB reads ~0.2–0.4 ms,
    # UFS 2.x ~0.1 ms; per extra page at sequential speed ~100 MB/s eMMC, 400 MB/s UFS).
    read_latency_us: float | None = Field(default=None, gt=0, le=_MAX_LATENCY_US)
    write_latency_us: float | None = Field(default=None, gt=0, le=_MAX_LATENCY_US)
    per_page_us: float | None = Field(default=None, ge=0, le=_MAX_LATENCY_US)
    # CPU per request in the queue thread (mmcqd), reference cycles; None → by type.
    # Calibration: the eMMC path on 3.x/4.x kernels prepares and maps the request, does
    # cache maintenance on its buffers, and polls the card's busy status (CMD13) in
    # mmcqd's own context — ~0.2 ms per request on an A53; UFS hands off to the
    # controller's queue (~0.05 ms).
    cycles_per_request: int | None = Field(default=None, ge=0, le=_MAX_CYCLES)
    readahead_pages: int = Field(default=32, ge=1, le=512)  # VM readaround on a fault
    # How the FTL picks a garbage-collection victim (mqoe.device.ftl): "cost-benefit"
    # (valid share and age, as log-structured systems do) or "greedy" (fewest valid
    # pages). Device firmware does not publish it; the default is a fitted choice (the
    # calibration ledger, docs/decisions/0003-flash-gc.md).
    gc_policy: Literal["greedy", "cost-benefit"] = "cost-benefit"
    # The block queue's discard_granularity (KB); ext4's FITRIM skips free extents
    # shorter than it. None → by type: eMMC 4096 (Linux mmc: pref_erase, 4 MiB for a
    # card of 1 GiB or more, mmc_init_erase; discard_granularity = pref_erase << 9,
    # mmc_queue_setup_discard), UFS 4 (assumed: an OPTIMAL UNMAP GRANULARITY of one
    # 4 KB block; sd_config_discard takes max(physical block, unmap granularity)).
    discard_granularity: int | None = Field(default=None, ge=1, le=1 << 20)

    @property
    def discard_granularity_kb(self) -> int:
        if self.discard_granularity is not None:
            return self.discard_granularity
        return 4096 if self.type == "emmc" else 4

    @property
    def request_cycles(self) -> int:
        if self.cycles_per_request is not None:
            return self.cycles_per_request
        return 200_000 if self.type == "emmc" else 50_000

    @property
    def read_us(self) -> float:
        return self.read_latency_us or (300.0 if self.type == "emmc" else 100.0)

    @property
    def write_us(self) -> float:
        return self.write_latency_us or (500.0 if self.type == "emmc" else 150.0)

    @property
    def page_us(self) -> float:
        if self.per_page_us is not None:
            return self.per_page_us
        return 40.0 if self.type == "emmc" else 10.0


class VideoSpec(_Model):
    """Per-device cost of playing video (calibration constants, reference cycles).

    Decoding is in hardware, but the CPU still parses, feeds and returns buffers; the
    player composites each frame and SurfaceFlinger composes the screen. Defaults are
    mid-range guesses pending a fit to the memory-pressure study's measurements (documented per
    profile)."""

    decode_cycles_per_mpixel: float = Field(default=2.0e6, ge=0, le=_MAX_CYCLES)  # HW decode
    # Player compositor per megapixel of video. Fitted on the Nokia 1 with its own
    # governor (interactive) and hotplug (hps): 1080p30 at Normal drops ~18% of frames
    # (the memory-pressure study's per-run table: 18.4 ± 3.3%) while the video threads'
    # Running time at 480p60 Normal stays within 25% of 69.0 s (docs/calibration-ledger.md;
    # 13.0e6 when every core ran at its top clock). Work is in reference cycles, so the
    # same constant serves every phone (faster cores finish it sooner).
    compose_cycles_per_mpixel: float = Field(default=11.0e6, ge=0, le=_MAX_CYCLES)
    main_cycles_per_frame: float = Field(default=1.5e6, ge=0, le=_MAX_CYCLES)  # browser main
    surfaceflinger_cycles_per_frame: float = Field(default=0.8e6, ge=0, le=_MAX_CYCLES)
    # Frame-to-frame spread of decode/composite cost (I/P/B frames, scene content): the
    # sigma of a mean-one lognormal multiplier; 0 = every frame costs the same.
    frame_cost_sigma: float = Field(default=0.25, ge=0, le=2)


class LmkSpec(_Model):
    """lmkd and ActivityManager trim configuration (AOSP lmkd and ProcessList.java)."""

    # vmpressure: level → minimum killable oom_score_adj (legacy lmkd, memory-pressure study);
    # minfree: the (minfree KB, adj) table; psi: lmkd's PSI thresholds.
    mode: Literal["vmpressure", "minfree", "psi"] = "vmpressure"
    minfree_kb: Annotated[
        tuple[Annotated[int, Field(ge=0, le=64 * 1024 * 1024)], ...],  # ≤ 64 GB, in KB
        Field(strict=False, max_length=6),  # lmkd: at most 6 levels (MAX_TARGETS)
    ] = (
        12288,
        18432,
        24576,
        36864,
        43008,
        49152,
    )  # AOSP ProcessList.java mOomMinFreeLow
    minfree_adj: Annotated[tuple[OomAdj, ...], Field(strict=False, max_length=6)] = (
        0,
        100,
        200,
        250,
        900,
        950,
    )  # AOSP ProcessList.java oom_adj levels
    # MediaTek's in-kernel LMK (drivers/staging/android/lowmemorykiller.c of its 3.x
    # kernels): on a phone with under 1 GB of RAM, with more than half (three quarters)
    # of swap used, a matched level above the fourth falls back one (two) levels, not
    # below the fourth ("to_be_aggressive"). minfree mode only.
    swap_aggressive: bool = False
    medium_adj: OomAdj = 800  # vmpressure medium (≥ 60) kills cached/background (CoNEXT 2022)
    critical_adj: OomAdj = 0  # vmpressure critical (≥ 95) makes the foreground killable
    # Legacy lmkd's swap-aware filter of vmpressure events (lmkd.cpp mp_event_common,
    # Android 9–10): mem_pressure = 100 × RAM usage / (RAM + swap usage). With
    # ``critical_upgrade`` an event below critical becomes critical when mem_pressure <
    # ``upgrade_pressure`` (swapping too much); while free swap ≥
    # ``swap_free_low_percentage`` % of swap, events are ignored when mem_pressure >
    # ``downgrade_pressure`` and critical ones become medium when it is >
    # ``upgrade_pressure``. AOSP defaults (off, 100, 100, 10) leave events unfiltered;
    # Android Go sets on/40/60 (build/make/target/board/go_defaults_common.prop).
    critical_upgrade: bool = False
    upgrade_pressure: int = Field(default=100, ge=0, le=100)
    downgrade_pressure: int = Field(default=100, ge=0, le=100)
    swap_free_low_percentage: int = Field(default=10, ge=0, le=100)
    # lmkd's ro.lmk.kill_heaviest_task (vmpressure and psi modes): among processes of
    # the victim's adj, kill the heaviest, or (False) the one whose adj was set least
    # recently (find_and_kill_process → proc_adj_lru). Android Go sets False
    # (build/make/target/board/go_defaults_common.prop). The in-kernel LMK (minfree
    # mode) always takes the heaviest.
    kill_heaviest_task: bool = True
    # ro.config.per_app_memcg (userspace lmkd, vmpressure and psi modes): each app in its
    # own memory cgroup, whose memory.soft_limit_in_bytes lmkd writes from the app's adj
    # (cmd_procprio); the kernel reclaims from cgroups over their soft limit first.
    # lmkd defaults it to ro.config.low_ram; mqoe leaves it off unless a profile sets it:
    # its apps are one process each, where a browser runs several, each in its own
    # cgroup with its own limit (docs/decisions/0002, Session 25).
    per_app_memcg: bool = False
    # Stall thresholds are per PSI window of 1 s (lmkd's PSI_WINDOW_SIZE_MS).
    # None: 70, or 200 on low-RAM devices (AOSP lmkd's default)
    psi_partial_stall_ms: int | None = Field(default=None, ge=1, le=1000)
    psi_complete_stall_ms: int = Field(default=700, ge=1, le=1000)  # AOSP lmkd default
    # lmkd's CPU per event (reads /proc/meminfo, zoneinfo)…
    event_cycles: int = Field(default=200_000, ge=0, le=_MAX_CYCLES)
    kill_cycles: int = Field(default=2_000_000, ge=0, le=_MAX_CYCLES)  # …and per kill
    kill_free_delay_ms: float = Field(default=50.0, ge=0, le=_MAX_DELAY_MS)  # SIGKILL → freed
    # ActivityManager: cached+empty count at or below which fg apps get RUNNING_MODERATE,
    # LOW, CRITICAL trims (memory-pressure study: 6/5/3 on the 1 GB Go phone; AOSP
    # ProcessList.java defaults 5/3).
    trim_cached_thresholds: Annotated[tuple[Count, Count, Count], Field(strict=False)] = (6, 5, 3)

    @model_validator(mode="after")
    def _tables_match(self) -> LmkSpec:
        if len(self.minfree_kb) != len(self.minfree_adj):
            raise ValueError("minfree_kb and minfree_adj must have the same length")
        return self


class GpuSpec(_Model):
    """GPU-buffer compression costs (GPU-buffer study). LZ4 work is timed on the calibration host
    (``mqoe calibrate lz4``, the packaged ``lz4_table.json``) and charged to the phone in
    reference cycles: host ns × ``lz4_cycles_per_host_ns``. Reference cycles make the one
    constant serve every phone (faster cores finish sooner)."""

    # Fitted so that decompressing 100 MB of the app catalogue's background buffers page
    # by page takes ≈ 575 ms on the Nexus 5 (GPU-buffer study: the median user-tolerable delay was
    # what ~100 MB took there), with the packaged table; it folds in the per-page work
    # around LZ4 (page allocation, IOMMU and page-table updates). Refit with your own table.
    lz4_cycles_per_host_ns: float = Field(default=55.0, gt=0, le=10_000)


class DisplaySpec(_Model):
    # 16384 px: the largest texture mobile GPUs take; no phone panel comes close (4K).
    width_px: int = Field(ge=1, le=16384)
    height_px: int = Field(ge=1, le=16384)
    refresh_hz: float = Field(default=60.0, gt=0, le=240)


class DeviceProfile(_Model):
    """One phone model. ``name`` is the catalogue key (``mqoe run … --profile NAME``)."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    display_name: str = Field(min_length=1)
    description: str = ""
    soc: str = Field(min_length=1)
    android_version: str = Field(pattern=r"^\d+(\.\d+)*$")
    low_ram: bool = False  # ro.config.low_ram (Android Go)
    tier: Literal["entry", "low", "mid", "high"] | None = None
    cpu: CpuSpec
    memory: MemorySpec
    storage: StorageSpec
    display: DisplaySpec
    lmk: LmkSpec = LmkSpec()
    video: VideoSpec = VideoSpec()
    gpu: GpuSpec = GpuSpec()
    # Where the numbers come from, per section (REQUIRED_SOURCES at least).
    sources: dict[str, str]

    @field_validator("sources")
    @classmethod
    def _sources_cover_sections(cls, sources: dict[str, str]) -> dict[str, str]:
        missing = [k for k in REQUIRED_SOURCES if not sources.get(k, "").strip()]
        if missing:
            raise ValueError(f"[sources] must name a source for: {', '.join(missing)}")
        return sources


__all__ = [
    "CPUSET_GROUPS",
    "PER_CLUSTER_TABLES",
    "REQUIRED_SOURCES",
    "BoostSpec",
    "ClusterPower",
    "ClusterSpec",
    "CoreType",
    "Count",
    "CpuSpec",
    "DeviceProfile",
    "DisplaySpec",
    "GovernorSpec",
    "GpuSpec",
    "HmpSpec",
    "HotplugSpec",
    "InteractionBoostSpec",
    "LmkSpec",
    "MemorySpec",
    "OomAdj",
    "PowerProfileSpec",
    "SchedSpec",
    "SocCluster",
    "SocRef",
    "SocSpec",
    "StorageSpec",
    "Tunable",
    "Tunables",
    "VideoSpec",
]
