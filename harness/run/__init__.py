"""Running a comparison: the registry turns the backend and problem folders into implementations
and cases; the runner plans the jobs, streams each record to results.jsonl and, after the timed
work, runs the compile-time processes and the cross-check; supervise runs every job in worker
processes with deadlines (a crash or a hang costs one case); the worker, in its own process,
loads one backend variant, checks each case on its device and times the bench cases."""
