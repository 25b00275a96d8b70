"""One-off probes, each with the question it answered (its README) and where its results are."""
