"""Sources: the only modules that talk to the Kubernetes API (or read manifests) and hold watched objects.

The official client's package `__init__` imports everything it ships (the dynamic client with jsonschema, the
websocket stream, leader election, informers) and `kubernetes.config`'s imports the kubeconfig loader with its
OAuth and Google auth stack: ~0.5 s before the controller's first request, for modules bgpadv never runs
(issue 19, measured with `python -X importtime`). So the two packages are registered here without running their
`__init__`; their submodules import as usual (`kubernetes.client`, `kubernetes.config.incluster_config`), and the
first use of a name only the `__init__` defines runs it then (`kubernetes.watch.Watch`, `kubernetes.__version__`,
`kubernetes.config.load_config` keep working).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

_LAZY_PACKAGES = ("kubernetes", "kubernetes.config")


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


for _name in _LAZY_PACKAGES:  # a package imported already (whole) is left as it is
    _lazy_package(_name)
