"""Op support panel: the matrix by opset and backend, and what blocks the open model."""
