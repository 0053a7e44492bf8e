# Two commands for a fresh Debian/Ubuntu machine (README): `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SUDO_IF_NEEDED := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
OUT    ?= out/demo

# Qt needs these system libraries (offscreen and real X11 windows); xvfb for the window test;
# graphviz is the layout-quality reference in bench/graph_layout.py; the remote-worker tests start
# OpenSSH's server on a loopback port (it is not started as a service); gcc builds the hostile
# libraries the security tests load (a .pt2 carrying native code, a plugin).
SYSTEM_PACKAGES := libgl1 libegl1 libxkbcommon0 libfontconfig1 libdbus-1-3 libglib2.0-0 \
	libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 \
	libxcb-shape0 libxcb-xkb1 libxkbcommon-x11-0 xvfb xauth fonts-dejavu-core graphviz \
	openssh-client openssh-server procps gcc

.PHONY: gpu-wheels gpu-check gpu-check-dry system install demo test test-slow lint bench clean package smoke screenshots

system:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		if ! command -v apt-get >/dev/null; then echo "install these system packages: $$missing"; exit 1; fi; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		echo "installing system packages: $$missing"; \
		$$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq $$missing >/dev/null; \
	fi

$(BIN)/deploylens: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@echo "installing DeployLens with torch, ONNX Runtime, TensorRT-RTX, Ray and the test tools into $(VENV): about 7 GB, 3-6 minutes; a line every 15 s says how far it is"
	@$(BIN)/python -m pip install --progress-bar off -e ".[full,dev,trt,cluster]" > $(VENV)/pip.log 2>&1 & pip=$$!; \
	while kill -0 $$pip 2>/dev/null; do sleep 15; echo "  … $$(grep -c '^Collecting' $(VENV)/pip.log) packages resolved, $$(du -sm $(VENV) | cut -f1) MB in $(VENV)"; done; \
	wait $$pip || { tail -30 $(VENV)/pip.log; echo "pip failed: $(VENV)/pip.log has its whole output"; exit 1; }
	touch $@

install: system $(BIN)/deploylens

demo: install
	$(BIN)/deploylens demo --out $(OUT)

# The core's tests run once, with Qt made unimportable (core must not need it); the rest offscreen.
# TensorRT-RTX is installed by .[trt]: its real-library tests must run, never skip. Two xdist
# workers, a test module per worker (its module fixtures — an sshd, a worker — stay one).
# Whole corpora and the heaviest model are the slower tier: make test-slow (.ci/run runs it).
TEST_JOBS ?= 2
PYTEST_CORE := DEPLOYLENS_REQUIRE_TRT_RTX=1 DEPLOYLENS_REQUIRE_SSHD=1 DEPLOYLENS_REQUIRE_RAY=1 DEPLOYLENS_BLOCK_QT=1 $(BIN)/python -m pytest -q -p no:pytest-qt -n $(TEST_JOBS) --dist loadfile
PYTEST_GUI := DEPLOYLENS_REQUIRE_TRT_RTX=1 DEPLOYLENS_REQUIRE_SSHD=1 QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -n $(TEST_JOBS) --dist loadfile
# Both stages always run (a failing core test no longer hides the GUI's), then one report.
test: install
	@started=$$(date +%s); core=passed; gui=passed; \
	$(PYTEST_CORE) -m "not slow_tier" tests/core || core=FAILED; \
	$(PYTEST_GUI) -m "not slow_tier" tests --ignore=tests/core || gui=FAILED; \
	echo "make test: core $$core, GUI $$gui, in $$(( $$(date +%s) - started )) s"; \
	[ $$core = passed ] && [ $$gui = passed ]

test-slow: install
	$(PYTEST_CORE) -m slow_tier tests/core

# The screenshot suite under Xvfb; its 1920x1080 set is what docs/screenshots/ shows (README).
screenshots: install
	rm -rf out/screens
	xvfb-run -a -s "-screen 0 3840x2160x24" env QT_QPA_PLATFORM=xcb DEPLOYLENS_SCREENSHOT_DIR=out/screens \
		$(BIN)/python -m pytest -q -m xvfb tests/gui/test_screenshots.py -k "not hidpi"
	mkdir -p docs/screenshots
	$(BIN)/python -c "import sys, PIL.Image as I; [I.open(f).convert('RGB').quantize(256, dither=I.Dither.NONE).save('docs/screenshots/' + f.rsplit('/', 1)[1], optimize=True) for f in sys.argv[1:]]" out/screens/1920x1080/*.png

# The GPU check (bench/gpu_check.py): `make gpu-wheels` here fetches what the device image lacks
# (Python 3.12 wheels, carried in the call with build/gpu-wheels); `make gpu-check` runs on the
# device with its own python3 (no venv, no registry); `make gpu-check-dry` says what it would do.
GPU_PY ?= python3
GPU_WHEELS := msgspec tomli-w platformdirs nvtx
gpu-wheels: install
	$(BIN)/python -m pip download --only-binary=:all: --python-version 3.12 --no-deps \
		--platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
		-d build/gpu-wheels $(GPU_WHEELS)

gpu-check:
	$(GPU_PY) -m pip install -q --no-index --find-links build/gpu-wheels $(GPU_WHEELS)
	$(GPU_PY) -m pip install -q --no-deps --no-build-isolation -e .
	$(GPU_PY) bench/gpu_check.py --out $${OUT:-out/gpu-check} --work /tmp/deploylens-gpu-check

gpu-check-dry: install
	$(BIN)/python bench/gpu_check.py --dry-run

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python .ci/mypy

bench: install
	$(BIN)/python bench/startup.py --json bench/results/startup.json
	$(BIN)/python bench/gui_open.py --json bench/results/gui_open.json
	$(BIN)/python bench/graph_layout.py --json bench/results/graph_layout.json
	$(BIN)/python bench/graph_readability.py --json bench/results/graph_readability.json
	$(BIN)/python bench/support_matrix.py --json bench/results/support_matrix.json
	$(BIN)/python bench/support_crosscheck.py --json bench/results/support_crosscheck.json
	$(BIN)/python bench/export_overhead.py --json bench/results/export_overhead.json
	$(BIN)/python bench/validate.py --json bench/results/validate.json
	$(BIN)/python bench/calibrate.py --json bench/results/calibrate.json
	$(BIN)/python bench/sensitivity.py --json bench/results/sensitivity.json
	$(BIN)/python bench/surgery.py --json bench/results/surgery.json
	$(BIN)/python bench/remote.py --json bench/results/remote.json
	$(BIN)/python bench/timeline.py --json bench/results/timeline.json
	$(BIN)/python bench/kernel_names.py --json bench/results/kernel_names.json
	$(BIN)/python bench/trace_chunks.py --json bench/results/trace_chunks.json
	$(BIN)/python bench/command_cost.py --json bench/results/command_cost.json
	$(BIN)/python bench/instructions.py --json bench/results/instructions.json
	$(BIN)/python bench/trt_build.py --json bench/results/trt_build.json
	$(BIN)/python bench/trt_crosscheck.py --json bench/results/trt_crosscheck.json
	$(BIN)/python bench/package.py --json bench/results/package.json

# Workstation installers (packaging/README.md): the one-folder bundle's tarball and a .deb in dist/.
package: install
	$(BIN)/python packaging/build.py --out dist

# The .deb on a bare Debian 12 root (debootstrap + chroot: needs root), headless checks inside.
smoke: package
	$(SUDO_IF_NEEDED) packaging/smoke.sh dist/deploylens_$$($(BIN)/python -c "import tomllib; print(tomllib.load(open('pyproject.toml','rb'))['project']['version'])")_amd64.deb $(BIN)/python

clean:
	rm -rf $(VENV) out build dist *.egg-info
