"""Live configuration reload: the controller watches its configuration file and applies a change without resetting a
BGP session that the change does not concern.

A ConfigMap update reaches the pod as kubelet's atomic swap of the volume's `..data` symlink, so the path bgpadv was
given (kept as given, never resolved: `bgpadv.core.runfiles.controller_argv`) names a new file with a new inode. The
`ConfigFileWatch` thread polls `os.stat` of that path (which follows the symlinks) every `interval` seconds and,
when the file's identity or content changed, queues `ConfigFileChanged` for the controller's loop. The loop reads
and validates the file and classifies the change (`classify`):

- **live**: only `networks` (selector, subnets, host routes), `nextHop`, `attributes`, `policies`, the peers'
  `exportFilter` or `safety` changed. The controller swaps its configuration, planner, guard and withdrawal hold
  and replans in full; the speaker diffs the plan against what ExaBGP holds, so exactly the routes whose prefix,
  next hop or attributes changed are sent. A deliberate edit is applied whatever it withdraws (the fail-static hold
  is for a partial view of the cluster, not for an operator's decision). ExaBGP and every session stay as they are.
- **controller**: anything else the controller alone uses (`kubernetes`, `metrics`, `exabgp` flow control,
  `nodeName`, `nextHopSelf`, following RouteAdvertisements): the controller exits and the API shim starts a new one
  on the new file at once. ExaBGP keeps every session and route; the new controller relearns what ExaBGP holds
  before it changes anything (as after any controller crash).
- **peers**: peers were only added or removed (every kept peer's session settings, `localASN` and `routerID` as
  they were; anything else changed is live): the controller withdraws every route from the removed peers, renders
  the new ExaBGP configuration over the running one (`<runtime dir>/exabgp.conf`, atomically) and sends ExaBGP
  SIGUSR1 (ExaBGP 5's reload: a neighbor whose block is unchanged keeps its session and its RIB, a new one is
  started, a removed one is stopped; the API process keeps running), then swaps its own configuration live: the
  speaker learns the new peer set (a new peer starts empty and gets the whole desired set, which ExaBGP queues until
  its session is up), and the BFD sessions follow. The same move runs when the node's labels select other peers
  (`peers[].nodeSelector`, `bgpadv.runtime.peering`). No controller restart, no session reset.
- **exabgp**: ExaBGP's own configuration changed otherwise (a kept peer's session settings, `localASN`,
  `routerID`): the controller rewrites ExaBGP's configuration and reloads it as above (a changed neighbor is
  re-established), then exits as for **controller**, so that the new controller's speaker relearns ExaBGP's RIB.
- **refused**: the new file does not parse or validate. Nothing changes; an error is logged with every problem,
  `bgpadv_config_reloads_total{result="refused"}` counts it. A controller that starts while the file is invalid
  (after a crash, or one restarted for an earlier change) runs the last good configuration, kept in the runtime
  directory (`config.last-good.yaml`, the validated bytes), and counts the file as refused. A Kubernetes Event is
  not posted: the ConfigMap is unknown to bgpadv (it knows a file) and the pod's own name is not given to it; the
  log line and the metric are what an operator sees (an alert can be built on the counter).

`bgpadv_config_last_reload_success_timestamp_seconds` is the wall time of the configuration in force: set when a
controller starts on a valid file and on every live reload.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bgpadv.config import Config, ConfigError, PeerConfig, load
from bgpadv.core.runfiles import PID_FILE
from bgpadv.runtime.lifecycle import CANDIDATE, EXABGP_CONF, LAST_GOOD
from bgpadv.speaker.exabgp_config import render_exabgp_config, write_private

log = logging.getLogger(__name__)

"""In the runtime directory: the bytes of the last configuration file this pod validated."""

LIVE_FIELDS = ("networks", "next_hop", "attributes", "policies", "safety")
"""Configuration fields the controller applies without a restart (except `networks.followRouteAdvertisements`,
which changes the watched resources)."""


@dataclass(frozen=True, slots=True)
class ConfigFileChanged:
    """Queued by `ConfigFileWatch` when the configuration file's identity or content changed."""


def fingerprint(path: str | os.PathLike[str]) -> tuple[int, int, int, int, str] | None:
    """What identifies the file's current version: device, inode, mtime, size and a digest of its bytes (None when
    it cannot be read, e.g. between kubelet's steps). `os.stat` follows the `..data` symlink to the new file."""
    try:
        st = os.stat(path)
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size, digest)


class ConfigFileWatch:
    """A daemon thread that calls `emit(ConfigFileChanged())` when `path`'s content changed; polls every `interval`
    seconds (inotify would miss nothing more: kubelet's swap replaces a symlink, which a poll of the resolved file
    sees as a new inode)."""

    def __init__(
        self,
        path: str,
        emit: Callable[[object], None],
        interval: float = 1.0,
        seen: tuple[int, int, int, int, str] | None = None,
    ) -> None:
        """`seen`: the fingerprint taken before the running configuration was read (default: now), so that a change
        made while the controller started is not missed."""
        self.path = path
        self.emit = emit
        self.interval = interval
        self._last = seen if seen is not None else fingerprint(path)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="config-watch", daemon=True)

    def start(self) -> ConfigFileWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def poll(self) -> bool:
        """Compare once; emit and return True when the content changed (not merely touched)."""
        now = fingerprint(self.path)
        if now is None or now == self._last:
            return False
        changed = self._last is None or now[4] != self._last[4]
        self._last = now
        if changed:
            self.emit(ConfigFileChanged())
        return changed

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()


def classify(old: Config, new: Config, render: Callable[[Config], str | None] | None = None) -> str:
    """ "unchanged", "live", "controller" or "exabgp" (see the module docstring). `render(config)`: ExaBGP's
    configuration for it; without it peers, local AS and router ID are compared directly."""
    if new == old:
        return "unchanged"
    if render is not None:
        if render(new) != render(old):
            return "exabgp"
    elif (_sessions(new.peers), new.local_asn, new.router_id) != (_sessions(old.peers), old.local_asn, old.router_id):
        return "exabgp"
    if new.networks.follow_route_advertisements != old.networks.follow_route_advertisements:
        return "controller"
    live = {f: getattr(old, f) for f in LIVE_FIELDS}
    if dataclasses.replace(new, peers=_sessions(new.peers), **live) != dataclasses.replace(
        old, peers=_sessions(old.peers)
    ):
        return "controller"
    return "live"


def peers_only_moved(old: Config, new: Config) -> bool:
    """`new` adds or removes peers and changes nothing else that needs a new controller: every peer in both has the
    same session settings (its `exportFilter` aside), the local AS and router ID are the same, any other change is
    live. What `Controller._move_peers` carries out without a restart."""
    before = {p.name: p for p in _sessions(old.peers)}
    if any(before.get(p.name, p) != p for p in _sessions(new.peers)):
        return False
    return classify(old, dataclasses.replace(new, peers=old.peers)) in ("unchanged", "live")


def _sessions(peers: Sequence[PeerConfig]) -> tuple[PeerConfig, ...]:
    """The peers without what the guard alone reads (`exportFilter`: applied live, the session stays)."""
    return tuple(p if p.export_filter is None else dataclasses.replace(p, export_filter=None) for p in peers)


@dataclass(frozen=True, slots=True)
class ReloadDecision:
    """What the controller does with a changed file: nothing ("keep": unchanged, refused, or ExaBGP could not be
    reloaded; when unchanged `config` is set, and the file's configuration, `Reloader.last_loaded`, is the
    configured one from now on), apply `config` in place ("live"), move to its peers live ("peers": withdraw from
    the removed ones, reload ExaBGP, swap; `Controller._move_peers`), or end its loop for a new controller
    ("restart")."""

    action: Literal["keep", "live", "peers", "restart"]
    config: Config | None = None


KEEP = ReloadDecision("keep")


def _write_private_bytes(path: Path, data: bytes) -> None:
    """`data` into `path`, created 0600 (an existing file is made 0600 before it is filled)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)


@dataclass
class Reloader:
    """The controller's side of a reload: where the file and ExaBGP's runtime files are, and how to count."""

    config_path: str
    api_argv: Sequence[str] = ()
    runtime_dir: Path | None = None
    counted: Callable[[str], None] = lambda _result: None  # "applied" | "refused" | "unchanged" (not counted)
    applied_at: Callable[[], None] = lambda: None
    last_loaded: Config | None = None
    """The file's configuration as last loaded (before `decide` narrows it)."""
    resignal_after: tuple[float, ...] = (0.5, 1.5, 3.5, 7.5, 15.5, 31.5, 63.5)
    """After a reload, SIGUSR1 again this many seconds after it. ExaBGP 5.0 drops a reload it gets while it still
    handles the previous signal, or while some peer has updates queued (`Reactor._pending_adjribout`: the reload is
    skipped, the signal forgotten), so a peer move right after another one, or during a bulk load, could leave ExaBGP
    on the old neighbors. Reloading an unchanged file changes nothing (every session kept), so the repeats are
    harmless; `tests/lab/test_fabric.py` moves peers twice in quick succession."""
    clock: Callable[[], float] = time.monotonic
    hold_seconds: float | None = None
    """`safety.holdSeconds` replaced by this value, below the configuration's floor, for a program that embeds the
    controller and must watch holds end in seconds (a test bench, `bgpadv_lab.short_hold`). The shipped commands
    never set it, and nothing in the environment, the file or the command line does."""
    _resignals: list[float] = dataclasses.field(default_factory=list, init=False, repr=False)

    def load(self) -> Config | None:
        """The new configuration, or None (refused: logged and counted). The file is read once; under `bgpadv run`
        the bytes that were validated are kept as the last good configuration (`start_config`)."""
        try:
            data = Path(self.config_path).read_bytes()
        except OSError as e:
            log.error("configuration change refused, cannot read %s: %s", self.config_path, e)
            self.counted("refused")
            return None
        staged = None
        if self.runtime_dir is not None:
            staged = self.runtime_dir / CANDIDATE
            _write_private_bytes(staged, data)  # 0600: it may hold an inline md5Password
        try:
            config = self._held(load(staged or self.config_path))
        except (ConfigError, OSError) as e:
            log.error(
                "configuration change refused, the running configuration stays: %s", e, extra={"path": self.config_path}
            )
            self.counted("refused")
            return None
        if staged is not None and self.runtime_dir is not None:
            os.replace(staged, self.runtime_dir / LAST_GOOD)
        self.last_loaded = config
        return config

    def _held(self, config: Config) -> Config:
        if self.hold_seconds is None:
            return config
        safety = dataclasses.replace(config.safety, hold_seconds=self.hold_seconds)
        return dataclasses.replace(config, safety=safety)

    def decide(self, running: Config, narrow: Callable[[Config], Config] = lambda config: config) -> ReloadDecision:
        """Read the changed file and decide against the `running` configuration (see the module docstring). An
        ExaBGP change is carried out here (its configuration rewritten and reloaded) before the restart is asked;
        a live change or a peer move is the caller's to apply, then `applied_live()`. `narrow` turns a
        configuration into what this instance runs of it (`bgpadv.runtime.peering.effective`: the peers its node
        serves): the changed file is narrowed before it is compared with the running (narrowed) configuration."""
        new = self.load()
        if new is None:
            return KEEP
        new = narrow(new)
        kind = classify(running, new, self.render if self.render(running) is not None else None)
        if kind == "unchanged":
            self.counted("unchanged")  # the file is back to the configuration in force: no longer stale
            # this instance runs the same, but the file may have changed what it does not serve (a peer for
            # another rack's nodes): with `config`, the caller keeps the file's configuration (`last_loaded`)
            return ReloadDecision("keep", new)
        if kind == "live":
            return ReloadDecision("live", new)
        if kind == "exabgp" and peers_only_moved(running, new):
            log.info("peers added or removed: moving to them live", extra={"path": self.config_path})
            return ReloadDecision("peers", new)  # the controller withdraws, reloads ExaBGP (reload_exabgp), swaps
        if kind == "exabgp" and not self.reload_exabgp(new):
            self.counted("refused")
            return KEEP
        log.info(
            "configuration change applied by a new controller: exiting, the API shim starts one on the new file",
            extra={"change": kind, "path": self.config_path},
        )
        return ReloadDecision("restart", new)

    def applied_live(self) -> None:
        """The controller applied a live change: count it and stamp the configuration's time."""
        self.counted("applied")
        self.applied_at()
        log.info("configuration change applied live", extra={"path": self.config_path})

    def start_config(self) -> Config | None:
        """The configuration a starting controller runs: the file, or, when it is invalid, the last good one this
        pod applied (so a controller restarted while the file is broken keeps the running configuration)."""
        config = self.load()
        if config is not None or self.runtime_dir is None:
            return config
        last = self.runtime_dir / LAST_GOOD
        try:
            config = self._held(load(last))
        except (ConfigError, OSError):
            return None
        log.warning("the configuration file is invalid: running the last good configuration", extra={"from": str(last)})
        self.last_loaded = config
        return config

    def render(self, config: Config) -> str | None:
        """ExaBGP's configuration for `config`, when this controller runs under `bgpadv run` (else None)."""
        if self.runtime_dir is None or not self.api_argv:
            return None
        return render_exabgp_config(config, self.api_argv)

    def reload_exabgp(self, config: Config) -> bool:
        """Write ExaBGP's new configuration over the running one and send ExaBGP SIGUSR1 (reload)."""
        text = self.render(config)
        if text is None or self.runtime_dir is None:
            log.error("peers changed but ExaBGP's runtime directory is unknown: restart bgpadv to apply them")
            return False
        write_private(self.runtime_dir / EXABGP_CONF, text)  # 0600: it holds the MD5 passwords
        pid = self._signal_exabgp()
        if pid is None:
            return False
        now = self.clock()
        self._resignals = [now + delay for delay in self.resignal_after]
        log.info("ExaBGP's configuration rewritten and reloaded (SIGUSR1)", extra={"pid": pid})
        return True

    def tick(self) -> None:
        """Repeat the last reload's signal when one of `resignal_after` is due (the controller's timers call it)."""
        now = self.clock()
        if not self._resignals or self._resignals[0] > now:
            return
        self._resignals = [t for t in self._resignals if t > now]
        pid = self._signal_exabgp()
        if pid is not None:
            log.debug("ExaBGP reload signalled again", extra={"pid": pid, "left": len(self._resignals)})

    def _signal_exabgp(self) -> int | None:
        """SIGUSR1 to ExaBGP (its pid file in the runtime directory); its pid, None when it cannot be signalled."""
        if self.runtime_dir is None:
            return None
        try:
            pid = int((self.runtime_dir / PID_FILE).read_text().strip())
            os.kill(pid, signal.SIGUSR1)
        except (OSError, ValueError) as e:
            log.error("cannot signal ExaBGP to reload its configuration: %s", e)
            return None
        return pid
