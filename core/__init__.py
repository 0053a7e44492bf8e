"""DeployLens core: the Qt-free library that computes everything the GUI and CLI show."""

__version__ = "0.1.0"
