"""No two modules of the package reach each other through imports (function-level ones
included): a helper that two modules need lives below both. Six such circles had grown, each
kept alive by an import inside a function.

Imports under ``if TYPE_CHECKING:`` are left out: they never run, so they cannot make a
circle at import time. They are how a request names its result class for mypy
(``SensitivityRequest(Request["Report"])``) while the result's module, which reads the request,
is imported only by the job that runs it."""

from __future__ import annotations

import grimp


def test_no_module_reaches_a_module_that_reaches_it() -> None:
    graph = grimp.build_graph(
        "deploylens.core",
        "deploylens.gui",
        "deploylens.plugins",
        include_external_packages=False,
        exclude_type_checking_imports=True,
    )
    circles = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if imported != module and graph.find_shortest_chain(importer=imported, imported=module):
                circles.add(tuple(sorted((module, imported))))
    assert not circles, sorted(circles)


def test_the_circles_left_out_are_requests_naming_their_results() -> None:
    """What the first test leaves out is only this: a type-only import that closes a circle is
    a request module naming its job's result (nothing else hides a circle behind
    ``TYPE_CHECKING``)."""
    full = grimp.build_graph("deploylens.core", include_external_packages=False)
    runtime = grimp.build_graph(
        "deploylens.core", include_external_packages=False, exclude_type_checking_imports=True
    )
    closing = sorted(
        (importer, imported)
        for importer in full.modules
        for imported in full.find_modules_directly_imported_by(importer)
        if imported not in runtime.find_modules_directly_imported_by(importer)
        and full.find_shortest_chain(importer=imported, imported=importer)
    )
    assert all(importer.endswith(".request") for importer, _ in closing), closing
