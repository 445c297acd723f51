"""What `li` does at start-up to load less, each measure in a module of its own; README.md here
says what each does and how it was measured."""
