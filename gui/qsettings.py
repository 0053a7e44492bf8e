"""The GUI's QSettings (window layout, recent files) in DeployLens's own config folder."""

from __future__ import annotations

from PySide6.QtCore import QSettings

from deploylens.core.settings import config_dir

RECENT_LIMIT = 10


def gui_settings() -> QSettings:
    return QSettings(str(config_dir() / "gui.ini"), QSettings.Format.IniFormat)


def recent_files() -> list[str]:
    value = gui_settings().value("recent_files", [])
    if isinstance(value, str):
        return [value]
    items = value if isinstance(value, list | tuple) else [value] if value else []
    return [str(item) for item in items]


def remember_recent(path: str) -> list[str]:
    items = [path, *[item for item in recent_files() if item != path]][:RECENT_LIMIT]
    settings = gui_settings()
    settings.setValue("recent_files", items)
    settings.sync()
    return items
