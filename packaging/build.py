"""``make package``: the one-folder bundle, its tarball and the Debian package, from the project's
own files only.

    python packaging/build.py [--out dist]

1. A wheel of the project is unpacked into a staging folder (PyInstaller cannot follow an
   editable install's import hook), and PyInstaller builds ``deploylens.spec`` from it.
2. ``dist/deploylens-VERSION-linux-x86_64.tar.gz``: the bundle folder with a launcher script.
3. ``dist/deploylens_VERSION_amd64.deb``: the bundle under /opt/deploylens, ``deploylens`` on PATH,
   a desktop entry, an icon and MIME types, and ``Depends`` on the few system libraries a bare
   Debian 12 lacks (``packaging/smoke.sh`` proves them on a bare root).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HERE = REPO / "packaging"
# What the bundle needs from a bare Debian 12 (bookworm): GL/EGL for Qt's offscreen and xcb
# platforms, fonts (without them text renders as boxes), and the X11 client libraries the xcb
# platform loads for a real window.
DEPENDS = (
    "libgl1, libegl1, libfontconfig1, fontconfig-config, fonts-dejavu-core, libxkbcommon0, "
    "libdbus-1-3, libglib2.0-0, libxcb-cursor0, libxcb-icccm4, libxcb-keysyms1, libxcb-image0, "
    "libxcb-render-util0, libxcb-shape0, libxcb-xkb1, libxkbcommon-x11-0"
)


def version() -> str:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def run(*argv: str, **kwargs: object) -> None:
    subprocess.run(argv, check=True, **kwargs)  # type: ignore[call-overload]


def bundle(out: Path, work: Path) -> Path:
    stage = work / "stage"
    wheels = work / "wheel"
    run(sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation",
        "-q", "-w", str(wheels))  # fmt: skip
    (wheel,) = wheels.glob("deploylens-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(stage)
    env = {**os.environ, "DEPLOYLENS_REPO": str(REPO), "DEPLOYLENS_STAGE": str(stage)}
    run(sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
        "--distpath", str(work / "dist"), "--workpath", str(work / "build"),
        str(HERE / "deploylens.spec"), env=env)  # fmt: skip
    folder = work / "dist" / "deploylens"
    launcher = folder / "deploylens.sh"
    launcher.write_text(
        "#!/bin/sh\n# Start DeployLens from wherever this folder was unpacked.\n"
        'exec "$(dirname "$(readlink -f "$0")")/deploylens" "$@"\n'
    )
    launcher.chmod(0o755)
    return folder


def tarball(folder: Path, out: Path) -> Path:
    path = out / f"deploylens-{version()}-linux-x86_64.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        archive.add(folder, arcname=f"deploylens-{version()}")
    return path


def debian(folder: Path, out: Path, work: Path) -> Path:
    root = work / "deb"
    opt = root / "opt" / "deploylens"
    shutil.copytree(folder, opt, symlinks=True)
    (root / "usr" / "bin").mkdir(parents=True)
    os.symlink("/opt/deploylens/deploylens", root / "usr" / "bin" / "deploylens")
    shares = {
        "applications/deploylens.desktop": HERE / "deploylens.desktop",
        "mime/packages/deploylens.xml": HERE / "deploylens-mime.xml",
        "icons/hicolor/scalable/apps/deploylens.svg": HERE / "deploylens.svg",
    }
    for target, source in shares.items():
        path = root / "usr" / "share" / target
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, path)
    size_kb = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) // 1024
    control = root / "DEBIAN" / "control"
    control.parent.mkdir()
    control.write_text(
        f"Package: deploylens\nVersion: {version()}\nArchitecture: amd64\n"
        f"Maintainer: DeployLens developers <deploylens@localhost>\n"
        f"Installed-Size: {size_kb}\nDepends: {DEPENDS}\nSection: science\nPriority: optional\n"
        "Description: workbench for deploying deep-learning models\n"
        " PyTorch to ONNX to TensorRT: graph, op support, export diagnosis, validation, engine\n"
        " build settings and profiler timelines. Jobs that need PyTorch or TensorRT run in a\n"
        " worker interpreter chosen in Preferences.\n"
    )
    postinst = root / "DEBIAN" / "postinst"
    postinst.write_text(
        "#!/bin/sh\nset -e\n"
        "command -v update-mime-database >/dev/null"
        " && update-mime-database /usr/share/mime || true\n"
        "command -v update-desktop-database >/dev/null && update-desktop-database -q || true\n"
    )
    postinst.chmod(0o755)
    path = out / f"deploylens_{version()}_amd64.deb"
    run("dpkg-deb", "--root-owner-group", "-Zxz", "--build", str(root), str(path),
        stdout=subprocess.DEVNULL)  # fmt: skip
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist")
    parser.add_argument("--keep", type=Path, help="also keep the bundle folder here")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="deploylens-package-") as scratch:
        work = Path(scratch)
        folder = bundle(args.out, work)
        archive = tarball(folder, args.out)
        deb = debian(folder, args.out, work)
        if args.keep:
            shutil.rmtree(args.keep, ignore_errors=True)
            shutil.copytree(folder, args.keep, symlinks=True)
    for path in (archive, deb):
        print(f"{path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
