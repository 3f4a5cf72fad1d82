"""Sources: the only modules that talk to the Kubernetes API (or read manifests) and hold watched objects.

The official client's package `__init__` imports everything it ships (the dynamic client with jsonschema, the
websocket stream, leader election, informers) and `kubernetes.config`'s imports the kubeconfig loader with its
OAuth and Google auth stack: ~0.5 s before the controller's first request, for modules bgpadv never runs
(measured with `python -X importtime`). So the two packages are registered here without running their `__init__`;
their submodules import as usual (`kubernetes.client`, `kubernetes.config.incluster_config`), and the first use of a
name only the `__init__` defines runs it then (`kubernetes.watch.Watch`, `kubernetes.__version__`,
`kubernetes.config.load_config` keep working).

That holds for the client releases it was tested with (`TESTED_KUBERNETES`), whose package `__init__` only names the
version and imports its submodules, and which ship the submodules bgpadv imports. On any other client (its version
read from that `__init__`, without running it) the packages import as usual, whole, and one log line says so.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import re
import sys
from pathlib import Path

_LAZY_PACKAGES = ("kubernetes", "kubernetes.config")

TESTED_KUBERNETES = ((37, 0, 0), (37, 0, 3))
"""The lowest and highest client release the stand-in was tested with (`make compat` runs both; the range
pyproject.toml allows)."""

IMPORTED: tuple[str, ...] = ("client/__init__.py", "client/exceptions.py", "config/__init__.py")
IMPORTED += ("config/incluster_config.py", "config/kube_config.py", "config/config_exception.py")
"""The client's files bgpadv imports, relative to the package: the stand-in relies on them importing alone."""

_INIT_LINE = re.compile(r"""(__project__|__version__) = ['"][^'"]*['"]|from \. import \w+""")
_VERSION = re.compile(r"""^__version__ = ['"](\d+)\.(\d+)\.(\d+)['"]""", re.MULTILINE)


def client_refusal(package: Path) -> str | None:
    """Why the client installed in `package` (the `kubernetes` directory) is not one the stand-in was tested with,
    or None: a version outside `TESTED_KUBERNETES`, an `__init__` that does more than name the version and import
    submodules (running it later would then not be the same), or a file bgpadv imports that is missing."""
    try:
        init = (package / "__init__.py").read_text(encoding="utf-8")
    except OSError as e:
        return f"its __init__ cannot be read ({e.strerror})"
    found = _VERSION.search(init)
    version = tuple(int(part) for part in found.groups()) if found else None
    low, high = TESTED_KUBERNETES
    if version is None or not low <= version <= high:
        shown = ".".join(map(str, version)) if version else "of no version"
        return f"{shown} is not a tested release ({'.'.join(map(str, low))} to {'.'.join(map(str, high))})"
    lines = (line.strip() for line in init.splitlines())
    other = [line for line in lines if line and not line.startswith("#") and not _INIT_LINE.fullmatch(line)]
    if other:
        return f"its __init__ does more than import its submodules ({other[0]!r})"
    missing = [name for name in IMPORTED if not (package / name).is_file()]
    return f"{', '.join(missing)} missing" if missing else None


def _lazy_package(name: str) -> None:
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    module = importlib.util.module_from_spec(spec)
    initialized = False

    def attribute(attr: str) -> object:
        nonlocal initialized
        if attr.startswith("__") and attr != "__version__":
            raise AttributeError(attr)
        try:
            return importlib.import_module(f"{name}.{attr}")
        except ModuleNotFoundError as e:
            if e.name != f"{name}.{attr}":  # a submodule that exists but lacks a dependency: say so
                raise
        if not initialized:
            initialized = True
            spec.loader.exec_module(module)  # type: ignore[union-attr]  # the real __init__, once, on demand
            if attr in module.__dict__:
                return module.__dict__[attr]
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    module.__getattr__ = attribute  # type: ignore[method-assign]  # PEP 562: names the module does not hold yet
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)


def _install() -> None:
    spec = importlib.util.find_spec("kubernetes") if "kubernetes" not in sys.modules else None
    if spec is None or not spec.submodule_search_locations:
        return  # imported already (whole, left as it is), or not installed
    refusal = client_refusal(Path(next(iter(spec.submodule_search_locations))))
    if refusal is not None:
        logging.getLogger(__name__).warning(
            "the Kubernetes client is imported whole (slower start, same behaviour): %s", refusal
        )
        return
    for name in _LAZY_PACKAGES:
        _lazy_package(name)


_install()
