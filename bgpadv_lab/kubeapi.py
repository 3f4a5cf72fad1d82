"""A real Kubernetes API for tests and benchmarks: etcd + kube-apiserver started by `scripts/kube/kube.sh`.

The binaries are built from their Go modules by `scripts/kube/build.sh` (into the kube cache, outside the
checkout; a no-op once built) and the upstream CRDs (OVN-K, IPAMClaim, NetworkAttachmentDefinition, KubeVirt's VMI)
are installed and Established before `up()` returns. The server runs with RBAC and service-account token signing,
without kubelet, controller-manager or scheduler: nothing creates default ServiceAccounts, collects garbage or
finishes a namespace deletion, and nothing removes finalizers but the test (as the real controllers would).

```
 test process ──kubectl (ip netns exec <netns>)──▶ kube-apiserver <listen>:<port> ──▶ etcd 127.0.0.1 (same netns)
 bgpadv in a worker namespace ──HTTPS, a ServiceAccount token or the admin certificate──▶ kube-apiserver
```

`RealApiServer` offers what the chain tests use of `FakeApiServer` (`write_kubeconfig`, `create`, `apply`,
`patch`, `patch_status`, `delete`, `get`, `list`, `events`, `compact`) through kubectl, so every fixture object is
checked by the real OpenAPI schema and CEL rules. The objects of `bgpadv_lab.objects` carry what the API server
assigns (uid, resourceVersion, creationTimestamp, generation): `applicable()` strips it, and `apply()` writes the
status in a second request where the kind has a status subresource, as the controllers that own it do.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from bgpadv_lab.frr import FrrRouter
from bgpadv_lab.netns import in_netns

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts" / "kube"

# Core kinds with a status subresource (the CRDs say it themselves: `subresources.status`).
_CORE_STATUS = {("v1", "Node"), ("v1", "Pod"), ("v1", "Namespace")}
_ASSIGNED = ("uid", "resourceVersion", "creationTimestamp", "generation", "deletionTimestamp", "managedFields")


def build() -> Path:
    """Build (if needed) the kube tools and CRDs; the tree holding bin/ and crds/."""
    out = subprocess.run(["bash", str(SCRIPTS / "build.sh")], check=True, stdout=subprocess.PIPE, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


def built() -> Path | None:
    """The tree if it is built already, else None (nothing is built)."""
    out = subprocess.run(
        ["bash", str(SCRIPTS / "build.sh"), "--print"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    return Path(out.stdout.strip()) if out.returncode == 0 else None


def shipped_base() -> list[dict]:
    """Every object of the shipped base, as `kubectl kustomize deploy/base` renders it (namespace `bgpadv`)."""
    kubectl = build() / "bin" / "kubectl"
    out = subprocess.run(
        [str(kubectl), "kustomize", str(ROOT / "deploy" / "base")], check=True, capture_output=True, text=True
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def shipped_rbac() -> list[dict]:
    """The shipped Namespace, ServiceAccount, ClusterRole and ClusterRoleBinding, and the namespaced Role and
    RoleBinding of bgpadv's own BGPSessionState objects (`bgpadv-session-state`), from `shipped_base()`."""
    wanted = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
    return [doc for doc in shipped_base() if doc["kind"] in wanted]


def shipped_crds() -> list[dict]:
    """The CustomResourceDefinitions bgpadv ships (BGPSessionState), from `shipped_base()`."""
    return [doc for doc in shipped_base() if doc["kind"] == "CustomResourceDefinition"]


def applicable(obj: dict) -> dict:
    """A copy of `obj` as a client writes it: no server-assigned metadata, no status."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _ASSIGNED}
    return {k: v for k, v in obj.items() if k not in ("status", "metadata")} | {"metadata": meta}


class KubectlError(RuntimeError):
    def __init__(self, argv: list[str], result: subprocess.CompletedProcess) -> None:
        super().__init__(f"kubectl {' '.join(argv)} exited {result.returncode}: {result.stderr.strip()}")
        self.stderr = result.stderr


class RealApiServer:
    """etcd + kube-apiserver in `workdir`, inside network namespace `netns` if given, the apiserver on
    `listen`:`port` (port None: a free one). `up()` starts it (and builds what is missing), `down()` stops exactly
    what it started."""

    def __init__(
        self, workdir: str | Path, *, netns: str | None = None, listen: str = "127.0.0.1", port: int | None = None
    ) -> None:
        self.dir = Path(workdir)
        self.netns = netns
        self.listen = listen
        self.port = port
        self.tree: Path | None = None
        self._status_kinds: set[tuple[str, str]] = set(_CORE_STATUS)

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def _kube_sh(self, *args: str) -> str:
        out = subprocess.run(["bash", str(SCRIPTS / "kube.sh"), *args], check=False, capture_output=True)
        if out.returncode != 0:
            raise RuntimeError(f"kube.sh {' '.join(args)} failed:\n{out.stderr.decode(errors='replace')[-4000:]}")
        return out.stdout.decode().strip()

    def up(self) -> Path:
        """Start (or restart what is not running); returns the admin kubeconfig."""
        args = ["up", str(self.dir), "--listen", self.listen]
        if self.port:
            args += ["--port", str(self.port)]
        if self.netns:
            args += ["--netns", self.netns]
        kubeconfig = Path(self._kube_sh(*args).splitlines()[-1])
        self.tree = built()
        env = dict(line.split("=", 1) for line in (self.dir / "kube.env").read_text().split() if "=" in line)
        self.port = int(env["port"])
        self.etcd_port = int(env["etcd_port"])
        self._read_crds()
        return kubeconfig

    def down(self) -> None:
        self._kube_sh("down", str(self.dir))

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver alone (etcd and its data stay); `up()` starts it again."""
        self._kube_sh("stop-apiserver", str(self.dir))

    def __enter__(self) -> RealApiServer:
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    def _read_crds(self) -> None:
        assert self.tree is not None
        for path in sorted((self.tree / "crds").glob("*.yaml")):
            for crd in yaml.safe_load_all(path.read_text()):
                if crd:
                    self._register_status_kinds(crd)

    def install_crds(self, crds: Iterable[dict]) -> None:
        """Create (or update) CustomResourceDefinitions beyond the upstream ones `up()` installs (bgpadv's own,
        `shipped_crds()`), and wait until the apiserver serves them (condition Established)."""
        crds = list(crds)
        if not crds:
            return
        self.apply(crds)
        names = [f"crd/{crd['metadata']['name']}" for crd in crds]
        self.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)
        for crd in crds:
            self._register_status_kinds(crd)

    def _register_status_kinds(self, crd: dict) -> None:
        spec = crd["spec"]
        for version in spec["versions"]:
            if (version.get("subresources") or {}).get("status") is not None:
                self._status_kinds.add((f"{spec['group']}/{version['name']}", spec["names"]["kind"]))

    def has_status_subresource(self, api_version: str, kind: str) -> bool:
        return (api_version, kind) in self._status_kinds

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "admin.kubeconfig"

    @property
    def url(self) -> str:
        host = f"[{self.listen}]" if ":" in self.listen else self.listen
        return f"https://{host}:{self.port}"

    def ca_data(self) -> str:
        return base64.b64encode((self.dir / "pki" / "ca.crt").read_bytes()).decode()

    def write_kubeconfig(self, path: str | Path, token: str | None = None) -> Path:
        """A kubeconfig for this server: the admin's client certificate, or a bearer `token` (a ServiceAccount's)."""
        path = Path(path)
        if token is None:
            text = self.kubeconfig.read_text()
        else:
            text = json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {"name": "test", "cluster": {"server": self.url, "certificate-authority-data": self.ca_data()}}
                    ],
                    "users": [{"name": "sa", "user": {"token": token}}],
                    "contexts": [{"name": "sa", "context": {"cluster": "test", "user": "sa"}}],
                    "current-context": "sa",
                }
            )
        path.write_text(text)
        path.chmod(0o600)
        return path

    # -- kubectl --------------------------------------------------------------------------------------------------
    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120.0
    ) -> subprocess.CompletedProcess:
        argv = [str(self.dir / "kubectl"), *args]
        result = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise KubectlError(list(args), result)
        return result

    def kubectl_json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    @staticmethod
    def _ref(api_version: str, kind: str) -> str:
        """`kind.version.group` as kubectl takes it (`nodes`, `virtualmachineinstances.v1.kubevirt.io`)."""
        group, _, version = api_version.rpartition("/")
        return f"{kind}.{version}.{group}" if group else kind

    def _target(self, api_version: str, kind: str, name: str, namespace: str | None) -> list[str]:
        args = [self._ref(api_version, kind), name]
        return [*args, "-n", namespace] if namespace else args

    # -- the FakeApiServer-like API ------------------------------------------------------------------------------
    def apply(self, objects: dict | Iterable[dict], *, manager: str = "bgpadv-tests") -> None:
        """Create or update objects with `kubectl apply` (server-side: the real schema, CEL rules and field
        validation run), then write each status that lives behind a status subresource."""
        objs = [objects] if isinstance(objects, dict) else list(objects)
        if not objs:
            return
        body = {"apiVersion": "v1", "kind": "List", "items": []}
        for obj in objs:
            api_version, kind = obj["apiVersion"], obj["kind"]
            written = applicable(obj)
            if "status" in obj and not self.has_status_subresource(api_version, kind):
                written["status"] = obj["status"]
            body["items"].append(written)
        self.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            f"--field-manager={manager}",
            "-f",
            "-",
            input=json.dumps(body),
        )
        for obj in objs:
            if "status" in obj and self.has_status_subresource(obj["apiVersion"], obj["kind"]):
                meta = obj["metadata"]
                self.patch_status(
                    obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"), {"status": obj["status"]}
                )

    create = apply
    load = apply

    def patch(self, api_version: str, kind: str, name: str, namespace: str | None, merge_patch: dict) -> dict:
        """A merge patch of the object itself (its status too, for a kind without a status subresource)."""
        target = self._target(api_version, kind, name, namespace)
        out = self.kubectl("patch", *target, "--type=merge", "-p", json.dumps(merge_patch), "-o", "json")
        return json.loads(out.stdout)

    def patch_status(self, api_version: str, kind: str, name: str, namespace: str | None, merge_patch: dict) -> dict:
        """A merge patch of the status: through the status subresource where the kind has one (KubeVirt's VMI has
        none: virt-controller and virt-handler write its status with the object)."""
        target = self._target(api_version, kind, name, namespace)
        sub = ["--subresource=status"] if self.has_status_subresource(api_version, kind) else []
        out = self.kubectl("patch", *target, *sub, "--type=merge", "-p", json.dumps(merge_patch), "-o", "json")
        return json.loads(out.stdout)

    def delete(
        self, api_version: str, kind: str, name: str, namespace: str | None = None, *, wait: bool = False
    ) -> None:
        """Delete an object; with finalizers it only gets a deletionTimestamp (`finalize` removes them)."""
        target = self._target(api_version, kind, name, namespace)
        self.kubectl("delete", *target, f"--wait={str(wait).lower()}", "--ignore-not-found")

    def finalize(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        """Remove every finalizer, as the owning controller does when it is done (a deleting object goes away)."""
        target = self._target(api_version, kind, name, namespace)
        self.kubectl("patch", *target, "--type=merge", "-p", '{"metadata":{"finalizers":null}}', check=False)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        target = self._target(api_version, kind, name, namespace)
        out = self.kubectl("get", *target, "-o", "json", "--ignore-not-found")
        return json.loads(out.stdout) if out.stdout.strip() else None

    def list(self, api_version: str, kind: str, namespace: str | None = None, label_selector: str = "") -> list[dict]:
        args = ["get", self._ref(api_version, kind), "-o", "json"]
        args += ["-n", namespace] if namespace else ["-A"]
        if label_selector:
            args += ["-l", label_selector]
        return json.loads(self.kubectl(*args).stdout)["items"]

    def events(self) -> list[dict]:
        """core/v1 Events in every namespace, oldest first (`kubectl get events -A`)."""
        items = self.list("v1", "Event")
        return sorted(items, key=lambda e: int(e["metadata"]["resourceVersion"]))

    def token(self, namespace: str, service_account: str, seconds: int = 3600) -> str:
        """A token of the ServiceAccount from the TokenRequest API (signed with the server's key)."""
        return self.kubectl(
            "create", "token", service_account, "-n", namespace, f"--duration={seconds}s"
        ).stdout.strip()

    def ensure_namespaces(self, *names: str) -> None:
        """Namespaces with their `default` ServiceAccount (no controller-manager creates it; pods need it)."""
        objs: list[dict] = []
        for name in names:
            objs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
            objs.append(
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": name}}
            )
        self.apply(objs)

    def cut_clients(self, netns: str) -> None:
        """Abort every TCP connection from namespace `netns` to the apiserver (`ss -K`): open watches end as on a
        network fault, the server keeps running, and the clients' next requests are authorized afresh."""
        sh = ["ip", "netns", "exec", netns, "ss", "-K", "dst", self.listen, "dport", "=", f":{self.port}"]
        subprocess.run(sh, check=True, capture_output=True)

    # -- etcd -----------------------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _etcd(self) -> Iterator[http.client.HTTPConnection]:
        if self.netns:
            with in_netns(self.netns):
                conn = http.client.HTTPConnection("127.0.0.1", self.etcd_port, timeout=10)
                conn.connect()
        else:
            conn = http.client.HTTPConnection("127.0.0.1", self.etcd_port, timeout=10)
        try:
            yield conn
        finally:
            conn.close()

    def _etcd_post(self, path: str, body: dict) -> dict:
        with self._etcd() as conn:
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"etcd {path}: {resp.status} {data[:400]!r}")
            return json.loads(data)

    def etcd_revision(self) -> int:
        """etcd's current revision (what the apiserver hands out as resourceVersions)."""
        key = base64.b64encode(b"/registry/").decode()
        answer = self._etcd_post("/v3/kv/range", {"key": key, "limit": 1, "keys_only": True})
        return int(answer["header"]["revision"])

    def compact(self) -> int:
        """Compact etcd at its current revision (physically): every older resourceVersion is gone from etcd; the
        apiserver answers 410 for what its watch cache cannot serve. Returns the revision."""
        revision = self.etcd_revision()
        self._etcd_post("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision


def wait_until(predicate, timeout: float, what: str, every: float = 0.2):
    """Poll `predicate` until it returns something truthy (the lab's one poll loop, `FrrRouter.wait_for`)."""
    return FrrRouter.wait_for(predicate, timeout, what, every)


def kube_possible() -> str | None:
    """Why the real-apiserver tier cannot run here (None: it can)."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if not os.path.exists("/usr/lib/frr/bgpd"):
        return "needs FRR"
    import shutil

    if built() is None and not shutil.which("go"):
        return "needs Go (and the Go module proxy) to build kube-apiserver and etcd"
    return None


class AsServiceAccount:
    """`api` seen with a ServiceAccount's token: `write_kubeconfig` writes a token kubeconfig (what
    `BgpadvInLab` calls); everything else is the admin's `RealApiServer`."""

    def __init__(self, api: RealApiServer, namespace: str, name: str) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name

    def write_kubeconfig(self, path: str | Path) -> Path:
        return self.api.write_kubeconfig(path, token=self.api.token(self.namespace, self.name))

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.api, attr)
