"""setup.cfg ships every package of the tree: a wheel (not only an editable install) has them."""

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_directory_is_listed_in_setup_cfg():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    mapped = {}  # package name -> directory, from package_dir
    for line in cfg["options"]["package_dir"].strip().splitlines():
        name, _, where = (part.strip() for part in line.partition("="))
        mapped[name] = ROOT / where
    found = set()
    for init in (ROOT / "convexmetric").rglob("__init__.py"):
        found.add(".".join(init.parent.relative_to(ROOT).parts))
    for name, where in mapped.items():
        for init in where.rglob("__init__.py"):
            found.add(".".join([name, *init.parent.relative_to(where).parts]))
    assert found - listed == set(), "packages missing from setup.cfg"
    assert listed - found == set(), "setup.cfg lists packages that do not exist"
