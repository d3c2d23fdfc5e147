"""App-defect scenarios: a busy loop, network I/O on the main thread, a deadlock
between the app's own threads."""

from __future__ import annotations

from mqoe.generators.anr.scenario import _Ctx, _Scenario
from mqoe.generators.anr.vocabulary import _T, ACTIVITY_H, MAIN_DISPATCH, POOL_BOTTOM, RESUME


def _app_defect_busy_loop(c: _Ctx) -> _Scenario:
    depth = int(c.g.rng.integers(2, 7))
    main = _T(
        "main",
        "Runnable",
        "R",
        "high",
        [
            *[f"j:{c.a}.util.JsonParser.parseValue"] * depth,
            f"j:{c.a}.util.JsonParser.parseObject",
            f"j:{c.a}.util.JsonParser.parse",
            f"j:{c.a}.data.FeedRepository.load",
            f"j:{c.a}.ui.FeedFragment.onViewCreated",
            "j:androidx.fragment.app.Fragment.performViewCreated",
            "j:androidx.fragment.app.FragmentStateManager.createView",
            "j:androidx.fragment.app.FragmentStateManager.moveToExpectedState",
            "j:androidx.fragment.app.FragmentManager.executeOpsTogether",
            "j:androidx.fragment.app.FragmentManager.execPendingActions",
            f"j:androidx.fragment.app.FragmentManager{c.anon}.run",
            "j:android.os.Handler.handleCallback",
            *MAIN_DISPATCH,
        ],
    )
    return _Scenario([main], [], [("app", "main")], 0, {})


def _app_defect_network_main(c: _Ctx) -> _Scenario:
    main = _T(
        "main",
        "Native",
        "S",
        "mid",
        [
            "n:libc:recvfrom",
            "jn:java.net.SocketInputStream.socketRead0",
            "j:java.net.SocketInputStream.socketRead",
            "j:java.net.SocketInputStream.read",
            "j:com.android.org.conscrypt.ConscryptEngineSocket$SSLInputStream.readFromSocket",
            "j:com.android.org.conscrypt.ConscryptEngineSocket$SSLInputStream.read",
            "j:okio.InputStreamSource.read",
            "j:okio.RealBufferedSource.indexOf",
            "j:okhttp3.internal.http1.Http1ExchangeCodec.readResponseHeaders",
            "j:okhttp3.internal.connection.Exchange.readResponseHeaders",
            "j:okhttp3.internal.http.CallServerInterceptor.intercept",
            "j:okhttp3.internal.connection.RealCall.execute",
            f"j:{c.a}.api.ApiClient.fetchConfig",
            f"j:{c.a}.MainActivity.onCreate",
            "j:android.app.Activity.performCreate",
            "j:android.app.Instrumentation.callActivityOnCreate",
            "j:android.app.ActivityThread.performLaunchActivity",
            "j:android.app.ActivityThread.handleLaunchActivity",
            *ACTIVITY_H,
        ],
    )
    return _Scenario([main], [], [("app", "main")], 0, {})


def _app_defect_app_deadlock(c: _Ctx) -> _Scenario:
    main = _T(
        "main",
        "Blocked",
        "S",
        "mid",
        [
            f"j:{c.a}.account.AccountStore.current",
            "-wait:L1",
            f"j:{c.a}.ui.HomeActivity.refresh",
            "-lock:L2",
            f"j:{c.a}.ui.HomeActivity.onResume",
            *RESUME,
        ],
    )
    worker = _T(
        "SyncEngine",
        "Blocked",
        "S",
        "low",
        [
            f"j:{c.a}.ui.HomeActivity.onAccountChanged",
            "-wait:L2",
            f"j:{c.a}.account.AccountStore.update",
            "-lock:L1",
            f"j:{c.a}.sync.SyncEngine.commit",
            f"j:{c.a}.sync.SyncEngine{c.anon}.run",
            *POOL_BOTTOM,
        ],
    )
    types = {"L1": f"{c.a}.account.AccountStore", "L2": f"{c.a}.ui.HomeActivity"}
    critical = [("app", "main"), ("app", "SyncEngine")]
    return _Scenario([main, worker], [], critical, 2, types, deadlock=True)
