"""The lab's harness: registry, workers, checks, timing, results, CLI. Imports no GPU library."""
