"""Graph view: canvas, properties, search, overlays and breadcrumbs over ``core/graph``."""
