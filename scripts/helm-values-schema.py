#!/usr/bin/env python3
"""Write the configuration's JSON Schema into the Helm chart's values.schema.json, under `config`.

The chart's own keys (mode, image, bfd, ...) are written by hand in deploy/helm/bgpadv/values.schema.json; `config`
is bgpadv's configuration file, whose schema is `bgpadv check-config --schema`. This script puts that schema's body
at `properties.config` and its definitions at the top-level `$defs` (its `$ref`s say `#/$defs/NAME`, which resolve
against the document's root), so that `helm lint`, `helm template` and `helm install` refuse a typo'd key
(`peers[0].adress`) or a wrong type before anything reaches the cluster. A test checks that the file is what this
script writes: run it after changing the configuration's schema.

    python3 scripts/helm-values-schema.py           # rewrite the file
    python3 scripts/helm-values-schema.py --check   # exit 1 when the file is stale
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VALUES_SCHEMA = ROOT / "deploy" / "helm" / "bgpadv" / "values.schema.json"
CONFIG_DESCRIPTION = (
    "bgpadv's configuration file, the ConfigMap the pods mount (every key: `bgpadv example-config`; "
    "this schema: `bgpadv check-config --schema`). The rules between keys and the files it names are checked by "
    "`bgpadv check-config`, not here."
)


def generated(current: dict[str, Any]) -> dict[str, Any]:
    """`current` (the checked-in values schema) with `config` and `$defs` taken from the configuration's schema."""
    sys.path.insert(0, str(ROOT))
    from bgpadv.config import json_schema

    config = dict(json_schema())
    defs = config.pop("$defs", {})
    for key in ("$schema", "$id", "title"):
        config.pop(key, None)
    config["description"] = CONFIG_DESCRIPTION
    out = {k: v for k, v in current.items() if k != "$defs"}
    out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    out["properties"] = {**current["properties"], "config": config}
    out["$defs"] = defs
    return out


def text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    current = json.loads(VALUES_SCHEMA.read_text())
    wanted = text(generated(current))
    if "--check" in argv:
        if VALUES_SCHEMA.read_text() != wanted:
            print(f"{VALUES_SCHEMA} is stale: run python3 scripts/helm-values-schema.py", file=sys.stderr)
            return 1
        return 0
    VALUES_SCHEMA.write_text(wanted)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
