"""ExaBGP's privilege settings as bgpadv renders them (`daemon_user`, `exabgp_environment`).

The rule: ExaBGP is told to run as the account it already runs as, so its privilege check switches nothing and
passes for root (the lab), for the image's UID 65532 and for an arbitrary UID with GID 0 that the image's entry
point gives a passwd entry (OpenShift); `daemon.drop` stays false. ExaBGP's own check (`Daemon.drop_privileges`)
is run as non-root accounts, and ExaBGP itself as 1000720000:0, inside the image by tests/image/test_image.py
(this machine's Python lives under /root, out of a non-root process's reach).
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from bgpadv.config import parse
from bgpadv.speaker.exabgp_config import daemon_user, exabgp_environment

RAW = {"localASN": 64513, "peers": [{"address": "192.0.2.1", "asn": 64512}]}
UNKNOWN_UID = 1000720000  # OpenShift's kind of UID: no passwd entry


def test_root_is_told_to_stay_root() -> None:
    assert daemon_user(0) == "root"


def test_a_uid_with_a_passwd_entry_is_told_its_own_name() -> None:
    assert daemon_user(65534) == pwd.getpwuid(65534).pw_name == "nobody"


def test_a_uid_without_a_passwd_entry_gets_an_account_exabgp_can_look_up() -> None:
    with pytest.raises(KeyError):
        pwd.getpwuid(UNKNOWN_UID)
    assert daemon_user(UNKNOWN_UID) == "nobody"


def test_the_environment_names_the_current_account_and_never_drops(tmp_path: Path) -> None:
    env = exabgp_environment(parse(RAW), tmp_path)
    assert env["exabgp.daemon.user"] == pwd.getpwuid(os.getuid()).pw_name
    assert env["exabgp.daemon.drop"] == "false"
    assert env["exabgp.daemon.pid"] == str(tmp_path / "exabgp.pid")
