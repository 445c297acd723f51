"""Developer tools: schema generation and the traceability report."""
