"""DeployLens GUI: PySide6 + pyqtgraph views over ``deploylens.core``."""
