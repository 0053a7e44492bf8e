"""Graph IR, module hierarchy, layered layout and overlays: everything the graph view shows,
computed without Qt so the CLI renders and measures the same thing."""
