#!/usr/bin/env bash
# Smoke test of the Debian package on a bare Debian 12 root (run as root: debootstrap, chroot).
#
#   packaging/smoke.sh dist/deploylens_VERSION_amd64.deb [VENV_PYTHON]
#
# apt installs the .deb (so its Depends are real), then, inside the root and headless:
# --version, inspect and support on a sample (support starts the bundle's own worker), trace on a
# Kineto trace made here, and an offscreen screenshot of the main window with a model open whose
# text is checked for real glyphs against the same render from the venv (VENV_PYTHON).
set -euo pipefail
deb=$(readlink -f "$1")
python=${2:-.venv/bin/python}
repo=$(cd "$(dirname "$0")/.." && pwd)
root=$(mktemp -d /tmp/deploylens-smoke-XXXXXX)
cleanup() {
	for m in proc dev/pts dev; do umount -l "$root/$m" 2>/dev/null || true; done
	rm -rf "$root"
}
trap cleanup EXIT
step() { printf '\n--- smoke: %s\n' "$1"; }

step "bare Debian 12 root (debootstrap --variant=minbase bookworm)"
command -v debootstrap >/dev/null || apt-get -o DPkg::Lock::Timeout=600 install -y -qq debootstrap >/dev/null
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$root.debootstrap.log" 2>&1 ||
	{ tail -20 "$root.debootstrap.log"; exit 1; }
rm -f "$root.debootstrap.log"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mkdir -p "$root/smoke"
cp "$deb" "$root/smoke/deploylens.deb"
cp "$repo/resources/samples/small_cnn.dynamo.onnx" "$root/smoke/"
"$python" - "$root/smoke/model.pt.trace.json" <<'PY'
import sys, torch
from torch.profiler import ProfilerActivity, profile
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU())
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for _ in range(3):
        model(torch.rand(1, 3, 32, 32))
prof.export_chrome_trace(sys.argv[1])
PY
inside() { chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	QT_QPA_PLATFORM=offscreen LANG=C.UTF-8 "$@"; }

step "apt install the .deb (Depends resolved from Debian's archive)"
inside apt-get update -qq
inside env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	/smoke/deploylens.deb >/dev/null
inside test -x /usr/bin/deploylens
inside test -f /usr/share/applications/deploylens.desktop
inside test -f /usr/share/mime/packages/deploylens.xml

step "deploylens --version, inspect, support (the bundle's own worker), trace"
inside deploylens --version
inside deploylens inspect /smoke/small_cnn.dynamo.onnx | head -4
inside deploylens support /smoke/small_cnn.dynamo.onnx --target ort-cpu
inside deploylens trace /smoke/model.pt.trace.json --top 3 | head -6
inside deploylens env > "$root/smoke/env.txt"  # exit 0: the bundle lacks none of its needs
grep -q "DeployLens .* (packaged bundle)" "$root/smoke/env.txt"
grep -q "^- torch: not installed" "$root/smoke/env.txt"  # torch's stray dist-info is not torch
grep -q "^- msgspec: [0-9]" "$root/smoke/env.txt"

step "offscreen screenshot, glyphs checked against the venv's render"
inside deploylens screenshot /smoke/small_cnn.dynamo.onnx --out /smoke/window.png --size 1400x860
mkdir -p "$repo/out/smoke"
cp "$root/smoke/window.png" "$repo/out/smoke/bundle.png"
ln -sfn "$root/smoke" /tmp/deploylens-smoke-model  # the same model path as inside the root
QT_QPA_PLATFORM=offscreen "$python" -m deploylens.core.cli screenshot \
	/tmp/deploylens-smoke-model/small_cnn.dynamo.onnx --out "$repo/out/smoke/venv.png" --size 1400x860
rm -f /tmp/deploylens-smoke-model
"$python" "$repo/packaging/compare_render.py" "$repo/out/smoke/bundle.png" "$repo/out/smoke/venv.png"
step "passed"
