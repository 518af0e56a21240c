"""Stand-in for mlir-air programming_examples/llms/shared (tests only)."""
