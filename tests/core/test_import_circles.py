"""No two modules of the package reach each other through imports (function-level ones
included): a helper that two modules need lives below both. Six such circles had grown, each
kept alive by an import inside a function."""

from __future__ import annotations

import grimp


def test_no_module_reaches_a_module_that_reaches_it() -> None:
    graph = grimp.build_graph(
        "deploylens.core", "deploylens.gui", "deploylens.plugins", include_external_packages=False
    )
    circles = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if imported != module and graph.find_shortest_chain(importer=imported, imported=module):
                circles.add(tuple(sorted((module, imported))))
    assert not circles, sorted(circles)
