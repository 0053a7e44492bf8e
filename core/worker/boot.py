"""Entry script of the worker, started by path in the selected interpreter.

It makes the app's own ``deploylens`` packages importable there (the user's training env need not
have DeployLens installed), then hands over to ``runtime.main``. Kept to Python 3.6 syntax so even
an old interpreter can say hello and let the app explain what is wrong.
"""

import json
import os
import sys

MIN_PYTHON = (3, 9)


def _say_too_old():
    message = {
        "type": "hello",
        "protocol": None,
        "python": {
            "version": ".".join(str(part) for part in sys.version_info[:3]),
            "version_info": list(sys.version_info[:3]),
            "executable": sys.executable,
        },
        "packages": {},
    }
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _map_packages():
    """Register ``deploylens.<room>`` packages from the folders the app passed in the env."""
    import importlib.util
    import types

    mapping = json.loads(os.environ.get("DEPLOYLENS_PACKAGES", "{}"))
    if "deploylens" not in sys.modules:
        root = types.ModuleType("deploylens")
        root.__path__ = []
        sys.modules["deploylens"] = root
    for name, folder in sorted(mapping.items()):
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder]
        )
        if spec is None or spec.loader is None:  # a folder without its package: a bad install
            raise ImportError(f"cannot map {name} to {folder}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        setattr(sys.modules["deploylens"], name.rsplit(".", 1)[1], module)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    # The script's folder must not shadow the user's modules (it holds protocol.py, probe.py...).
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    if sys.version_info < MIN_PYTHON:
        _say_too_old()
        return 3
    _map_packages()
    from deploylens.core.worker.runtime import main as runtime_main

    return runtime_main()


if __name__ == "__main__":
    sys.exit(main())
