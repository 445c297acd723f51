"""Adapters: the filesystem, processes and clocks behind the application's ports, plus shipped fakes."""
