"""Install the top-level folders as ``deploylens.*``.

The package list is computed, never hand-written: a hand-written list silently drops new
subpackages from the wheel (DESIGN.md §2).
"""

from setuptools import find_packages, setup

INSTALLED_FOLDERS = ("core", "gui", "plugins", "resources")


def _packages_and_dirs() -> tuple[list[str], dict[str, str]]:
    packages: list[str] = []
    package_dir: dict[str, str] = {}
    for folder in INSTALLED_FOLDERS:
        root = f"deploylens.{folder}"
        packages.append(root)
        package_dir[root] = folder
        for sub in find_packages(where=folder):
            packages.append(f"{root}.{sub}")
            package_dir[f"{root}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"
    return packages, package_dir


PACKAGES, PACKAGE_DIR = _packages_and_dirs()

setup(packages=PACKAGES, package_dir=PACKAGE_DIR)
