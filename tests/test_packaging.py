"""setup.cfg ships every package of the tree: a wheel (not only an editable install) has them."""

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_directory_is_listed_in_setup_cfg():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    assert "package_dir" not in cfg["options"], "every package lives under convexmetric/"
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "convexmetric").rglob("__init__.py")
    }
    assert found - listed == set(), "packages missing from setup.cfg"
    assert listed - found == set(), "setup.cfg lists packages that do not exist"
