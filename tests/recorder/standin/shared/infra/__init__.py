"""Stand-in for mlir-air shared.infra (tests only)."""
