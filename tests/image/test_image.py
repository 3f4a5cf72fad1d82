"""The container image (Containerfile, scripts/build-image.sh): built for real with buildah, run as OpenShift runs it.

Path taken: buildah itself (Debian's package, vfs storage, chroot isolation), not the mmdebstrap-only fallback. The
session builds the image once with scripts/build-image.sh into a private store under .cache/containers (the base
image and its root filesystem tar stay cached there between runs; the bgpadv image is removed at the end). Then:

- `bgpadv --version`, and `bgpadv check-config` of a mounted configuration, run through the image's entry point as
  the arbitrary UID 1000720000 with GID 0 (`buildah run --isolation chroot --user 1000720000:0`); the configuration
  the image bakes at /etc/bgpadv/bgpadv.yaml is the placeholder that `check-config` and `run` refuse (safe by
  default: the image never peers with an address nobody chose);
- `bgpadv run` starts ExaBGP as that UID on a read-only root filesystem with only the runtime directory writable
  (a tmpfs where the pod has its emptyDir), in a private network namespace with only loopback (the peer and the
  API server are unreachable loopback addresses): ExaBGP accepts the account (it writes its pid file only after its
  privilege check) and runs until stopped, and a write anywhere else fails;
- ExaBGP's own privilege check passes for the account bgpadv renders, for several non-root users, and refuses the
  old fixed `root` in group 0;
- only the runtime directory (and Debian's sticky temp directories) is writable by group 0;
- the image's metadata (user, entry point, command, environment) is what deploy/ relies on.

Needs root, buildah and mmdebstrap (scripts/install-system-deps.sh installs both); skipped only without root, like
the lab tests. Selected alone with `-m image`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from bgpadv import __version__

pytestmark = pytest.mark.image

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / ".cache" / "containers" / "storage"
IMAGE = "localhost/bgpadv:test"
OPENSHIFT_USER = "1000720000:0"
BUILDAH = [
    "buildah",
    "--root",
    str(STORE),
    "--runroot",
    str(STORE.parent / "run"),
    "--storage-driver",
    "vfs",
]


def buildah(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BUILDAH, *args], capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    if os.geteuid() != 0:
        pytest.skip("needs root (buildah with chroot isolation, mount namespaces)")
    for tool in ("buildah", "mmdebstrap", "unshare"):
        assert shutil.which(tool), f"{tool} missing: run scripts/install-system-deps.sh"
    env = {**os.environ, "IMAGE": IMAGE, "BUILDAH_ROOT": str(STORE)}
    build = subprocess.run(
        ["bash", "scripts/build-image.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert build.returncode == 0, build.stdout + build.stderr
    assert build.stdout.strip().splitlines()[-1] == IMAGE
    try:
        yield IMAGE
    finally:
        buildah("rm", "--all")
        buildah("rmi", IMAGE)


@pytest.fixture(scope="module")
def container(image: str) -> Iterator[str]:
    result = buildah("from", "--name", "bgpadv-image-test", image)
    assert result.returncode == 0, result.stderr
    name = result.stdout.strip()
    try:
        yield name
    finally:
        buildah("rm", name)


def run_as(container: str, user: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return buildah("run", "--isolation", "chroot", "--user", user, container, "--", *argv)


def test_version_runs_through_the_entry_point_as_an_arbitrary_uid_with_gid_0(container: str) -> None:
    result = run_as(container, OPENSHIFT_USER, "/usr/local/bin/bgpadv-entrypoint", "--version")
    assert (result.returncode, result.stdout) == (0, f"bgpadv {__version__}\n"), result.stderr


def test_the_baked_configuration_is_the_placeholder_that_check_config_and_run_refuse(container: str) -> None:
    for argv in (["check-config"], ["run", "--runtime-dir", "/run/bgpadv", "--config"]):
        result = run_as(container, OPENSHIFT_USER, "/usr/local/bin/bgpadv-entrypoint", *argv, "/etc/bgpadv/bgpadv.yaml")
        assert result.returncode == 2, (argv, result.stdout, result.stderr)
        assert "peers[0].address: is the shipped placeholder 'REPLACE-WITH-YOUR-TOR-ADDRESS'" in result.stderr, argv


def test_a_mounted_configuration_checks_as_an_arbitrary_uid_with_gid_0(container: str, tmp_path: Path) -> None:
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "bgpadv.yaml").write_text(CONFIG)
    (conf / "kubeconfig").write_text(KUBECONFIG)
    conf.chmod(0o755)
    result = buildah(
        "run",
        "--isolation",
        "chroot",
        "--user",
        OPENSHIFT_USER,
        "--volume",
        f"{conf}:/etc/bgpadv:ro",
        container,
        "--",
        "/usr/local/bin/bgpadv-entrypoint",
        "check-config",
        "/etc/bgpadv/bgpadv.yaml",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "/etc/bgpadv/bgpadv.yaml: valid — local AS64513, peers: 127.0.0.2 (AS64512); "
        "ExaBGP accepts the rendered configuration\n"
    )


def test_the_default_user_is_65532_in_group_0(container: str) -> None:
    result = buildah("run", "--isolation", "chroot", container, "--", "id")
    assert result.stdout == "uid=65532(bgpadv) gid=0(root) groups=0(root)\n", result.stderr


def test_bfdd_carries_the_three_file_capabilities_frr_insists_on_and_nothing_else(container: str) -> None:
    # permitted only (+p, not effective): FRR raises them itself; without them bfdd exits at start-up (docs/bfd.md)
    result = run_as(container, OPENSHIFT_USER, "getcap", "/usr/lib/frr/bfdd")
    assert result.stdout.split() == ["/usr/lib/frr/bfdd", "cap_net_bind_service,cap_net_raw,cap_sys_admin=p"], (
        result.stderr
    )


def test_the_controllers_interpreter_carries_net_admin_and_net_raw_as_file_capabilities_and_nothing_else(
    container: str,
) -> None:
    # permitted only: the controller raises each when it imports routes (bgpadv.importer.capability) or has interface
    # peers (bgpadv.runtime.unnumbered)
    result = run_as(container, OPENSHIFT_USER, "getcap", "/opt/bgpadv/bin/python3-netadmin")
    assert result.stdout.split() == ["/opt/bgpadv/bin/python3-netadmin", "cap_net_admin,cap_net_raw=p"], result.stderr
    result = run_as(container, OPENSHIFT_USER, "getcap", "/opt/bgpadv/bin/python3")
    assert result.stdout.strip() == "", result.stdout
    chosen = run_as(
        container,
        OPENSHIFT_USER,
        "/opt/bgpadv/bin/python3",
        "-c",
        "from bgpadv.core.runfiles import controller_argv; print(controller_argv('/etc/bgpadv/bgpadv.yaml', "
        "no_shim=True)[0], controller_argv('/etc/bgpadv/bgpadv.yaml')[0])",
    )
    assert chosen.stdout.split() == ["/opt/bgpadv/bin/python3-netadmin", "/opt/bgpadv/bin/python3"], chosen.stderr


RAISE = {
    "CAP_NET_ADMIN": "from bgpadv.importer.capability import raise_net_admin; print(raise_net_admin())",
    "CAP_NET_RAW": "from bgpadv.runtime.unnumbered import raise_net_raw; print(raise_net_raw())",
}


def raise_with(container: str, interpreter: str, capability: str) -> subprocess.CompletedProcess[str]:
    """The controller's raise of `capability` under `interpreter`, as the import's or the unnumbered component's pod
    runs: an arbitrary UID, that capability alone in the bounding set, escalation allowed."""
    argv = ["--isolation", "chroot", "--user", OPENSHIFT_USER, "--cap-add", capability, container]
    return buildah("run", *argv, "--", interpreter, "-c", RAISE[capability])


@pytest.mark.parametrize("capability", sorted(RAISE))
def test_the_controller_raises_its_capability_only_where_the_container_grants_it(
    container: str, capability: str
) -> None:
    granted = raise_with(container, "/opt/bgpadv/bin/python3-netadmin", capability)
    assert granted.stdout.strip() == "None", granted.stdout + granted.stderr
    plain = raise_with(container, "/opt/bgpadv/bin/python3", capability)
    name = capability.removeprefix("CAP_")
    assert f"{name} is not in this process' permitted set" in plain.stdout, plain.stdout + plain.stderr


def test_every_module_the_service_loads_imports_from_the_trimmed_virtualenv(container: str) -> None:
    """The image drops the Kubernetes client's unused asyncio half; what `bgpadv run` and the controller import must
    still load (check-config alone would not notice)."""
    modules = (
        "bgpadv.runtime.wiring, bgpadv.runtime.controller, bgpadv.runtime.shim, bgpadv.sources.reflector, "
        "bgpadv.sources.client, bgpadv.observe.events"
    )
    code = f"import {modules}, bgpadv.observe.health"
    result = run_as(container, OPENSHIFT_USER, "python3", "-c", code)
    assert result.returncode == 0, result.stderr


# ExaBGP's own privilege check (`Daemon.drop_privileges`) with the environment bgpadv renders for the account it runs
# as, or with `daemon.user` forced to argv[1]. Prints the user ExaBGP read and whether the check passed.
CHECK = """
import os, sys
from bgpadv.config import parse
from bgpadv.speaker.exabgp_config import exabgp_environment
env = exabgp_environment(parse({"localASN": 1, "peers": [{"address": "192.0.2.1", "asn": 2}]}), "/run/bgpadv")
env.update({"exabgp.daemon.user": sys.argv[1]} if len(sys.argv) > 1 else {})
os.environ.update(env)
from exabgp.environment import getenv
from exabgp.reactor.daemon import Daemon
print(getenv().daemon.user, Daemon(None).drop_privileges())
"""


@pytest.mark.parametrize(
    ("user", "forced", "expected"),
    [
        pytest.param("65532:0", [], "bgpadv True", id="image-user"),
        pytest.param("65534:65534", [], "nobody True", id="nobody"),
        pytest.param("1000720000:65534", [], "nobody True", id="unknown-uid-non-zero-gid"),
        pytest.param("65532:0", ["root"], "root False", id="the-old-fixed-root-is-refused-in-group-0"),
    ],
)
def test_exabgp_accepts_the_account_bgpadv_renders_for_each_non_root_user(
    container: str, user: str, forced: list[str], expected: str
) -> None:
    result = run_as(container, user, "python3", "-c", CHECK, *forced)
    assert result.stdout.strip() == expected, result.stderr


def test_group_0_can_write_only_the_runtime_dir_and_the_sticky_temp_dirs(container: str) -> None:
    """What an arbitrary UID in group 0 could change even on a writable root: the runtime directory, and /tmp,
    /var/tmp and /run/lock (sticky and world-writable as on any Debian; read-only in the pod, where TMPDIR is the
    runtime directory)."""
    writable = ["(", "-perm", "-0002", "-o", "(", "-perm", "-0020", "-gid", "0", ")", ")"]
    scan = ["find", "/", "-xdev", *writable, "!", "-type", "l", "-printf", "%p %m %u:%g\n"]
    result = buildah("run", "--isolation", "chroot", "--user", "0:0", container, "--", *scan)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        "/run/bgpadv 775 bgpadv:root",
        "/run/lock 1777 root:root",
        "/tmp 1777 root:root",
        "/var/tmp 1777 root:root",
    ]


def test_the_image_metadata_is_what_deploy_relies_on(image: str) -> None:
    config = json.loads(buildah("inspect", "--type", "image", image).stdout)["OCIv1"]["config"]
    assert config["User"] == "65532:0"
    assert config["Entrypoint"] == ["/usr/local/bin/bgpadv-entrypoint"]
    assert config["Cmd"] == ["run", "--config", "/etc/bgpadv/bgpadv.yaml", "--runtime-dir", "/run/bgpadv"]
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["BGPADV_RUNTIME_DIR"] == env["TMPDIR"] == env["HOME"] == "/run/bgpadv"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert config["WorkingDir"] == "/run/bgpadv"


CONFIG = """\
localASN: 64513
peers:
  - {address: 127.0.0.2, asn: 64512}
kubernetes: {kubeconfig: /etc/bgpadv/kubeconfig}
metrics: {listen: "127.0.0.1:9179"}
"""

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
"""

# Runs as root inside `unshare --mount --net --pid --fork`: the container's root filesystem bind-mounted read-only,
# a tmpfs (the emptyDir) on the runtime directory, the configuration bind-mounted read-only (the ConfigMap), only
# loopback up; then `bgpadv run` as the arbitrary UID for a few seconds, and a look at what it left.
RUN_READ_ONLY = textwrap.dedent(
    """\
    set -eu
    R=$1 CONF=$2
    ip link set lo up
    mount --bind "$R" "$R"
    mount -o remount,bind,ro "$R"
    mount -t tmpfs -o mode=0777,size=16m emptydir "$R/run/bgpadv"
    mount --bind -o ro "$CONF" "$R/etc/bgpadv"
    mount --rbind /dev "$R/dev"
    mount -t proc proc "$R/proc"
    set +e
    timeout 8 chroot --userspec=1000720000:0 --groups=0 "$R" /usr/local/bin/bgpadv-entrypoint \\
        run --config /etc/bgpadv/bgpadv.yaml --runtime-dir /run/bgpadv
    echo "rc=$?"
    chroot --userspec=1000720000:0 --groups=0 "$R" sh -c 'touch /opt/bgpadv/x; touch /etc/x; touch /tmp/x' 2>&1
    echo "runtime=$(ls "$R/run/bgpadv" | tr '\\n' ' ')"
    echo "owner=$(stat -c %u:%g "$R/run/bgpadv/config.last-good.yaml")"
    """
)


def test_run_starts_exabgp_non_root_on_a_read_only_root_writing_only_the_runtime_dir(
    container: str, tmp_path: Path
) -> None:
    mounted = buildah("mount", container)
    assert mounted.returncode == 0, mounted.stderr
    rootfs = mounted.stdout.strip()
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "bgpadv.yaml").write_text(CONFIG)
    (conf / "kubeconfig").write_text(KUBECONFIG)
    conf.chmod(0o755)
    script = tmp_path / "run.sh"
    script.write_text(RUN_READ_ONLY)
    try:
        result = subprocess.run(
            ["unshare", "--mount", "--net", "--pid", "--fork", "--kill-child", "sh", str(script), rootfs, str(conf)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        buildah("umount", container)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "refusing to run as root" not in out and "could not drop privileges" not in out, out
    assert "rc=124" in out, out  # still running when `timeout` stopped it
    # ExaBGP saves its pid file only once its privilege check passed (and removes it when it stops)
    assert "Created PIDfile /run/bgpadv/exabgp.pid" in out, out
    # what is left after the SIGTERM stop: the last good bgpadv configuration (live reload, runtime/reload.py) and the
    # entry point's passwd/group for nss_wrapper; the rendered exabgp.conf (MD5 passwords), the drain marker and the
    # pid file are removed by the stop (nothing secret left behind), and nothing was written anywhere else
    assert "runtime=config.last-good.yaml group passwd \n" in out, out
    assert "owner=1000720000:0" in out, out
    for path in ("/opt/bgpadv/x", "/etc/x", "/tmp/x"):
        assert f"touch: cannot touch '{path}': Read-only file system" in out, out
