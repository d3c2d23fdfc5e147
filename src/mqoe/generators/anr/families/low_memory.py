"""Low-memory scenarios: waiting for the GC, a lock held across a GC, the kernel
reclaiming pages under the main thread (lmk)."""

from __future__ import annotations

from mqoe.generators.anr.scenario import _Ctx, _Scenario
from mqoe.generators.anr.vocabulary import (
    _T,
    ACTIVITY_H,
    GC_RUN,
    GC_WAIT,
    POOL_BOTTOM,
    RECLAIM_KERNEL,
    RECYCLER,
)


def _low_memory_gc_wait(c: _Ctx) -> _Scenario:
    main = _T(
        "main",
        "WaitingForGcToComplete",
        "S",
        "mid",
        [
            *GC_WAIT,
            "jn:android.graphics.BitmapFactory.nativeDecodeAsset",
            "j:android.graphics.BitmapFactory.decodeStream",
            "j:android.graphics.drawable.Drawable.createFromResourceStream",
            "j:android.content.res.ResourcesImpl.loadDrawableForCookie",
            "j:android.content.res.ResourcesImpl.loadDrawable",
            "j:android.content.res.Resources.getDrawable",
            "j:android.widget.ImageView.resolveUri",
            "j:android.widget.ImageView.setImageResource",
            f"j:{c.a}.ui.FeedAdapter.onBindViewHolder",
            *RECYCLER,
        ],
    )
    heap = _T("HeapTaskDaemon", "Runnable", "R", "high", GC_RUN, daemon=True)
    return _Scenario([main, heap], [], [("app", "main")], 0, {})


def _low_memory_lock_gc(c: _Ctx) -> _Scenario:
    name = str(c.g.rng.choice(["glide-disk-cache-thread-0", "pool-4-thread-2"]))
    main = _T(
        "main",
        "Blocked",
        "S",
        "mid",
        [
            f"j:{c.a}.cache.ImageCache.get",
            "-wait:C",
            f"j:{c.a}.ui.AvatarView.bind",
            f"j:{c.a}.ui.FeedAdapter.onBindViewHolder",
            *RECYCLER,
        ],
    )
    worker = _T(
        name,
        "WaitingForGcToComplete",
        "S",
        "low",
        [
            *GC_WAIT,
            "j:java.util.Arrays.copyOf",
            "j:java.util.ArrayList.grow",
            "j:java.util.ArrayList.add",
            f"j:{c.a}.cache.ImageCache.put",
            "-lock:C",
            f"j:{c.a}.cache.ImageCache{c.anon}.run",
            *POOL_BOTTOM,
        ],
    )
    return _Scenario([main, worker], [], [("app", name)], 1, {"C": "java.util.LinkedHashMap"})


def _low_memory_lmk(c: _Ctx) -> _Scenario:
    main = _T(
        "main",
        "Native",
        "D",
        "mid",
        [
            *RECLAIM_KERNEL,
            "j:android.view.LayoutInflater.inflate",
            "j:android.view.LayoutInflater.inflate",
            f"j:{c.a}.ui.DetailActivity.onCreate",
            "j:android.app.Activity.performCreate",
            "j:android.app.Instrumentation.callActivityOnCreate",
            "j:android.app.ActivityThread.performLaunchActivity",
            "j:android.app.ActivityThread.handleLaunchActivity",
            *ACTIVITY_H,
        ],
    )
    return _Scenario([main], [], [("app", "main")], 0, {})
